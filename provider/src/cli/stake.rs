//! `register`, `bond`, `unbond`, `withdraw`: the provider's registration and stake, as
//! signed transactions from the configured key.

use anyhow::Result;
use clap::Args;
use gpuchain_agent_kit::cli::print_tx;
use gpuchain_staking::{
    MsgBondProvider, MsgDeregisterProvider, MsgRegisterProvider, MsgUnbondProvider,
    MsgUpdateProvider, StakingMsg,
};
use gpuchain_tx::Msg;
use gpuchain_types::Amount;

use super::{ConfigArg, Output};
use crate::attrs::{gpu_refusal, provider_attrs, DriverPolicy};
use crate::chain::Chain;
use crate::config::Config;

/// Arguments of `register`.
#[derive(Debug, Args)]
pub(crate) struct RegisterArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Bond, ugpu (default: `provider.bond` from the config).
    #[arg(long)]
    bond: Option<Amount>,
    /// Print the attributes that would be registered, send nothing.
    #[arg(long)]
    dry_run: bool,
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

/// Arguments of `withdraw`.
#[derive(Debug, Args)]
pub(crate) struct WithdrawArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

fn connect(config: &Config) -> Result<Chain> {
    Chain::connect(&config.chain.node, &config.key.home, &config.key.name)
}

pub(super) async fn register(a: RegisterArgs) -> Result<()> {
    let config = Config::load(&a.config.config)?;
    let policy = DriverPolicy {
        min_driver_major: config.provider.min_driver_major,
        min_cuda_version: config.provider.min_cuda_version,
    };
    let report = gpuchain_compute::hardware::probe();
    if let Some(why) = gpu_refusal(&report, policy) {
        tracing::info!(reason = %why, "offering this machine as CPU-only");
    }
    let attrs = provider_attrs(
        &report,
        policy,
        &config.provider.region,
        &config.provider.endpoint_url,
    );
    if a.dry_run {
        println!("{}", serde_json::to_string_pretty(&attrs)?);
        return Ok(());
    }
    let chain = connect(&config)?;
    let msg = match chain.me().await? {
        Some(p) if p.attrs == attrs => {
            println!(
                "{} is already registered with these attributes",
                chain.address
            );
            return Ok(());
        }
        Some(_) => StakingMsg::UpdateProvider(MsgUpdateProvider { attrs }),
        None => StakingMsg::RegisterProvider(MsgRegisterProvider {
            attrs,
            bond: a.bond.unwrap_or(u128::from(config.provider.bond)),
        }),
    };
    let what = msg.name();
    print_tx(chain.submit(Msg::Staking(msg)).await?, a.output, what)
}

pub(super) async fn bond(a: AmountArgs) -> Result<()> {
    let chain = connect(&Config::load(&a.config.config)?)?;
    let msg = StakingMsg::BondProvider(MsgBondProvider { amount: a.amount });
    print_tx(chain.submit(Msg::Staking(msg)).await?, a.output, "bonded")
}

pub(super) async fn unbond(a: AmountArgs) -> Result<()> {
    let chain = connect(&Config::load(&a.config.config)?)?;
    let msg = StakingMsg::UnbondProvider(MsgUnbondProvider { amount: a.amount });
    print_tx(
        chain.submit(Msg::Staking(msg)).await?,
        a.output,
        "unbonding started",
    )
}

pub(super) async fn withdraw(a: WithdrawArgs) -> Result<()> {
    let chain = connect(&Config::load(&a.config.config)?)?;
    let msg = StakingMsg::DeregisterProvider(MsgDeregisterProvider {});
    print_tx(
        chain.submit(Msg::Staking(msg)).await?,
        a.output,
        "deregistered; the bond returns after the unbonding period",
    )
}
