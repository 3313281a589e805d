use std::path::PathBuf;
use std::process::ExitCode;

use crate::localnet::{Localnet, LocalnetSpec};
use anyhow::Result;

use super::Output;

#[derive(clap::Args)]
pub(crate) struct TestnetArgs {
    /// Number of validators.
    #[arg(long, default_value_t = 4)]
    validators: usize,
    /// Directory to write (must be empty or absent).
    #[arg(long, default_value = ".localnet")]
    output_dir: PathBuf,
    /// Chain id.
    #[arg(long, default_value = "gpuchain-local")]
    chain_id: String,
    /// First port; node i uses base + 4i (p2p), +1 (rpc), +2 (abci), +3 (metrics).
    #[arg(long, default_value_t = 26600)]
    base_port: u16,
    /// Block interval (CometBFT timeout_commit) in milliseconds.
    #[arg(long, default_value_t = 300)]
    timeout_commit_ms: u64,
    /// Extra funded accounts, `name=ugpu` (repeatable). A `faucet` is always created.
    #[arg(long = "account")]
    accounts: Vec<String>,
}

pub(crate) fn run(args: &TestnetArgs, out: &Output) -> Result<ExitCode> {
    let mut spec = LocalnetSpec::new(&args.output_dir);
    spec.validators = args.validators;
    spec.chain_id = args.chain_id.clone();
    spec.base_port = args.base_port;
    spec.timeout_commit_ms = args.timeout_commit_ms;
    for account in &args.accounts {
        let (name, amount) = account
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--account takes name=ugpu, got {account:?}"))?;
        spec.accounts.push((name.to_string(), amount.parse()?));
    }
    let net = Localnet::build(&spec)?;
    out.print(&net, || {
        let mut lines = vec![format!(
            "localnet {} written to {}",
            net.chain_id,
            args.output_dir.display()
        )];
        for n in &net.nodes {
            lines.push(format!(
                "  {}: rpc {} abci {}",
                n.moniker, n.rpc_url, n.abci_addr
            ));
        }
        lines.push(format!("  keys: {}", net.keys_dir.display()));
        lines.join("\n")
    });
    Ok(ExitCode::SUCCESS)
}
