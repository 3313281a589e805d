//! x/auction operations: orders, bids, commit-reveal by provider profile, cancellations,
//! rewards; and the honest drain of the liveness phase.

use gpuchain_auction::{
    commitment, AuctionMsg, AuctionRead, ClassRequirement, Lease, LeaseState, MsgBid,
    MsgCancelOrder, MsgCommitResult, MsgCompareReplicas, MsgConfirmReceipt, MsgPostOrder,
    MsgRevealResult, MsgWithdrawRewards, Order, OrderState, Requirements, TooFewBids,
};
use gpuchain_jobspec::{BlobRef, InferenceSpec, JobSpec, ModelArch};
use gpuchain_staking::StakingRead;
use gpuchain_tx::Msg;
use gpuchain_types::Address;

use super::{Gen, Planned};
use crate::actors::{Profile, Role};

fn auction(m: AuctionMsg) -> Msg {
    Msg::Auction(m)
}

pub(super) fn job(seed: u64) -> JobSpec {
    let blob = |size, tag: u64| BlobRef {
        blake3: *blake3::hash(&[seed.to_le_bytes(), tag.to_le_bytes()].concat()).as_bytes(),
        size,
        urls: vec!["https://blobs.example.org/x".into()],
    };
    JobSpec::Inference(InferenceSpec {
        arch: ModelArch::DigitsMlp,
        weights: blob(40_000, 0),
        tokenizer: None,
        input: blob(1_000, 1),
        batch_size: 64,
        llama: None,
        generation: None,
        tolerance: None,
    })
}

fn requirements(g: &mut Gen<'_>) -> Requirements {
    let class = match g.rng.below(4) {
        0 => ClassRequirement::Any,
        1 => ClassRequirement::Cpu,
        _ => ClassRequirement::Gpu,
    };
    let gpu = class == ClassRequirement::Gpu;
    let gpu_model = match g.rng.below(10) {
        0 if gpu => Some("NVIDIA B200".to_string()), // nobody has one: the order expires
        1..=2 if gpu => Some("nvidia h200".to_string()),
        _ => None,
    };
    Requirements {
        class,
        gpu_model,
        min_vram_mib: if gpu { g.rng.range(0, 100_000) } else { 0 },
        min_gpu_count: u32::from(gpu),
        min_cuda_version: 0,
        region: g.rng.one_in(4).then(|| "eu-west".to_string()),
    }
}

pub(super) fn order_msg(g: &mut Gen<'_>, max_price: u128) -> MsgPostOrder {
    MsgPostOrder {
        job: job(g.rng.next_u64()),
        requirements: requirements(g),
        replicas: u32::try_from(g.rng.range(1, 3)).unwrap_or(1),
        max_price_per_replica: max_price,
        bid_window_blocks: g.rng.range(1, 4),
        exec_deadline_blocks: g.rng.range(2, 8),
        on_too_few_bids: if g.rng.one_in(2) {
            TooFewBids::Refund
        } else {
            TooFewBids::ReopenOnce
        },
    }
}

fn client(g: &mut Gen<'_>) -> usize {
    if g.rng.one_in(5) {
        return g.any_actor();
    }
    g.actor_where(|g, i| {
        g.world
            .actors
            .get(i)
            .is_some_and(|a| a.role == Role::Client)
    })
    .unwrap_or(0)
}

/// A client posts an order.
pub(super) fn post_order(g: &mut Gen<'_>) -> Planned {
    let who = client(g);
    let max = u128::from(g.rng.range(100_000, 2_000_000));
    let msg = order_msg(g, max);
    Planned::Txs(vec![g.tx(who, vec![auction(AuctionMsg::PostOrder(msg))])])
}

/// An order the client cannot pay for.
pub(super) fn post_order_overdraft(g: &mut Gen<'_>) -> Planned {
    let who = client(g);
    let msg = order_msg(g, 1_000_000_000_000_000);
    Planned::Txs(vec![g.tx(who, vec![auction(AuctionMsg::PostOrder(msg))])])
}

fn open_orders(g: &Gen<'_>) -> Vec<Order> {
    g.orders()
        .iter()
        .filter(|o| o.state == OrderState::Open)
        .cloned()
        .collect()
}

/// A client cancels one of its open orders.
pub(super) fn cancel_order(g: &mut Gen<'_>) -> Planned {
    let open = open_orders(g);
    let Some(order) = g.rng.pick(&open).cloned() else {
        return Planned::NoOp;
    };
    let Some(&who) = g.world.index.get(&order.client) else {
        return Planned::NoOp;
    };
    let msg = AuctionMsg::CancelOrder(MsgCancelOrder { order_id: order.id });
    Planned::Txs(vec![g.tx(who, vec![auction(msg)])])
}

/// Someone else tries to cancel a client's order.
pub(super) fn cancel_foreign_order(g: &mut Gen<'_>) -> Planned {
    let open = open_orders(g);
    let Some(order) = g.rng.pick(&open).cloned() else {
        return Planned::NoOp;
    };
    let Some(who) = g.actor_where(|g, i| g.addr(i) != order.client) else {
        return Planned::NoOp;
    };
    let msg = AuctionMsg::CancelOrder(MsgCancelOrder { order_id: order.id });
    Planned::Txs(vec![g.tx(who, vec![auction(msg)])])
}

/// A provider whose hardware meets the order's requirements, or one that does not.
fn bidder(g: &mut Gen<'_>, order: &Order, meets: bool) -> Option<usize> {
    let client = order.client;
    g.actor_where(|g, i| {
        let a = g.addr(i);
        a != client
            && g.state
                .provider(&a)
                .is_some_and(|p| order.requirements.matches(&p.attrs) == meets)
    })
}

fn bid_msg(order_id: u64, price: u128) -> Msg {
    auction(AuctionMsg::Bid(MsgBid { order_id, price }))
}

/// An eligible provider bids at most the order's max price.
pub(super) fn bid(g: &mut Gen<'_>) -> Planned {
    let open = open_orders(g);
    let Some(order) = g.rng.pick(&open).cloned() else {
        return Planned::NoOp;
    };
    let Some(who) = bidder(g, &order, true) else {
        return Planned::NoOp;
    };
    let max = u64::try_from(order.max_price_per_replica).unwrap_or(u64::MAX);
    let price = u128::from(g.rng.range(1, max));
    Planned::Txs(vec![g.tx(who, vec![bid_msg(order.id, price)])])
}

/// A provider whose hardware does not qualify, or a client with no provider at all, bids.
pub(super) fn bid_ineligible(g: &mut Gen<'_>) -> Planned {
    let open = open_orders(g);
    let Some(order) = g.rng.pick(&open).cloned() else {
        return Planned::NoOp;
    };
    let who = if g.rng.one_in(2) {
        bidder(g, &order, false)
    } else {
        g.actor_where(|g, i| {
            g.world
                .actors
                .get(i)
                .is_some_and(|a| a.role == Role::Client)
        })
    };
    let Some(who) = who else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![g.tx(who, vec![bid_msg(order.id, 1)])])
}

/// An eligible provider asks more than the order's max price.
pub(super) fn bid_over_max(g: &mut Gen<'_>) -> Planned {
    let open = open_orders(g);
    let Some(order) = g.rng.pick(&open).cloned() else {
        return Planned::NoOp;
    };
    let Some(who) = bidder(g, &order, true) else {
        return Planned::NoOp;
    };
    let price = order.max_price_per_replica.saturating_add(1);
    Planned::Txs(vec![g.tx(who, vec![bid_msg(order.id, price)])])
}

/// A lease of one of our providers in `state`, with the provider's actor index.
fn lease_in(g: &mut Gen<'_>, state: LeaseState) -> Option<(usize, Lease)> {
    let leases: Vec<(usize, Lease)> = our_leases(g, state);
    g.rng.pick(&leases).cloned()
}

fn our_leases(g: &Gen<'_>, state: LeaseState) -> Vec<(usize, Lease)> {
    g.leases()
        .iter()
        .filter(|l| l.state == state)
        .filter_map(|l| g.world.index.get(&l.provider).map(|&i| (i, l.clone())))
        .collect()
}

/// The correct result of an order.
/// The right output of a job: a function of its input, so that a ringer's poster knows it
/// before its order exists.
pub(super) fn expected_output(job: &JobSpec) -> [u8; 32] {
    let input = match job {
        JobSpec::Inference(spec) => spec.input.blake3,
        _ => [0; 32],
    };
    *blake3::hash(&[b"result".as_slice(), &input].concat()).as_bytes()
}

/// The right output of an order's job.
pub(super) fn right_result(g: &Gen<'_>, order_id: u64) -> [u8; 32] {
    match g.state.order(order_id) {
        Some(order) => expected_output(&order.job),
        None => *blake3::hash(&order_id.to_be_bytes()).as_bytes(),
    }
}

/// A liar's result: differs per provider, so replicas disagree.
fn wrong_result(order_id: u64, provider: &Address) -> [u8; 32] {
    *blake3::hash(&[b"wrong".as_slice(), &order_id.to_be_bytes(), &provider.0].concat()).as_bytes()
}

/// An honest result computed on another backend: different bytes, within tolerance of the
/// right one. Honest providers with an odd first address byte compute it.
pub(super) fn drifted_result(right: &[u8; 32]) -> [u8; 32] {
    *blake3::hash(&[b"drift".as_slice(), right].concat()).as_bytes()
}

/// Whether `result` is an honest answer to the order (exact or drifted).
pub(super) fn is_honest_result(g: &Gen<'_>, order_id: u64, result: &[u8; 32]) -> bool {
    let right = right_result(g, order_id);
    *result == right || *result == drifted_result(&right)
}

fn drifts(provider: &Address) -> bool {
    provider.0[0] % 2 == 1
}

/// The colluders' result: wrong, and the same for every colluder on the order.
fn colluded_result(order_id: u64) -> [u8; 32] {
    *blake3::hash(&[b"collude".as_slice(), &order_id.to_be_bytes()].concat()).as_bytes()
}

/// Which result a provider commits.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Committed {
    Right,
    Wrong,
    Colluded,
}

fn salt(lease: &Lease) -> [u8; 32] {
    *blake3::hash(
        &[
            b"salt".as_slice(),
            &lease.id.to_be_bytes(),
            &lease.provider.0,
        ]
        .concat(),
    )
    .as_bytes()
}

fn commit_tx(g: &mut Gen<'_>, who: usize, lease: &Lease, kind: Committed) -> Vec<u8> {
    let result = match kind {
        Committed::Right if drifts(&lease.provider) => {
            drifted_result(&right_result(g, lease.order_id))
        }
        Committed::Right => right_result(g, lease.order_id),
        Committed::Wrong => wrong_result(lease.order_id, &lease.provider),
        Committed::Colluded => colluded_result(lease.order_id),
    };
    let msg = AuctionMsg::CommitResult(MsgCommitResult {
        lease_id: lease.id,
        commitment: commitment(&result, &lease.provider, &salt(lease)),
    });
    g.tx(who, vec![auction(msg)])
}

/// The result a lease committed to (right or wrong), found by recomputing the commitment.
fn committed_result(g: &Gen<'_>, lease: &Lease) -> [u8; 32] {
    let right = right_result(g, lease.order_id);
    let drifted = drifted_result(&right);
    let colluded = colluded_result(lease.order_id);
    if lease.commitment == Some(commitment(&right, &lease.provider, &salt(lease))) {
        right
    } else if lease.commitment == Some(commitment(&drifted, &lease.provider, &salt(lease))) {
        drifted
    } else if lease.commitment == Some(commitment(&colluded, &lease.provider, &salt(lease))) {
        colluded
    } else {
        wrong_result(lease.order_id, &lease.provider)
    }
}

fn reveal_tx(g: &mut Gen<'_>, who: usize, lease: &Lease, salt: [u8; 32]) -> Vec<u8> {
    let msg = AuctionMsg::RevealResult(MsgRevealResult {
        lease_id: lease.id,
        result_hash: committed_result(g, lease),
        salt,
    });
    g.tx(who, vec![auction(msg)])
}

/// A leased provider commits: honest ones the right result, liars a wrong one, colluders the
/// wrong one they share, lazy ones never.
pub(super) fn commit(g: &mut Gen<'_>) -> Planned {
    let Some((who, lease)) = lease_in(g, LeaseState::Open) else {
        return Planned::NoOp;
    };
    match g.profile(who) {
        Profile::Lazy => Planned::NoOp,
        Profile::Liar => Planned::Txs(vec![commit_tx(g, who, &lease, Committed::Wrong)]),
        Profile::Colluder => Planned::Txs(vec![commit_tx(g, who, &lease, Committed::Colluded)]),
        Profile::Honest | Profile::Silent => {
            Planned::Txs(vec![commit_tx(g, who, &lease, Committed::Right)])
        }
    }
}

/// A provider commits on someone else's lease.
pub(super) fn commit_foreign_lease(g: &mut Gen<'_>) -> Planned {
    let Some((_, lease)) = lease_in(g, LeaseState::Open) else {
        return Planned::NoOp;
    };
    let Some(who) =
        g.actor_where(|g, i| g.addr(i) != lease.provider && g.state.provider(&g.addr(i)).is_some())
    else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![commit_tx(g, who, &lease, Committed::Right)])
}

/// A provider reveals what it committed (silent ones never do).
pub(super) fn reveal(g: &mut Gen<'_>) -> Planned {
    let Some((who, lease)) = lease_in(g, LeaseState::Committed) else {
        return Planned::NoOp;
    };
    if g.profile(who) == Profile::Silent {
        return Planned::NoOp;
    }
    let s = salt(&lease);
    Planned::Txs(vec![reveal_tx(g, who, &lease, s)])
}

/// The provider of a `Comparing` lease states whether the other replicas match: an honest
/// one truthfully (honest results match, drifted or not), a cheat always "yes".
pub(super) fn compare_replicas(g: &mut Gen<'_>) -> Planned {
    let Some((who, lease)) = lease_in(g, LeaseState::Comparing) else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![compare_tx(g, who, &lease)])
}

fn compare_tx(g: &mut Gen<'_>, who: usize, lease: &Lease) -> Vec<u8> {
    let consistent = match g.profile(who) {
        Profile::Liar | Profile::Colluder => true,
        Profile::Honest | Profile::Lazy | Profile::Silent => g
            .leases()
            .iter()
            .filter(|l| l.order_id == lease.order_id && l.state == LeaseState::Comparing)
            .filter_map(|l| l.result_hash)
            .all(|h| is_honest_result(g, lease.order_id, &h)),
    };
    let msg = AuctionMsg::CompareReplicas(MsgCompareReplicas {
        lease_id: lease.id,
        consistent,
    });
    g.tx(who, vec![auction(msg)])
}

/// Revealed, unpaid leases whose output nobody but the provider has fetched yet.
fn unfetched(g: &Gen<'_>) -> Vec<Lease> {
    g.leases()
        .iter()
        .filter(|l| l.result_hash.is_some() && !l.fetched && !l.state.is_final())
        .cloned()
        .collect()
}

/// A client fetched the output of one of its revealed leases and confirms the receipt.
pub(super) fn confirm_receipt(g: &mut Gen<'_>) -> Planned {
    let leases = unfetched(g);
    let Some(lease) = g.rng.pick(&leases).cloned() else {
        return Planned::NoOp;
    };
    let Some(&who) = g.world.index.get(&lease.client) else {
        return Planned::NoOp;
    };
    let msg = AuctionMsg::ConfirmReceipt(MsgConfirmReceipt { lease_id: lease.id });
    Planned::Txs(vec![g.tx(who, vec![auction(msg)])])
}

/// A provider vouches for its own output (refused: only the client's receipt counts).
pub(super) fn confirm_own_output(g: &mut Gen<'_>) -> Planned {
    let leases = unfetched(g);
    let Some(lease) = g.rng.pick(&leases).cloned() else {
        return Planned::NoOp;
    };
    let Some(&who) = g.world.index.get(&lease.provider) else {
        return Planned::NoOp;
    };
    let msg = AuctionMsg::ConfirmReceipt(MsgConfirmReceipt { lease_id: lease.id });
    Planned::Txs(vec![g.tx(who, vec![auction(msg)])])
}

/// A provider reveals with the wrong salt.
pub(super) fn reveal_wrong_salt(g: &mut Gen<'_>) -> Planned {
    let Some((who, lease)) = lease_in(g, LeaseState::Committed) else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![reveal_tx(g, who, &lease, [0; 32])])
}

/// A validator withdraws its accrued rewards.
pub(super) fn withdraw_rewards(g: &mut Gen<'_>) -> Planned {
    let Some(who) = g.actor_where(|g, i| g.state.reward(&g.addr(i)) > 0) else {
        return Planned::NoOp;
    };
    let msg = AuctionMsg::WithdrawRewards(MsgWithdrawRewards {});
    Planned::Txs(vec![g.tx(who, vec![auction(msg)])])
}

/// Liveness phase: every provider commits the right result on each open lease and reveals
/// each committed one.
pub fn drain(g: &mut Gen<'_>) -> Vec<Vec<u8>> {
    let mut txs = Vec::new();
    for (who, lease) in our_leases(g, LeaseState::Open) {
        txs.push(commit_tx(g, who, &lease, Committed::Right));
    }
    for (who, lease) in our_leases(g, LeaseState::Committed) {
        let s = salt(&lease);
        txs.push(reveal_tx(g, who, &lease, s));
    }
    for (who, lease) in our_leases(g, LeaseState::Comparing) {
        if g.state.comparison(lease.id).is_none() {
            txs.push(compare_tx(g, who, &lease));
        }
    }
    txs
}
