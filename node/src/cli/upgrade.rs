//! `tx upgrade …` and `query upgrade`: validators signal an upgrade plan; anyone sees the
//! scheduled plan, the standing signals with the power behind them, and what ran.

use anyhow::Result;
use gpuchain_client::ChainClient;
use gpuchain_staking::StakingRead;
use gpuchain_tx::Msg;
use gpuchain_upgrade::{
    AppliedUpgrade, MsgSignalUpgrade, MsgWithdrawSignal, Plan, UpgradeMsg, UpgradeRead,
};
use serde::Serialize;

use super::Output;

#[derive(clap::Subcommand)]
pub(crate) enum UpgradeTx {
    /// As a validator's operator, vote to run upgrade NAME at HEIGHT; more than two thirds
    /// of the active power on one plan schedules it.
    Signal {
        /// Operator key of an active validator.
        from: String,
        /// Name the new release registers its migration under.
        #[arg(long)]
        name: String,
        /// First height the new release executes (at least 10 blocks ahead).
        #[arg(long)]
        height: u64,
    },
    /// Take back your signal.
    Withdraw {
        /// Operator key.
        from: String,
    },
}

/// The signer's key name and the message.
pub(crate) fn upgrade_msg(cmd: &UpgradeTx) -> (&str, Msg) {
    match cmd {
        UpgradeTx::Signal { from, name, height } => (
            from,
            Msg::Upgrade(UpgradeMsg::Signal(MsgSignalUpgrade {
                name: name.clone(),
                height: *height,
            })),
        ),
        UpgradeTx::Withdraw { from } => (
            from,
            Msg::Upgrade(UpgradeMsg::Withdraw(MsgWithdrawSignal {})),
        ),
    }
}

#[derive(Serialize)]
struct Signal {
    operator: String,
    power: u64,
    name: String,
    height: u64,
}

#[derive(Serialize)]
struct Status {
    plan: Option<Plan>,
    signals: Vec<Signal>,
    total_power: u64,
    applied: Vec<AppliedUpgrade>,
}

pub(crate) async fn query(client: &ChainClient, out: &Output) -> Result<()> {
    let (upgrade, staking) = tokio::try_join!(
        client.snapshot(gpuchain_upgrade::state_key::module_prefix()),
        client.snapshot(gpuchain_staking::state_key::active_prefix())
    )?;
    let active = staking.active_set();
    let signals = upgrade
        .upgrade_signals()
        .into_iter()
        .map(|(hex, plan)| {
            let validator = active.iter().find(|v| v.operator.to_hex() == hex);
            Signal {
                operator: validator.map_or(hex, |v| v.operator.to_string()),
                power: validator.map_or(0, |v| v.power),
                name: plan.name,
                height: plan.height,
            }
        })
        .collect();
    let status = Status {
        plan: upgrade.upgrade_plan(),
        signals,
        total_power: active.iter().fold(0u64, |s, v| s.saturating_add(v.power)),
        applied: upgrade.applied_upgrades(),
    };
    out.print(&status, || {
        let mut lines = vec![match &status.plan {
            Some(p) => format!("scheduled: {:?} at height {}", p.name, p.height),
            None => "scheduled: none".into(),
        }];
        for s in &status.signals {
            lines.push(format!(
                "signal: {} (power {} of {}) for {:?} at height {}",
                s.operator, s.power, status.total_power, s.name, s.height
            ));
        }
        for a in &status.applied {
            lines.push(format!("applied: {:?} at height {}", a.name, a.height));
        }
        lines.join("\n")
    });
    Ok(())
}
