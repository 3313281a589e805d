//! `tx auction …`: clients post and cancel orders; providers bid, commit and reveal.

use std::path::PathBuf;

use anyhow::{Context, Result};
use gpuchain_auction::{
    AuctionMsg, ClassRequirement, MsgBid, MsgCancelOrder, MsgCommitResult, MsgCompareReplicas,
    MsgConfirmReceipt, MsgPostOrder, MsgReleaseLease, MsgRevealResult, MsgWithdrawRewards,
    Requirements, TooFewBids,
};
use gpuchain_jobspec::JobSpec;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount};

#[derive(clap::Subcommand)]
pub(crate) enum AuctionTx {
    /// Post an order: either a whole `MsgPostOrder` JSON file (`--order`), or a job-spec
    /// JSON file (`--job`) with the market terms given as flags.
    PostOrder {
        /// Client key.
        from: String,
        /// Order JSON file (job spec, requirements, replicas, max price per replica, bid
        /// window, execution deadline, what to do with too few bids).
        #[arg(long, conflicts_with = "job", required_unless_present = "job")]
        order: Option<PathBuf>,
        /// Job-spec JSON file; the terms come from the flags below.
        #[arg(long)]
        job: Option<PathBuf>,
        #[command(flatten)]
        terms: OrderTerms,
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
    /// Hand a lease back before its commit deadline (the provider cannot honour it): the
    /// client is refunded now and the smaller abandoned-lease slash applies.
    Release {
        /// Provider key.
        from: String,
        /// Lease id.
        lease_id: u64,
    },
    /// State whether the other replicas of a `comparing` lease's order match your output
    /// within the job's tolerance (`--consistent` yes; without it, no: the order is
    /// disputed).
    CompareReplicas {
        /// Provider key.
        from: String,
        /// Lease id.
        lease_id: u64,
        /// Every other output is within tolerance of yours.
        #[arg(long)]
        consistent: bool,
    },
    /// Confirm, as the order's client, that you fetched a lease's revealed output (check its
    /// blake3 against the lease's result hash first). A lease is paid only once someone
    /// other than its provider fetched its output; without this receipt a verifier fetches
    /// it first, for a 1% availability fee out of the provider's payment.
    ConfirmReceipt {
        /// Client key.
        from: String,
        /// Lease id.
        lease_id: u64,
    },
    /// Withdraw accrued validator rewards.
    WithdrawRewards {
        /// Operator key.
        from: String,
    },
}

/// Market terms of an order posted with `--job`.
#[derive(clap::Args)]
pub(crate) struct OrderTerms {
    /// Providers that run the job independently (k, 1..=5).
    #[arg(long, default_value_t = 1)]
    replicas: u32,
    /// Highest price per replica in ugpu.
    #[arg(long, default_value_t = 1_000_000)]
    max_price: Amount,
    /// Blocks bids are taken.
    #[arg(long, default_value_t = 10)]
    bid_window: u64,
    /// Blocks from clearing to the commit deadline.
    #[arg(long, default_value_t = 30)]
    exec_deadline: u64,
    /// Re-open the bid window once when too few bids arrive (default: refund).
    #[arg(long)]
    reopen_once: bool,
    /// Machine class: any, gpu or cpu.
    #[arg(long, default_value = "any", value_parser = parse_class)]
    class: ClassRequirement,
    /// Exact GPU model.
    #[arg(long)]
    gpu_model: Option<String>,
    /// Least memory per GPU in MiB.
    #[arg(long, default_value_t = 0)]
    min_vram_mib: u64,
    /// Least number of GPUs.
    #[arg(long, default_value_t = 0)]
    min_gpu_count: u32,
    /// Least CUDA version, NVML-style (12040 = 12.4).
    #[arg(long, default_value_t = 0)]
    min_cuda_version: u32,
    /// Exact region.
    #[arg(long)]
    region: Option<String>,
}

fn parse_class(text: &str) -> Result<ClassRequirement, String> {
    match text {
        "any" => Ok(ClassRequirement::Any),
        "gpu" => Ok(ClassRequirement::Gpu),
        "cpu" => Ok(ClassRequirement::Cpu),
        other => Err(format!("unknown class {other:?}: use any, gpu or cpu")),
    }
}

impl OrderTerms {
    fn order(&self, job: JobSpec) -> MsgPostOrder {
        MsgPostOrder {
            job,
            requirements: Requirements {
                class: self.class,
                gpu_model: self.gpu_model.clone(),
                min_vram_mib: self.min_vram_mib,
                min_gpu_count: self.min_gpu_count,
                min_cuda_version: self.min_cuda_version,
                region: self.region.clone(),
            },
            replicas: self.replicas,
            max_price_per_replica: self.max_price,
            bid_window_blocks: self.bid_window,
            exec_deadline_blocks: self.exec_deadline,
            on_too_few_bids: if self.reopen_once {
                TooFewBids::ReopenOnce
            } else {
                TooFewBids::Refund
            },
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &PathBuf, what: &str) -> Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("parsing the {what} in {}", path.display()))
}

fn hex32(text: &str, what: &str) -> Result<[u8; 32]> {
    let bytes = hex::decode(text.trim()).with_context(|| format!("{what} must be hex"))?;
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("{what} must be 32 bytes"))
}

/// The signer's key name and the message; `signer` resolves a key name to its address
/// (needed to compute a commitment).
pub(crate) fn auction_msg(
    cmd: &AuctionTx,
    signer: impl Fn(&str) -> Result<Address>,
) -> Result<(&str, Msg)> {
    let msg = |m| Msg::Auction(m);
    Ok(match cmd {
        AuctionTx::PostOrder {
            from,
            order,
            job,
            terms,
        } => {
            let body: MsgPostOrder = match (order, job) {
                (Some(order), _) => read_json(order, "order")?,
                (None, Some(job)) => terms.order(read_json(job, "job spec")?),
                (None, None) => anyhow::bail!("give --order or --job"),
            };
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
        AuctionTx::Release { from, lease_id } => (
            from,
            msg(AuctionMsg::ReleaseLease(MsgReleaseLease {
                lease_id: *lease_id,
            })),
        ),
        AuctionTx::CompareReplicas {
            from,
            lease_id,
            consistent,
        } => (
            from,
            msg(AuctionMsg::CompareReplicas(MsgCompareReplicas {
                lease_id: *lease_id,
                consistent: *consistent,
            })),
        ),
        AuctionTx::ConfirmReceipt { from, lease_id } => (
            from,
            msg(AuctionMsg::ConfirmReceipt(MsgConfirmReceipt {
                lease_id: *lease_id,
            })),
        ),
        AuctionTx::WithdrawRewards { from } => (
            from,
            msg(AuctionMsg::WithdrawRewards(MsgWithdrawRewards {})),
        ),
    })
}
