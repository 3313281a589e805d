//! `tx serving …` and `query serving …`: clients open and end serving orders and report
//! leases; providers bid, claim acknowledged batches and answer reports; the provider or
//! client reveals an audited receipt; drawn verifiers judge it (or step down from a model
//! they do not run); the party a standing verdict
//! goes against appeals it; anyone lists orders, leases and open claims.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use gpuchain_client::ChainClient;
use gpuchain_serving::receipt::{merkle_proof, Receipt, SignedAck};
use gpuchain_serving::{
    ClaimStage, ModelRef, MsgAppealServing, MsgBidServing, MsgEndServing, MsgOpenServing,
    MsgReportUnresponsive, MsgRevealReceipt, MsgServingHeartbeat, MsgServingModels,
    MsgServingRecuse, MsgServingVerdict, ServingKind, ServingMsg, ServingRead,
};
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount};

use super::Output;

#[derive(clap::Subcommand)]
pub(crate) enum ServingTx {
    /// Open a serving order: MODEL on N providers for D blocks, paid from a deposit.
    Open {
        /// Client key.
        from: String,
        /// The model name clients ask for (`SmolLM2-135M-Instruct`).
        #[arg(long)]
        model: String,
        /// Hex blake3 of the model's weights file.
        #[arg(long)]
        model_hash: String,
        /// `generation` (priced per million tokens) or `embedding` (per thousand inputs).
        #[arg(long, value_parser = parse_kind, default_value = "generation")]
        kind: ServingKind,
        /// How many providers.
        #[arg(long, default_value_t = 1)]
        providers: u32,
        /// Ceiling price per million tokens or thousand inputs, ugpu.
        #[arg(long)]
        max_price: Amount,
        /// Blocks the leases serve.
        #[arg(long)]
        duration: u64,
        /// Blocks bids are taken.
        #[arg(long, default_value_t = 3)]
        bid_window: u64,
        /// Locked in escrow; claims are paid from it and the rest comes back.
        #[arg(long)]
        deposit: Amount,
        /// Only providers of this region.
        #[arg(long)]
        region: Option<String>,
    },
    /// Bid PRICE (ugpu per million tokens or thousand inputs) on a serving order.
    Bid {
        /// Provider key.
        from: String,
        /// Order id.
        order_id: u64,
        /// Price.
        price: Amount,
        /// Where you will answer the lease's requests: your `serve-model` endpoint's base URL
        /// as clients reach it (`http://host:port`).
        #[arg(long)]
        endpoint: String,
    },
    /// Claim payment for a batch your client acknowledged (the JSON its gateway handed you).
    Claim {
        /// Provider key.
        from: String,
        /// A signed acknowledgement, JSON.
        #[arg(long)]
        ack: PathBuf,
    },
    /// End your order now; the rest of the deposit comes back after the claim grace.
    End {
        /// Client key.
        from: String,
        /// Order id.
        order_id: u64,
    },
    /// Report a lease whose provider stopped answering.
    Report {
        /// Client key.
        from: String,
        /// Lease id.
        lease_id: u64,
    },
    /// Answer a report on your lease: you are alive.
    Heartbeat {
        /// Provider key.
        from: String,
        /// Lease id.
        lease_id: u64,
    },
    /// Reveal an audited claim's drawn receipt with the request and response bodies.
    Reveal {
        /// Provider or client key.
        from: String,
        /// Claim id.
        claim_id: u64,
        /// The claim's receipts, JSON list in order.
        #[arg(long)]
        receipts: PathBuf,
        /// The drawn request's body.
        #[arg(long)]
        request: PathBuf,
        /// The drawn response's body.
        #[arg(long)]
        response: PathBuf,
    },
    /// As the drawn verifier, judge a revealed receipt.
    Verdict {
        /// Verifier key.
        from: String,
        /// Claim id.
        claim_id: u64,
        /// `honest` or `faulty`.
        #[arg(value_parser = parse_honest)]
        verdict: bool,
    },
    /// As the drawn verifier, step down from a revealed receipt this verifier cannot judge
    /// (a model it does not run): no slash and no fee; another verifier is drawn.
    Recuse {
        /// Verifier key.
        from: String,
        /// Claim id.
        claim_id: u64,
    },
    /// As a verifier, declare the serving models it judges (the blake3 of each one's weights),
    /// replacing what it declared before; none withdraws them all. Juries for a model are
    /// drawn among the verifiers that declared it (`gpuchain-verifier register` and the
    /// verifier agent declare its `[serving]` models themselves).
    Models {
        /// Verifier key.
        from: String,
        /// Hex blake3 of each model's weights file.
        models: Vec<String>,
    },
    /// Appeal a claim's standing verdict within its appeal window: as the client of an
    /// `honest` verdict or the provider of a `faulty` one. Locks the appeal deposit, lost if
    /// the fresh jury upholds the verdict.
    Appeal {
        /// Client or provider key.
        from: String,
        /// Claim id.
        claim_id: u64,
    },
}

fn parse_kind(s: &str) -> Result<ServingKind, String> {
    match s {
        "generation" => Ok(ServingKind::Generation),
        "embedding" => Ok(ServingKind::Embedding),
        _ => Err("expected generation or embedding".into()),
    }
}

fn parse_honest(s: &str) -> Result<bool, String> {
    match s {
        "honest" => Ok(true),
        "faulty" => Ok(false),
        _ => Err("expected honest or faulty".into()),
    }
}

fn hash32(hex_text: &str, what: &str) -> Result<[u8; 32]> {
    hex::decode(hex_text)
        .ok()
        .and_then(|b| b.try_into().ok())
        .with_context(|| format!("{what} must be 64 hex digits"))
}

fn read(path: &PathBuf) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// The signer's key name and the message; reveals read the claim from the chain.
pub(crate) async fn serving_msg<'a>(
    client: &ChainClient,
    cmd: &'a ServingTx,
) -> Result<(&'a str, Msg)> {
    let (from, msg) = match cmd {
        ServingTx::Open {
            from,
            model,
            model_hash,
            kind,
            providers,
            max_price,
            duration,
            bid_window,
            deposit,
            region,
        } => (
            from,
            ServingMsg::Open(MsgOpenServing {
                model: ModelRef {
                    name: model.clone(),
                    blake3: hash32(model_hash, "--model-hash")?,
                    kind: *kind,
                },
                providers: *providers,
                max_price: *max_price,
                duration_blocks: *duration,
                bid_window_blocks: *bid_window,
                deposit: *deposit,
                region: region.clone(),
            }),
        ),
        ServingTx::Bid {
            from,
            order_id,
            price,
            endpoint,
        } => (
            from,
            ServingMsg::Bid(MsgBidServing {
                order_id: *order_id,
                price: *price,
                endpoint: endpoint.clone(),
            }),
        ),
        ServingTx::Claim { from, ack } => {
            let signed: SignedAck = serde_json::from_slice(&read(ack)?)
                .with_context(|| format!("{} is not a signed acknowledgement", ack.display()))?;
            (from, ServingMsg::Claim(signed.claim()))
        }
        ServingTx::End { from, order_id } => (
            from,
            ServingMsg::End(MsgEndServing {
                order_id: *order_id,
            }),
        ),
        ServingTx::Report { from, lease_id } => (
            from,
            ServingMsg::Report(MsgReportUnresponsive {
                lease_id: *lease_id,
            }),
        ),
        ServingTx::Heartbeat { from, lease_id } => (
            from,
            ServingMsg::Heartbeat(MsgServingHeartbeat {
                lease_id: *lease_id,
            }),
        ),
        ServingTx::Reveal {
            from,
            claim_id,
            receipts,
            request,
            response,
        } => {
            let state = client
                .snapshot(&gpuchain_serving::state_key::claim(*claim_id))
                .await?;
            let claim = state
                .serving_claim(*claim_id)
                .with_context(|| format!("claim {claim_id} is not open"))?;
            let ClaimStage::AwaitingReveal { index, .. } = claim.stage else {
                bail!("claim {claim_id} is not waiting for a reveal");
            };
            let list: Vec<Receipt> =
                serde_json::from_slice(&read(receipts)?).with_context(|| {
                    format!("{} is not a JSON list of receipts", receipts.display())
                })?;
            let leaves: Vec<[u8; 32]> = list.iter().map(Receipt::leaf).collect();
            let position = usize::try_from(index)?;
            let receipt = list
                .get(position)
                .cloned()
                .with_context(|| format!("the list has no receipt at position {index}"))?;
            (
                from,
                ServingMsg::Reveal(MsgRevealReceipt {
                    claim_id: *claim_id,
                    proof: merkle_proof(&leaves, position).unwrap_or_default(),
                    request: read(request)?,
                    response: read(response)?,
                    receipt,
                }),
            )
        }
        ServingTx::Verdict {
            from,
            claim_id,
            verdict,
        } => (
            from,
            ServingMsg::Verdict(MsgServingVerdict {
                claim_id: *claim_id,
                honest: *verdict,
            }),
        ),
        ServingTx::Appeal { from, claim_id } => (
            from,
            ServingMsg::Appeal(MsgAppealServing {
                claim_id: *claim_id,
            }),
        ),
        ServingTx::Models { from, models } => (
            from,
            ServingMsg::Models(MsgServingModels {
                models: models
                    .iter()
                    .map(|m| hash32(m, "a model's blake3"))
                    .collect::<Result<_>>()?,
            }),
        ),
        ServingTx::Recuse { from, claim_id } => (
            from,
            ServingMsg::Recuse(MsgServingRecuse {
                claim_id: *claim_id,
            }),
        ),
    };
    Ok((from.as_str(), Msg::Serving(msg)))
}

#[derive(clap::Subcommand)]
pub(crate) enum ServingQuery {
    /// Every serving order still in state.
    Orders,
    /// One order.
    Order {
        /// Order id.
        id: u64,
    },
    /// One lease.
    Lease {
        /// Lease id.
        id: u64,
    },
    /// A provider's leases.
    Leases {
        /// Provider address (gpu1…).
        #[arg(long)]
        provider: Address,
    },
    /// Claims not settled yet (audits under way).
    Claims,
}

pub(crate) async fn query(client: &ChainClient, cmd: &ServingQuery, out: &Output) -> Result<()> {
    let state = client
        .snapshot(gpuchain_serving::state_key::module_prefix())
        .await?;
    match cmd {
        ServingQuery::Orders => {
            let orders = state.serving_orders();
            out.print(&orders, || {
                orders
                    .iter()
                    .map(|o| {
                        format!(
                            "order {} {:?} {} ×{} price {} deposit {} ugpu, leases {:?}",
                            o.id, o.state, o.model.name, o.providers, o.price, o.deposit, o.leases
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        ServingQuery::Order { id } => {
            let order = state.serving_order(*id).with_context(|| {
                format!(
                    "serving order {id} is not in state (never opened, or retired after it closed)"
                )
            })?;
            out.print(&order, || format!("{order:#?}"));
        }
        ServingQuery::Lease { id } => {
            let lease = state
                .serving_lease(*id)
                .with_context(|| format!("serving lease {id} is not in state (never created, or retired after its order closed)"))?;
            out.print(&lease, || format!("{lease:#?}"));
        }
        ServingQuery::Leases { provider } => {
            let leases = state.serving_leases_of(provider);
            out.print(&leases, || {
                leases
                    .iter()
                    .map(|l| {
                        format!(
                            "lease {} order {} {:?} {} until {} next receipt {} paid {} ugpu",
                            l.id,
                            l.order_id,
                            l.state,
                            l.model.name,
                            l.end_height,
                            l.next_seq,
                            l.paid
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        ServingQuery::Claims => {
            let claims = state.serving_claims();
            out.print(&claims, || format!("{claims:#?}"));
        }
    }
    Ok(())
}
