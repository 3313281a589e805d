//! What every gpuchain agent is built from — the provider, the verifier and the agents to
//! come: the command-line skeleton ([`cli`]: the program around the agent's subcommands, log
//! and output formats, the runtime, printing a transaction) and the arguments its
//! chain-facing subcommands share ([`args`]), the chain handle ([`chain`]: signing key,
//! submissions and the market reads every agent makes), the `[chain]` and `[key]` config
//! sections and what an agent's file must say of itself ([`config`]), the atomic JSON state
//! file ([`state_file`]), start-up ([`startup`]), the main loop ([`run`]) and the Prometheus
//! `/metrics` server ([`metrics`]). An agent adds its own subcommands, config sections, state
//! and metrics on top.

pub mod args;
pub mod chain;
pub mod cli;
pub mod config;
pub mod metrics;
pub mod run;
pub mod startup;
pub mod state_file;
