use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use gpuchain_bank::{BankMsg, MsgMultiSend, MsgSend, Output as BankOutput};
use gpuchain_client::{ChainClient, TxOutcome};
use gpuchain_tx::build_signed_tx;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount};

use super::keys::{keystore, passphrase};
use super::{Cli, Output};

#[derive(clap::Subcommand)]
pub(crate) enum TxCmd {
    /// Bank transactions.
    #[command(subcommand)]
    Bank(BankTx),
    /// Validator transactions.
    #[command(subcommand)]
    Staking(super::tx_staking::StakingTx),
    /// Compute-provider registration and bonds.
    #[command(subcommand)]
    Provider(super::tx_staking::ProviderTx),
    /// Validator jail.
    #[command(subcommand)]
    Slashing(super::tx_staking::SlashingTx),
    /// The compute market: orders, bids, commit and reveal.
    #[command(subcommand)]
    Auction(super::tx_auction::AuctionTx),
    /// Verifiers: bonds, verdicts, appeals and challenges.
    #[command(subcommand)]
    Verify(super::verify::VerifyTx),
    /// Validators' votes on a planned upgrade.
    #[command(subcommand)]
    Upgrade(super::upgrade::UpgradeTx),
    /// Serving: orders, bids, receipt claims, reports, audits.
    #[command(subcommand)]
    Serving(super::serving::ServingTx),
}

#[derive(clap::Subcommand)]
pub(crate) enum BankTx {
    /// Send ugpu from one of your keys to an address.
    Send {
        /// Name of the signing key.
        from: String,
        /// Recipient address (gpu1…).
        to: Address,
        /// Amount in ugpu.
        amount: Amount,
        /// Memo.
        #[arg(long, default_value = "")]
        memo: String,
    },
    /// Pay several recipients at once, all or nothing: `addr=ugpu` pairs.
    MultiSend {
        /// Name of the signing key.
        from: String,
        /// Recipients as `gpu1…=ugpu`.
        #[arg(required = true)]
        outputs: Vec<String>,
    },
}

fn parse_output(text: &str) -> Result<BankOutput> {
    let (to, amount) = text
        .split_once('=')
        .ok_or_else(|| anyhow::anyhow!("expected address=ugpu, got {text:?}"))?;
    Ok(BankOutput {
        to: to.parse()?,
        amount: amount.parse()?,
    })
}

/// Signs with the named key and broadcasts, honouring `--chain-id` if given.
pub(crate) async fn sign_and_broadcast(
    cli: &Cli,
    from: &str,
    msgs: Vec<Msg>,
    memo: &str,
) -> Result<TxOutcome> {
    let key = keystore(cli)?.signing_key(from, passphrase().as_deref())?;
    let client = ChainClient::new(&cli.node)?;
    let signer = Address::from_public_key(&key.verifying_key().to_bytes());
    let chain_id = match &cli.chain_id {
        Some(id) => id.clone(),
        None => client.chain_id().await?,
    };
    let (nonce, params) = tokio::try_join!(client.nonce(&signer), client.tx_params())?;
    let tx = build_signed_tx(&key, &chain_id, nonce, &params, msgs, memo);
    client.broadcast(&tx, Duration::from_secs(60)).await
}

/// Prints the outcome; a failed transaction exits with status 1.
pub(crate) fn report(outcome: &TxOutcome, out: &Output) -> ExitCode {
    out.print(outcome, || {
        if outcome.code == 0 {
            format!(
                "committed at height {} (code 0) tx {}",
                outcome.height, outcome.hash
            )
        } else if outcome.height == 0 {
            format!(
                "rejected by CheckTx: {}:{}: {}",
                outcome.codespace, outcome.code, outcome.log
            )
        } else {
            format!(
                "failed at height {} with {}:{}: {}",
                outcome.height, outcome.codespace, outcome.code, outcome.log
            )
        }
    });
    if outcome.code == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(crate) async fn run(cli: &Cli, cmd: &TxCmd, out: &Output) -> Result<ExitCode> {
    let (from, msg, memo): (&str, Msg, &str) = match cmd {
        TxCmd::Bank(BankTx::Send {
            from,
            to,
            amount,
            memo,
        }) => (
            from,
            Msg::Bank(BankMsg::Send(MsgSend {
                to: *to,
                amount: *amount,
            })),
            memo.as_str(),
        ),
        TxCmd::Bank(BankTx::MultiSend { from, outputs }) => {
            let outputs = outputs
                .iter()
                .map(|o| parse_output(o))
                .collect::<Result<_>>()?;
            (
                from,
                Msg::Bank(BankMsg::MultiSend(MsgMultiSend { outputs })),
                "",
            )
        }
        TxCmd::Staking(c) => {
            let (from, msg) = super::tx_staking::staking_msg(c)?;
            (from, msg, "")
        }
        TxCmd::Provider(c) => {
            let (from, msg) = super::tx_staking::provider_msg(c)?;
            (from, msg, "")
        }
        TxCmd::Slashing(c) => {
            let (from, msg) = super::tx_staking::slashing_msg(c);
            (from, msg, "")
        }
        TxCmd::Auction(c) => {
            let store = keystore(cli)?;
            let (from, msg) =
                super::tx_auction::auction_msg(c, |name| Ok(store.show(name)?.address))?;
            (from, msg, "")
        }
        TxCmd::Verify(c) => {
            let (from, msg) = super::verify::verify_msg(c)?;
            (from, msg, "")
        }
        TxCmd::Upgrade(c) => {
            let (from, msg) = super::upgrade::upgrade_msg(c);
            (from, msg, "")
        }
        TxCmd::Serving(c) => {
            let client = ChainClient::new(&cli.node)?;
            let (from, msg) = super::serving::serving_msg(&client, c).await?;
            (from, msg, "")
        }
    };
    let outcome = sign_and_broadcast(cli, from, vec![msg], memo).await?;
    Ok(report(&outcome, out))
}
