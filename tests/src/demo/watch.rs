//! Following the client's orders on chain: prints every auction, lease, verification and
//! payout transition as it happens, and keeps what the summary needs.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};
use gpuchain_auction::{AuctionRead, Lease, LeaseState, Order, OrderState};
use gpuchain_types::{Address, MemState};
use gpuchain_verify::{Case, VerifyRead};

use super::report::{JobRow, LeaseRow};
use super::{Market, PROVIDERS};

struct Tracked {
    label: String,
    posted_at: Instant,
    posted_height: u64,
    order_state: Option<OrderState>,
    leases: BTreeMap<u64, LeaseState>,
    verdicts: BTreeMap<u64, usize>,
    assigned: BTreeMap<u64, Option<Address>>,
    paid_at: BTreeMap<u64, (f64, u64)>,
    last: Option<(Order, Vec<Lease>)>,
    cases: BTreeMap<u64, Case>,
}

/// Tracks the client's orders.
pub(crate) struct Watcher {
    chain: gpuchain_client::ChainClient,
    names: BTreeMap<Address, String>,
    orders: BTreeMap<u64, Tracked>,
}

fn snapshot_into(state: &mut MemState, part: MemState) {
    state.apply(
        part.entries()
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect(),
    );
}

impl Watcher {
    pub(crate) fn new(m: &Market) -> Result<Watcher> {
        let mut names = BTreeMap::new();
        for name in PROVIDERS.iter().map(|(n, _)| *n).chain(["client", "v1"]) {
            names.insert(m.address(name)?, name.to_string());
        }
        Ok(Watcher {
            chain: m.chain.clone(),
            names,
            orders: BTreeMap::new(),
        })
    }

    fn name(&self, a: &Address) -> String {
        self.names.get(a).cloned().unwrap_or_else(|| a.to_string())
    }

    /// Starts following `order_id`.
    pub(crate) fn track(&mut self, order_id: u64, label: &str) {
        self.orders.insert(
            order_id,
            Tracked {
                label: label.to_string(),
                posted_at: Instant::now(),
                posted_height: 0,
                order_state: None,
                leases: BTreeMap::new(),
                verdicts: BTreeMap::new(),
                assigned: BTreeMap::new(),
                paid_at: BTreeMap::new(),
                last: None,
                cases: BTreeMap::new(),
            },
        );
    }

    /// Whether nothing more will happen to the order.
    pub(crate) fn is_settled(&self, order_id: u64) -> bool {
        self.orders
            .get(&order_id)
            .and_then(|t| t.order_state)
            .is_some_and(|s| s.is_closed())
    }

    /// Reads the chain once and prints what changed.
    pub(crate) async fn tick(&mut self, say: &(dyn Fn(&str) + Sync)) -> Result<()> {
        let mut state = MemState::new();
        for prefix in [
            "auction/orders/",
            "auction/leases",
            "auction/bids/",
            "verify/cases/",
        ] {
            snapshot_into(&mut state, self.chain.snapshot(prefix).await?);
        }
        let ids: Vec<u64> = self.orders.keys().copied().collect();
        for id in ids {
            let Some(order) = state.order(id) else {
                continue;
            };
            let leases = state.leases_of_order(id);
            let mut lines = Vec::new();
            let names = &self.names;
            let name = |a: &Address| names.get(a).cloned().unwrap_or_else(|| a.to_string());
            let t = self.orders.get_mut(&id).context("tracked")?;
            if t.order_state != Some(order.state) {
                t.order_state = Some(order.state);
                t.posted_height = order.created_height;
                let extra = match order.state {
                    OrderState::Open => format!(
                        "posted by client: {} replica(s), max {} ugpu each, bids until height {}",
                        order.replicas, order.max_price_per_replica, order.bid_end_height
                    ),
                    OrderState::Cleared => {
                        let bids: Vec<String> = state
                            .bids(id)
                            .iter()
                            .map(|b| format!("{} {}", name(&b.provider), b.price))
                            .collect();
                        format!(
                            "cleared at {} ugpu per replica (bids: {})",
                            order.clearing_price.unwrap_or(0),
                            bids.join(", ")
                        )
                    }
                    other => format!("{other:?}").to_lowercase(),
                };
                lines.push(format!("order {id} [{}]: {extra}", t.label));
            }
            for lease in &leases {
                if t.leases.get(&lease.id) != Some(&lease.state) {
                    t.leases.insert(lease.id, lease.state);
                    let what = match lease.state {
                        LeaseState::Open => {
                            format!("won by {} at {} ugpu", name(&lease.provider), lease.price)
                        }
                        LeaseState::Revealed => format!(
                            "{} revealed {}",
                            name(&lease.provider),
                            lease
                                .result_hash
                                .map(|h| hex::encode(&h[..8]))
                                .unwrap_or_default()
                        ),
                        LeaseState::Paid => {
                            t.paid_at.insert(
                                lease.id,
                                (
                                    t.posted_at.elapsed().as_secs_f64(),
                                    lease.payout_height.unwrap_or(0),
                                ),
                            );
                            format!("{} paid", name(&lease.provider))
                        }
                        LeaseState::Faulted => format!(
                            "{} proven wrong: slashed, client refunded",
                            name(&lease.provider)
                        ),
                        LeaseState::Missed => {
                            format!("{} missed its deadline: slashed", name(&lease.provider))
                        }
                        other => format!("{} {}", name(&lease.provider), other.name()),
                    };
                    lines.push(format!("  lease {} (order {id}): {what}", lease.id));
                }
                if let Some(case) = state.case(lease.id) {
                    if t.assigned.get(&lease.id) != Some(&case.assignee) {
                        t.assigned.insert(lease.id, case.assignee);
                        if let Some(v) = case.assignee {
                            lines.push(format!(
                                "  lease {}: verifier {} assigned (round {}), verdict due by height {}",
                                lease.id,
                                name(&v),
                                case.round,
                                case.deadline_height
                            ));
                        }
                    }
                    let seen = t.verdicts.entry(lease.id).or_insert(0);
                    for v in case.verdicts.iter().skip(*seen) {
                        lines.push(format!(
                            "  lease {}: {} says {} (its output {})",
                            lease.id,
                            name(&v.verifier),
                            v.verdict.name(),
                            hex::encode(&v.output_hash[..8])
                        ));
                    }
                    *seen = case.verdicts.len();
                    t.cases.insert(lease.id, case);
                }
            }
            t.last = Some((order, leases));
            for l in lines {
                say(&l);
            }
        }
        Ok(())
    }

    /// The summary row of a settled order.
    pub(crate) fn row(&self, order_id: u64) -> Result<JobRow> {
        let t = self.orders.get(&order_id).context("untracked order")?;
        let (order, leases) = t.last.clone().context("order never seen")?;
        Ok(JobRow {
            order_id,
            label: t.label.clone(),
            replicas: order.replicas,
            clearing_price: order.clearing_price.unwrap_or(0),
            posted_height: t.posted_height,
            leases: leases
                .iter()
                .map(|l| LeaseRow {
                    lease_id: l.id,
                    provider: self.name(&l.provider),
                    state: l.state.name().to_string(),
                    price: l.price,
                    verified_by: t.cases.get(&l.id).and_then(|c| {
                        c.verdicts
                            .first()
                            .map(|v| format!("{} ({})", self.name(&v.verifier), v.verdict.name()))
                    }),
                    paid_after_secs: t.paid_at.get(&l.id).map(|p| p.0),
                    payout_height: l.payout_height,
                    result_hash: l.result_hash.map(hex::encode),
                })
                .collect(),
        })
    }
}
