//! `register`, `bond`, `unbond`: the verifier's bond, as signed transactions from the
//! configured key.

use anyhow::Result;
use clap::Args;
use gpuchain_agent_kit::cli::print_tx;
use gpuchain_types::Amount;
use gpuchain_verify::{MsgBondVerifier, MsgRegisterVerifier, MsgUnbondVerifier, VerifyMsg};

use super::{ConfigArg, Output};
use crate::chain::Chain;
use crate::config::Config;

/// Arguments of `register`.
#[derive(Debug, Args)]
pub(crate) struct RegisterArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Bond, ugpu (default: `verifier.bond` from the config).
    #[arg(long)]
    bond: Option<Amount>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

/// Arguments of `bond` and `unbond`.
#[derive(Debug, Args)]
pub(crate) struct AmountArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// ugpu.
    amount: Amount,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

fn connect(config: &Config) -> Result<Chain> {
    Chain::connect(&config.chain.node, &config.key.home, &config.key.name)
}

pub(super) async fn register(a: RegisterArgs) -> Result<()> {
    let config = Config::load(&a.config.config)?;
    let chain = connect(&config)?;
    if let Some(v) = chain.me().await? {
        println!(
            "{} is already a verifier with {} ugpu bonded (use `bond` to add)",
            chain.address, v.bonded
        );
        return Ok(());
    }
    let bond = a.bond.unwrap_or(u128::from(config.verifier.bond));
    let msg = VerifyMsg::RegisterVerifier(MsgRegisterVerifier { bond });
    print_tx(chain.verify(msg).await?, a.output, "registered")
}

pub(super) async fn bond(a: AmountArgs) -> Result<()> {
    let chain = connect(&Config::load(&a.config.config)?)?;
    let msg = VerifyMsg::BondVerifier(MsgBondVerifier { amount: a.amount });
    print_tx(chain.verify(msg).await?, a.output, "bonded")
}

pub(super) async fn unbond(a: AmountArgs) -> Result<()> {
    let chain = connect(&Config::load(&a.config.config)?)?;
    let msg = VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount: a.amount });
    print_tx(chain.verify(msg).await?, a.output, "unbonding started")
}
