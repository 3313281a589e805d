//! `register`, `bond`, `unbond`, `withdraw`: the provider's registration and stake, as
//! signed transactions from the configured key.

use anyhow::Result;
use clap::Args;
use gpuchain_agent_kit::args::{AmountArgs, BasicArgs};
use gpuchain_agent_kit::cli::{print_tx, Output};
use gpuchain_staking::{
    MsgBondProvider, MsgDeregisterProvider, MsgRegisterProvider, MsgUnbondProvider,
    MsgUpdateProvider, StakingMsg,
};
use gpuchain_tx::Msg;

use crate::attrs::{gpu_refusal, provider_attrs, DriverPolicy};
use crate::chain::Chain;
use crate::config::Config;

/// Arguments of `register`.
pub(crate) type RegisterArgs = gpuchain_agent_kit::args::RegisterArgs<Config, DryRun>;

/// Arguments of `withdraw`.
pub(crate) type WithdrawArgs = BasicArgs<Config>;

/// The provider's own option of `register`.
#[derive(Debug, Args)]
pub(crate) struct DryRun {
    /// Print the attributes that would be registered, send nothing.
    #[arg(long)]
    dry_run: bool,
}

/// The provider's stake message `msg`, sent from the configured key and printed as `what`.
async fn send(config: &Config, msg: StakingMsg, output: Output, what: &str) -> Result<()> {
    let chain = Chain::open(&config.chain, &config.key)?;
    print_tx(chain.submit(Msg::Staking(msg)).await?, output, what)
}

pub(super) async fn register(a: RegisterArgs) -> Result<()> {
    let config = a.config.load()?;
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
    if a.options.dry_run {
        println!("{}", serde_json::to_string_pretty(&attrs)?);
        return Ok(());
    }
    let chain = Chain::open(&config.chain, &config.key)?;
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

pub(super) async fn bond(a: AmountArgs<Config>) -> Result<()> {
    let msg = StakingMsg::BondProvider(MsgBondProvider { amount: a.amount });
    send(&a.config.load()?, msg, a.output, "bonded").await
}

pub(super) async fn unbond(a: AmountArgs<Config>) -> Result<()> {
    let msg = StakingMsg::UnbondProvider(MsgUnbondProvider { amount: a.amount });
    send(&a.config.load()?, msg, a.output, "unbonding started").await
}

pub(super) async fn withdraw(a: WithdrawArgs) -> Result<()> {
    let msg = StakingMsg::DeregisterProvider(MsgDeregisterProvider {});
    let what = "deregistered; the bond returns after the unbonding period";
    send(&a.config.load()?, msg, a.output, what).await
}
