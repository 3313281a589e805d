//! Harness for end-to-end tests: builds a localnet in a temp dir on free 127.0.0.1 ports,
//! runs real `gpuchaind` and CometBFT processes, and kills them and removes the dir on drop.

mod agent;
mod cli_json;
pub mod demo;
mod market;
mod market_builder;
mod net;
mod params;
mod ports;
mod provider;
pub mod serving;
pub mod serving_market;
mod verifier;

pub use cli_json::{event_attr, run_json, tx_fee, NodeCli};
pub use market::{
    amount, assert_supply_moved_only_by_burns, blob, cpu_provider_attrs, digits_input, digits_job,
    digits_job_of, digits_mlp_weights, open_order, order_leases, receive, routed_order,
    slash_records, slashes_of, supply, unfetched_digits_order, wait_for,
};
pub use market_builder::{print_result, terminate_agents, Market, ProviderRole};
pub use net::{cli, example_path, gpuchaind_path, TestNet};
pub use params::{
    audit_every_result, disputes_only, no_audits, providers_only, short_reveal_and_challenge,
    verdict_windows,
};
pub use ports::free_port_block;
pub use provider::{AgentSpec, BlobHost, ProviderAgent};
pub use verifier::{write_provider_config, VerifierAgent, VerifierSpec};
