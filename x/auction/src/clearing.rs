//! Clearing a reverse auction, run by the chain in the end-block of an order's last bid
//! height.
//!
//! Ranking: each eligible bid gets the reputation-adjusted price
//! `price × (2,000,000 − score_ppm)`, i.e. the price weighted between 1× (score 1,000,000)
//! and 2× (score 0), 1.5× for a neutral provider; lower ranks first. Ties are broken by
//! `BlockCtx::draw("auction/tiebreak", order_id (8 bytes big-endian) ‖ provider (20 bytes))`,
//! lowest first, so no one can pick a winning position by address. The best k win and every
//! winner is paid one clearing price: the raw price of the (k+1)-th ranked bid, but never
//! less than the highest raw price among the winners (with reputation weighting a winner may
//! have asked more than the next bid; no winner is paid below its own ask). With more than k
//! bids, bidding one's true cost is the best strategy.
//!
//! When exactly k bid there is no losing bid to price the replicas, and paying the order's
//! maximum would hand any k colluding bidders the client's whole budget whatever they asked.
//! The price is then the highest winning ask: no winner is paid more than some winner asked,
//! so a client is never charged above the market's own asks (docs/protocol.md, "Clearing").

use gpuchain_reputation::{decay, ReputationRead};
use gpuchain_staking::StakingRead;
use gpuchain_types::{Address, Amount, BlockCtx, Ppm, StateRead, PPM_ONE};

use crate::{AuctionRead, Bid, Order};

/// A bid as ranked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankedBid {
    /// Bidder.
    pub provider: Address,
    /// Asked price.
    pub price: Amount,
    /// Reputation score used.
    pub score_ppm: Ppm,
    /// `price × (2,000,000 − score)`.
    pub adjusted: u128,
    /// The blake3 tie-break draw.
    pub tiebreak: [u8; 32],
}

/// The result of a successful clearing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clearing {
    /// Winners, best first.
    pub winners: Vec<RankedBid>,
    /// Price every winner is paid.
    pub clearing_price: Amount,
    /// Eligible bids ranked.
    pub ranked: usize,
}

/// Ranks `(provider, price, score)` bids, best first.
pub fn rank(ctx: &BlockCtx, order_id: u64, bids: &[(Address, Amount, Ppm)]) -> Vec<RankedBid> {
    let mut ranked: Vec<RankedBid> = bids
        .iter()
        .map(|(provider, price, score)| {
            let weight = u128::from((2 * PPM_ONE).saturating_sub((*score).min(PPM_ONE)));
            let mut subject = order_id.to_be_bytes().to_vec();
            subject.extend_from_slice(&provider.0);
            RankedBid {
                provider: *provider,
                price: *price,
                score_ppm: *score,
                adjusted: price.saturating_mul(weight),
                tiebreak: ctx.draw("auction/tiebreak", &subject),
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        a.adjusted
            .cmp(&b.adjusted)
            .then(a.tiebreak.cmp(&b.tiebreak))
            .then(a.provider.cmp(&b.provider))
    });
    ranked
}

/// Clears `k` replicas with max price `max_price`; `None` when fewer than k bids.
pub fn clear(
    ctx: &BlockCtx,
    order_id: u64,
    k: usize,
    max_price: Amount,
    bids: &[(Address, Amount, Ppm)],
) -> Option<Clearing> {
    if k == 0 {
        return None;
    }
    let mut ranked = rank(ctx, order_id, bids);
    if ranked.len() < k {
        return None;
    }
    let next = ranked.get(k).map(|b| b.price);
    let total = ranked.len();
    ranked.truncate(k);
    let highest_winner = ranked.iter().map(|b| b.price).max().unwrap_or(0);
    Some(Clearing {
        clearing_price: next
            .unwrap_or(highest_winner)
            .max(highest_winner)
            .min(max_price),
        winners: ranked,
        ranked: total,
    })
}

/// The order's bids that may still win at `ctx.height`: the provider is eligible (bonded,
/// not jailed) and its hardware meets the requirements; with their decayed scores.
/// Parameters are read once and each provider record once (clearing touches every bid).
pub fn eligible_bids(
    state: &impl StateRead,
    ctx: &BlockCtx,
    order: &Order,
) -> Vec<(Address, Amount, Ppm)> {
    let min_stake = state.staking_params().min_provider_stake;
    let half_life = state.reputation_params().half_life_blocks;
    state
        .bids(order.id)
        .into_iter()
        .filter(|b: &Bid| b.price <= order.max_price_per_replica)
        .filter(|b| {
            state.provider(&b.provider).is_some_and(|p| {
                p.bonded >= min_stake
                    && !p.is_jailed(ctx.height)
                    && order.requirements.matches(&p.attrs)
            })
        })
        .map(|b| {
            let r = state.reputation(&b.provider);
            let blocks = ctx.height.saturating_sub(r.updated_height);
            (b.provider, b.price, decay(r.score_ppm, blocks, half_life))
        })
        .collect()
}
