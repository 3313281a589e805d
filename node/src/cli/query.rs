use std::process::ExitCode;

use anyhow::Result;
use borsh::BorshDeserialize;
use gpuchain_client::ChainClient;
use gpuchain_types::{Address, Amount};
use serde_json::json;

use super::{Cli, Output};

#[derive(clap::Subcommand)]
pub(crate) enum QueryCmd {
    /// Bank queries.
    #[command(subcommand)]
    Bank(BankQuery),
    /// Validators, providers and unbonding entries.
    #[command(subcommand)]
    Staking(super::query_staking::StakingQuery),
    /// Slash records.
    #[command(subcommand)]
    Slashing(super::query_staking::SlashingQuery),
    /// Orders, bids, leases and reputation.
    #[command(subcommand)]
    Auction(super::query_auction::AuctionQuery),
    /// Verifiers, verification cases and challenges.
    #[command(subcommand)]
    Verify(super::verify::VerifyQuery),
    /// The scheduled upgrade, validators' signals and the upgrades that ran.
    Upgrade,
    /// Serving orders, leases and open claims.
    #[command(subcommand)]
    Serving(super::serving::ServingQuery),
    /// An account's next nonce.
    Account {
        /// Address (gpu1…).
        address: Address,
    },
    /// How a transaction ended: its block, code, log, gas and events.
    Tx {
        /// The transaction hash (64 hex digits, as `tx` commands print it).
        hash: String,
    },
}

#[derive(clap::Subcommand)]
pub(crate) enum BankQuery {
    /// Balance of an address.
    Balance {
        /// Address (gpu1…).
        address: Address,
        /// Check a Merkle proof against the app hash in the block header.
        #[arg(long)]
        prove: bool,
    },
    /// Total supply.
    Supply {
        /// Check a Merkle proof against the app hash in the block header.
        #[arg(long)]
        prove: bool,
    },
}

/// The borsh value under `key` (its default when absent), with the height and app hash it
/// was proven against when `prove` is set.
async fn value<T: BorshDeserialize + Default>(
    client: &ChainClient,
    key: &str,
    prove: bool,
) -> Result<(T, Option<(u64, String)>)> {
    if prove {
        let v = client.query_verified(key).await?;
        let value = match &v.value {
            Some(bytes) => borsh::from_slice(bytes)?,
            None => T::default(),
        };
        Ok((value, Some((v.height, hex::encode(v.app_hash)))))
    } else {
        Ok((client.get(key).await?.unwrap_or_default(), None))
    }
}

pub(crate) async fn run(cli: &Cli, cmd: &QueryCmd, out: &Output) -> Result<ExitCode> {
    let proves = matches!(
        cmd,
        QueryCmd::Bank(BankQuery::Balance { prove: true, .. })
            | QueryCmd::Bank(BankQuery::Supply { prove: true })
    );
    let client = if proves {
        super::light::proving_client(cli).await?
    } else {
        ChainClient::new(&cli.node)?
    };
    match cmd {
        QueryCmd::Bank(BankQuery::Balance { address, prove }) => {
            let key = gpuchain_bank::state_key::account(address);
            let (account, proof) = value::<gpuchain_bank::Account>(&client, &key, *prove).await?;
            let balance = account.balance;
            let value = json!({"address": address, "balance": balance.to_string(), "denom": "ugpu",
                "proven_at": proof.as_ref().map(|(h, a)| json!({"height": h, "app_hash": a}))});
            out.print(&value, || match &proof {
                Some((h, a)) => format!("{balance} ugpu (proven at height {h}, app hash {a})"),
                None => format!("{balance} ugpu"),
            });
        }
        QueryCmd::Bank(BankQuery::Supply { prove }) => {
            let (supply, proof) =
                value::<Amount>(&client, gpuchain_bank::state_key::supply(), *prove).await?;
            let value = json!({"supply": supply.to_string(), "denom": "ugpu",
                "proven_at": proof.as_ref().map(|(h, a)| json!({"height": h, "app_hash": a}))});
            out.print(&value, || format!("{supply} ugpu"));
        }
        QueryCmd::Staking(c) => super::query_staking::staking(&client, c, out).await?,
        QueryCmd::Slashing(c) => super::query_staking::slashing(&client, c, out).await?,
        QueryCmd::Auction(c) => super::query_auction::run(&client, c, out).await?,
        QueryCmd::Verify(c) => super::verify::query(&client, c, out).await?,
        QueryCmd::Upgrade => super::upgrade::query(&client, out).await?,
        QueryCmd::Serving(c) => super::serving::query(&client, c, out).await?,
        QueryCmd::Account { address } => {
            let nonce = client.nonce(address).await?;
            let value = json!({"address": address, "nonce": nonce});
            out.print(&value, || format!("{address} next nonce {nonce}"));
        }
        QueryCmd::Tx { hash } => match client.tx_outcome(hash).await? {
            Some(outcome) => return Ok(super::tx::report(&outcome, out)),
            None => anyhow::bail!(
                "transaction {hash} not found: no block holds it (not yet included, refused \
                 by CheckTx, or never sent)"
            ),
        },
    }
    Ok(ExitCode::SUCCESS)
}
