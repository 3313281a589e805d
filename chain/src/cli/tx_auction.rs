//! `tx auction …`: clients post and cancel orders; providers bid, commit and reveal.

use std::path::PathBuf;

use anyhow::{Context, Result};
use gpuchain_auction::{
    AuctionMsg, MsgBid, MsgCancelOrder, MsgCommitResult, MsgPostOrder, MsgRevealResult,
    MsgWithdrawRewards,
};
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount};

#[derive(clap::Subcommand)]
pub(crate) enum AuctionTx {
    /// Post an order from a JSON file (a `MsgPostOrder`: job spec, requirements, replicas,
    /// max price per replica, bid window, execution deadline, what to do with too few bids).
    PostOrder {
        /// Client key.
        from: String,
        /// Order JSON file.
        #[arg(long)]
        order: PathBuf,
    },
    /// Cancel an order before it clears (refunds everything).
    Cancel {
        /// Client key.
        from: String,
        /// Order id.
        order_id: u64,
    },
    /// Bid on an open order (providers).
    Bid {
        /// Provider key.
        from: String,
        /// Order id.
        order_id: u64,
        /// Price per replica in ugpu.
        price: Amount,
    },
    /// Commit to a result: blake3(result hash || provider address || salt).
    Commit {
        /// Provider key.
        from: String,
        /// Lease id.
        lease_id: u64,
        /// Hex blake3 of the output blob.
        #[arg(long)]
        result_hash: String,
        /// Hex 32-byte salt; keep it for the reveal.
        #[arg(long)]
        salt: String,
    },
    /// Reveal a committed result.
    Reveal {
        /// Provider key.
        from: String,
        /// Lease id.
        lease_id: u64,
        /// Hex blake3 of the output blob.
        #[arg(long)]
        result_hash: String,
        /// The salt used in the commitment.
        #[arg(long)]
        salt: String,
    },
    /// Withdraw accrued validator rewards.
    WithdrawRewards {
        /// Operator key.
        from: String,
    },
}

fn hex32(text: &str, what: &str) -> Result<[u8; 32]> {
    let bytes = hex::decode(text.trim()).with_context(|| format!("{what} must be hex"))?;
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("{what} must be 32 bytes"))
}

/// The signer's key name and the message; `signer` resolves a key name to its address
/// (needed to compute a commitment).
pub(crate) fn auction_msg<'a>(
    cmd: &'a AuctionTx,
    signer: impl Fn(&str) -> Result<Address>,
) -> Result<(&'a str, Msg)> {
    let msg = |m| Msg::Auction(m);
    Ok(match cmd {
        AuctionTx::PostOrder { from, order } => {
            let bytes =
                std::fs::read(order).with_context(|| format!("reading {}", order.display()))?;
            let body: MsgPostOrder = serde_json::from_slice(&bytes)
                .with_context(|| format!("parsing the order in {}", order.display()))?;
            (from, msg(AuctionMsg::PostOrder(body)))
        }
        AuctionTx::Cancel { from, order_id } => (
            from,
            msg(AuctionMsg::CancelOrder(MsgCancelOrder {
                order_id: *order_id,
            })),
        ),
        AuctionTx::Bid {
            from,
            order_id,
            price,
        } => (
            from,
            msg(AuctionMsg::Bid(MsgBid {
                order_id: *order_id,
                price: *price,
            })),
        ),
        AuctionTx::Commit {
            from,
            lease_id,
            result_hash,
            salt,
        } => {
            let hash = hex32(result_hash, "--result-hash")?;
            let salt = hex32(salt, "--salt")?;
            let commitment = gpuchain_auction::commitment(&hash, &signer(from)?, &salt);
            (
                from,
                msg(AuctionMsg::CommitResult(MsgCommitResult {
                    lease_id: *lease_id,
                    commitment,
                })),
            )
        }
        AuctionTx::Reveal {
            from,
            lease_id,
            result_hash,
            salt,
        } => (
            from,
            msg(AuctionMsg::RevealResult(MsgRevealResult {
                lease_id: *lease_id,
                result_hash: hex32(result_hash, "--result-hash")?,
                salt: hex32(salt, "--salt")?,
            })),
        ),
        AuctionTx::WithdrawRewards { from } => (
            from,
            msg(AuctionMsg::WithdrawRewards(MsgWithdrawRewards {})),
        ),
    })
}
