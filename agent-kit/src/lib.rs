//! What every gpuchain agent is built from — the provider, the verifier and the agents to
//! come: the command-line skeleton ([`cli`]: log and output formats, the runtime, key
//! set-up, printing a transaction), the chain handle ([`chain`]: signing key, submissions
//! and the market reads every agent makes), the `[chain]` and `[key]` config sections
//! ([`config`]), the atomic JSON state file ([`state_file`]) and the Prometheus `/metrics`
//! server ([`metrics`]). An agent adds its own subcommands, config sections, state and
//! gauges on top.

pub mod chain;
pub mod cli;
pub mod config;
pub mod metrics;
pub mod run;
pub mod state_file;
