//! Harness for end-to-end tests: builds a localnet in a temp dir on free 127.0.0.1 ports,
//! runs real `gpuchaind` and CometBFT processes, and kills them and removes the dir on drop.

mod cli_json;
pub mod demo;
mod market;
mod market_builder;
mod net;
mod ports;
mod provider;
pub mod serving;
pub mod serving_market;
mod verifier;

pub use cli_json::{event_attr, run_json, tx_fee, NodeCli};
pub use market::{
    amount, blob, cpu_provider_attrs, digits_input, digits_job, order_leases, receive,
    routed_order, slash_records, supply, unfetched_digits_order, wait_for,
};
pub use market_builder::{disputes_only, Market};
pub use net::{cli, example_path, gpuchaind_path, TestNet};
pub use ports::free_port_block;
pub use provider::{
    provider_cli, provider_path, register_provider, AgentSpec, BlobHost, ProviderAgent,
};
pub use verifier::{
    register_verifier, verifier_cli, verifier_path, write_provider_config, VerifierAgent,
    VerifierSpec,
};
