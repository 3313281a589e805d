//! `query staking …` and `query slashing …`: the CLI fetches the module's state under its
//! prefix and reads it with the module's own typed view traits.

use anyhow::Result;
use gpuchain_client::ChainClient;
use gpuchain_slashing::SlashingRead;
use gpuchain_staking::{ProviderFilter, StakingRead};
use gpuchain_types::Address;

use super::Output;

#[derive(clap::Subcommand)]
pub(crate) enum StakingQuery {
    /// Every validator with bond, power and jail state.
    Validators,
    /// Registered providers, optionally filtered.
    Providers {
        /// Only this GPU model.
        #[arg(long)]
        gpu_model: Option<String>,
        /// Only providers with at least this much VRAM (MiB).
        #[arg(long)]
        min_vram_mib: Option<u64>,
        /// Only this region.
        #[arg(long)]
        region: Option<String>,
    },
    /// Unbonding entries of an account.
    Unbonding {
        /// Owner address.
        address: Address,
    },
}

#[derive(clap::Subcommand)]
pub(crate) enum SlashingQuery {
    /// Slash records, optionally of one validator operator or provider.
    Records {
        /// Only this subject.
        address: Option<Address>,
    },
}

fn lines<T: serde::Serialize>(items: &[T]) -> String {
    items
        .iter()
        .map(|i| serde_json::to_string(i).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) async fn staking(client: &ChainClient, cmd: &StakingQuery, out: &Output) -> Result<()> {
    let state = client
        .snapshot(gpuchain_staking::state_key::module_prefix())
        .await?;
    match cmd {
        StakingQuery::Validators => {
            let params = state.staking_params();
            let vals = state.validators();
            out.print(&vals, || {
                vals.iter()
                    .map(|v| {
                        format!(
                            "{}\t{}\tbonded {} ugpu\tpower {}{}{}",
                            v.moniker,
                            v.operator,
                            v.bonded,
                            v.power(params.power_reduction),
                            if v.jailed {
                                format!("\tjailed until {}", v.jailed_until)
                            } else {
                                String::new()
                            },
                            if v.tombstoned { "\ttombstoned" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        StakingQuery::Providers {
            gpu_model,
            min_vram_mib,
            region,
        } => {
            let filter = ProviderFilter {
                gpu_model: gpu_model.clone(),
                min_vram_mib: *min_vram_mib,
                region: region.clone(),
                class: None,
            };
            let providers = state.providers_matching(&filter);
            out.print(&providers, || lines(&providers));
        }
        StakingQuery::Unbonding { address } => {
            let entries = state.unbonding_entries_of(address);
            out.print(&entries, || lines(&entries));
        }
    }
    Ok(())
}

pub(crate) async fn slashing(
    client: &ChainClient,
    cmd: &SlashingQuery,
    out: &Output,
) -> Result<()> {
    let state = client
        .snapshot(gpuchain_slashing::state_key::module_prefix())
        .await?;
    let SlashingQuery::Records { address } = cmd;
    let records = match address {
        Some(a) => state.slash_records_of(a),
        None => state.slash_records(),
    };
    out.print(&records, || lines(&records));
    Ok(())
}
