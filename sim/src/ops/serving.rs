//! x/serving operations: clients open serving orders, providers bid and claim acknowledged
//! batches of receipts whose answers are right or (for liars and colluders) wrong, audited
//! receipts are revealed (silent providers leave it to the client, or to nobody), drawn
//! verifiers judge by profile, the party a wrong standing verdict goes against appeals it
//! (and now and then a right one), clients report leases and providers answer, clients end
//! orders early; faults: acknowledgements the client never signed, claims replayed. Also the
//! honest reveals, verdicts and heartbeats of the liveness phase.

use ed25519_dalek::Signer;
use gpuchain_serving::receipt::{merkle_proof, BatchAck, Receipt};
use gpuchain_serving::{
    Claim, ClaimStage, ModelRef, MsgAppealServing, MsgBidServing, MsgClaimServing, MsgEndServing,
    MsgOpenServing, MsgReportUnresponsive, MsgRevealReceipt, MsgServingHeartbeat, MsgServingModels,
    MsgServingVerdict, ServingKind, ServingLease, ServingLeaseState, ServingMsg, ServingOrderState,
    ServingRead,
};
use gpuchain_tx::Msg;

use super::{Gen, Planned};
use crate::actors::{Profile, Role, CHAIN_ID, GPU, SERVED_MODEL};

fn serving(m: ServingMsg) -> Msg {
    Msg::Serving(m)
}

/// The request of receipt `seq` of a lease.
fn request(lease: u64, seq: u64) -> Vec<u8> {
    format!("req-{lease}-{seq}").into_bytes()
}

/// The model's answer to it.
fn right_answer(lease: u64, seq: u64) -> Vec<u8> {
    format!("ans-{lease}-{seq}").into_bytes()
}

/// What a provider of `profile` sends back.
fn answer(profile: Profile, lease: u64, seq: u64) -> Vec<u8> {
    match profile {
        Profile::Liar | Profile::Colluder => format!("cheap-{lease}-{seq}").into_bytes(),
        Profile::Honest | Profile::Lazy | Profile::Silent => right_answer(lease, seq),
    }
}

fn receipt(lease: u64, seq: u64, profile: Profile) -> Receipt {
    Receipt {
        lease_id: lease,
        seq,
        request_hash: *blake3::hash(&request(lease, seq)).as_bytes(),
        response_hash: *blake3::hash(&answer(profile, lease, seq)).as_bytes(),
        units: 1_000 + seq % 50,
    }
}

/// Receipts of a lease are produced under its provider's genesis profile, so a reveal in the
/// liveness phase shows what was served in the faulty one.
fn served_profile(g: &Gen<'_>, who: usize) -> Profile {
    g.world
        .actors
        .get(who)
        .map_or(Profile::Honest, |a| a.profile)
}

fn who(g: &Gen<'_>, address: &gpuchain_types::Address) -> Option<usize> {
    g.world.index.get(address).copied()
}

/// A client opens an order for one to three providers.
pub(super) fn open(g: &mut Gen<'_>) -> Planned {
    let Some(client) = g.actor_where(|g, i| {
        g.world
            .actors
            .get(i)
            .is_some_and(|a| a.role == Role::Client)
    }) else {
        return Planned::NoOp;
    };
    let msg = MsgOpenServing {
        model: ModelRef {
            name: "SmolLM2-135M-Instruct".into(),
            blake3: SERVED_MODEL,
            kind: if g.rng.one_in(3) {
                ServingKind::Embedding
            } else {
                ServingKind::Generation
            },
        },
        providers: u32::try_from(g.rng.range(1, 3)).unwrap_or(1),
        max_price: u128::from(g.rng.range(1, 5)) * GPU,
        duration_blocks: g.rng.range(5, 30),
        bid_window_blocks: g.rng.range(1, 3),
        deposit: u128::from(g.rng.range(20, 100)) * GPU,
        region: g.rng.one_in(4).then(|| "eu-west".to_string()),
    };
    Planned::Txs(vec![g.tx(client, vec![serving(ServingMsg::Open(msg))])])
}

/// A provider bids on an order taking bids.
pub(super) fn bid(g: &mut Gen<'_>) -> Planned {
    let open: Vec<(u64, u128)> = g
        .state
        .serving_orders()
        .into_iter()
        .filter(|o| o.state == ServingOrderState::Bidding && g.height <= o.bid_end_height)
        .map(|o| (o.id, o.max_price))
        .collect();
    let Some(&(order_id, max)) = g.rng.pick(&open) else {
        return Planned::NoOp;
    };
    let Some((who, _)) = g.provider_actor() else {
        return Planned::NoOp;
    };
    let price = (max / 2).max(1) + u128::from(g.rng.below(u64::try_from(max / 2).unwrap_or(1)));
    let msg = MsgBidServing {
        order_id,
        price,
        endpoint: format!("http://provider-{who}.sim:8081"),
    };
    Planned::Txs(vec![g.tx(who, vec![serving(ServingMsg::Bid(msg))])])
}

/// Leases of ours that take claims: (provider, client, lease).
fn claimable(g: &Gen<'_>) -> Vec<(usize, usize, ServingLease)> {
    g.state
        .serving_leases()
        .into_iter()
        .filter(|l| l.state != ServingLeaseState::Closed)
        .filter(|l| {
            g.state
                .serving_order(l.order_id)
                .is_some_and(|o| o.state == ServingOrderState::Serving)
        })
        .filter_map(|l| Some((who(g, &l.provider)?, who(g, &l.client)?, l)))
        .collect()
}

fn claim_msg(g: &Gen<'_>, provider: usize, signer: usize, lease: &ServingLease, count: u64) -> Msg {
    let profile = served_profile(g, provider);
    let receipts: Vec<Receipt> = (lease.next_seq..lease.next_seq.saturating_add(count))
        .map(|seq| receipt(lease.id, seq, profile))
        .collect();
    let end = lease.next_seq.saturating_add(count);
    let ack =
        BatchAck::of(CHAIN_ID, lease.id, lease.next_seq, end, &receipts).unwrap_or(BatchAck {
            chain_id: CHAIN_ID.into(),
            lease_id: lease.id,
            first_seq: lease.next_seq,
            end_seq: end,
            count,
            units: 0,
            root: [0; 32],
        });
    let key = g
        .world
        .actors
        .get(signer)
        .map(|a| a.key.clone())
        .unwrap_or_else(|| ed25519_dalek::SigningKey::from_bytes(&[0; 32]));
    serving(ServingMsg::Claim(MsgClaimServing {
        lease_id: lease.id,
        first_seq: ack.first_seq,
        end_seq: ack.end_seq,
        count: ack.count,
        units: ack.units,
        root: ack.root,
        client_key: key.verifying_key().to_bytes(),
        client_signature: key.sign(&ack.sign_bytes()).to_bytes(),
    }))
}

/// A provider claims the next one to four receipts its client acknowledged.
pub(super) fn claim(g: &mut Gen<'_>) -> Planned {
    let leases = claimable(g);
    let Some((provider, client, lease)) = g.rng.pick(&leases).cloned() else {
        return Planned::NoOp;
    };
    let count = g.rng.range(1, 4);
    let msg = claim_msg(g, provider, client, &lease, count);
    Planned::Txs(vec![g.tx(provider, vec![msg])])
}

/// A provider claims with an acknowledgement it signed itself, or replays its last batch:
/// refused.
pub(super) fn forged_claim(g: &mut Gen<'_>) -> Planned {
    let leases = claimable(g);
    let Some((provider, client, mut lease)) = g.rng.pick(&leases).cloned() else {
        return Planned::NoOp;
    };
    let msg = if lease.next_seq > 0 && g.rng.one_in(2) {
        lease.next_seq = lease.next_seq.saturating_sub(1);
        claim_msg(g, provider, client, &lease, 1)
    } else {
        claim_msg(g, provider, provider, &lease, 2)
    };
    Planned::Txs(vec![g.tx(provider, vec![msg])])
}

fn reveal_tx(g: &mut Gen<'_>, revealer: usize, provider: usize, claim: &Claim) -> Option<Vec<u8>> {
    let ClaimStage::AwaitingReveal { index, .. } = claim.stage else {
        return None;
    };
    let profile = served_profile(g, provider);
    let receipts: Vec<Receipt> = (claim.first_seq..claim.first_seq.saturating_add(claim.count))
        .map(|seq| receipt(claim.lease_id, seq, profile))
        .collect();
    let leaves: Vec<[u8; 32]> = receipts.iter().map(Receipt::leaf).collect();
    let position = usize::try_from(index).ok()?;
    let drawn = receipts.get(position)?.clone();
    let msg = MsgRevealReceipt {
        claim_id: claim.id,
        proof: merkle_proof(&leaves, position)?,
        request: request(claim.lease_id, drawn.seq),
        response: answer(profile, claim.lease_id, drawn.seq),
        receipt: drawn,
    };
    Some(g.tx(revealer, vec![serving(ServingMsg::Reveal(msg))]))
}

/// Audited claims of ours waiting for a reveal: (provider, client, claim).
fn awaiting_reveal(g: &Gen<'_>) -> Vec<(usize, usize, Claim)> {
    g.state
        .serving_claims()
        .into_iter()
        .filter(|c| matches!(c.stage, ClaimStage::AwaitingReveal { .. }))
        .filter_map(|c| {
            let lease = g.state.serving_lease(c.lease_id)?;
            Some((who(g, &lease.provider)?, who(g, &lease.client)?, c))
        })
        .collect()
}

/// The audited receipt is revealed: by its provider unless it is silent, else sometimes by
/// the client.
pub(super) fn reveal(g: &mut Gen<'_>) -> Planned {
    let waiting = awaiting_reveal(g);
    let Some((provider, client, claim)) = g.rng.pick(&waiting).cloned() else {
        return Planned::NoOp;
    };
    let revealer = match g.profile(provider) {
        Profile::Silent | Profile::Lazy if g.rng.one_in(3) => client,
        Profile::Silent | Profile::Lazy => return Planned::NoOp,
        _ => provider,
    };
    match reveal_tx(g, revealer, provider, &claim) {
        Some(tx) => Planned::Txs(vec![tx]),
        None => Planned::NoOp,
    }
}

/// Claims judged by one of our verifiers: (verifier, claim, the truth).
fn judging(g: &Gen<'_>) -> Vec<(usize, u64, bool)> {
    g.state
        .serving_claims()
        .into_iter()
        .filter_map(|c| {
            let ClaimStage::Judging(j) = &c.stage else {
                return None;
            };
            let verifier = who(g, &j.assignee?)?;
            let truth = j.response == right_answer(c.lease_id, j.receipt.seq);
            Some((verifier, c.id, truth))
        })
        .collect()
}

fn verdict_tx(g: &mut Gen<'_>, verifier: usize, claim_id: u64, honest: bool) -> Vec<u8> {
    let msg = MsgServingVerdict { claim_id, honest };
    g.tx(verifier, vec![serving(ServingMsg::Verdict(msg))])
}

/// A drawn verifier judges by profile: the truth, its opposite (liars) or nothing (lazy).
pub(super) fn verdict(g: &mut Gen<'_>) -> Planned {
    let cases = judging(g);
    let Some(&(verifier, claim_id, truth)) = g.rng.pick(&cases) else {
        return Planned::NoOp;
    };
    let honest = match g.profile(verifier) {
        Profile::Lazy => return Planned::NoOp,
        Profile::Liar => !truth,
        Profile::Honest | Profile::Silent | Profile::Colluder => truth,
    };
    Planned::Txs(vec![verdict_tx(g, verifier, claim_id, honest)])
}

/// Standing verdicts the party they go against could appeal: (that party, claim, whether
/// the verdict is wrong).
fn appealable(g: &Gen<'_>) -> Vec<(usize, u64, bool)> {
    g.state
        .serving_claims()
        .into_iter()
        .filter_map(|c| {
            let ClaimStage::Standing {
                honest,
                appeal_deadline,
                judgement,
            } = &c.stage
            else {
                return None;
            };
            if g.height > *appeal_deadline {
                return None;
            }
            let lease = g.state.serving_lease(c.lease_id)?;
            let against = if *honest {
                lease.client
            } else {
                lease.provider
            };
            let truth = judgement.response == right_answer(c.lease_id, judgement.receipt.seq);
            Some((who(g, &against)?, c.id, *honest != truth))
        })
        .collect()
}

/// The party a standing verdict goes against appeals it: always when it is wrong (a client
/// knows its answer was cheap, a provider what it served), one time in two when it is
/// right (a bluff that costs the deposit).
pub(super) fn appeal(g: &mut Gen<'_>) -> Planned {
    let cases = appealable(g);
    let Some(&(party, claim_id, wrong)) = g.rng.pick(&cases) else {
        return Planned::NoOp;
    };
    if !wrong && !g.rng.one_in(2) {
        return Planned::NoOp;
    }
    let msg = ServingMsg::Appeal(MsgAppealServing { claim_id });
    Planned::Txs(vec![g.tx(party, vec![serving(msg)])])
}

/// A client reports one of its serving leases.
pub(super) fn report(g: &mut Gen<'_>) -> Planned {
    let leases: Vec<(usize, u64)> = g
        .state
        .serving_leases()
        .into_iter()
        .filter(|l| {
            l.state == ServingLeaseState::Serving
                && l.report_deadline.is_none()
                && g.height <= l.end_height
        })
        .filter_map(|l| Some((who(g, &l.client)?, l.id)))
        .collect();
    let Some(&(client, lease_id)) = g.rng.pick(&leases) else {
        return Planned::NoOp;
    };
    let msg = ServingMsg::Report(MsgReportUnresponsive { lease_id });
    Planned::Txs(vec![g.tx(client, vec![serving(msg)])])
}

/// Reported leases of ours: (provider, lease).
fn reported(g: &Gen<'_>) -> Vec<(usize, u64)> {
    g.state
        .serving_leases()
        .into_iter()
        .filter(|l| l.report_deadline.is_some_and(|d| g.height <= d))
        .filter_map(|l| Some((who(g, &l.provider)?, l.id)))
        .collect()
}

/// A reported provider answers, unless it is silent or lazy.
pub(super) fn heartbeat(g: &mut Gen<'_>) -> Planned {
    let leases = reported(g);
    let Some(&(provider, lease_id)) = g.rng.pick(&leases) else {
        return Planned::NoOp;
    };
    if matches!(g.profile(provider), Profile::Silent | Profile::Lazy) {
        return Planned::NoOp;
    }
    let msg = ServingMsg::Heartbeat(MsgServingHeartbeat { lease_id });
    Planned::Txs(vec![g.tx(provider, vec![serving(msg)])])
}

/// A client ends one of its orders.
pub(super) fn end(g: &mut Gen<'_>) -> Planned {
    let orders: Vec<(usize, u64)> = g
        .state
        .serving_orders()
        .into_iter()
        .filter(|o| o.state != ServingOrderState::Closed)
        .filter_map(|o| Some((who(g, &o.client)?, o.id)))
        .collect();
    let Some(&(client, order_id)) = g.rng.pick(&orders) else {
        return Planned::NoOp;
    };
    let msg = ServingMsg::End(MsgEndServing { order_id });
    Planned::Txs(vec![g.tx(client, vec![serving(msg)])])
}

/// The liveness phase: every audited receipt revealed, every drawn verifier's true verdict,
/// every report answered.
pub fn drain(g: &mut Gen<'_>) -> Vec<Vec<u8>> {
    let mut txs = Vec::new();
    for (provider, _, claim) in awaiting_reveal(g) {
        txs.extend(reveal_tx(g, provider, provider, &claim));
    }
    for (verifier, claim_id, truth) in judging(g) {
        txs.push(verdict_tx(g, verifier, claim_id, truth));
    }
    for (provider, lease_id) in reported(g) {
        let msg = ServingMsg::Heartbeat(MsgServingHeartbeat { lease_id });
        txs.push(g.tx(provider, vec![serving(msg)]));
    }
    txs
}

/// A verifier declares the serving models it judges again: mostly the served model, at times
/// none (its claims' juries are then drawn among the others, or there is no verdict), or the
/// served model beside another.
pub(super) fn models(g: &mut Gen<'_>) -> Planned {
    let Some((verifier, _)) = super::verify::verifier_actor(g) else {
        return Planned::NoOp;
    };
    let models = match g.rng.range(0, 6) {
        0 => Vec::new(),
        1 => vec![[8; 32], SERVED_MODEL],
        _ => vec![SERVED_MODEL],
    };
    let msg = serving(ServingMsg::Models(MsgServingModels { models }));
    Planned::Txs(vec![g.tx(verifier, vec![msg])])
}

/// A verifier names a serving model twice, or more models than a verifier may judge:
/// refused. (A declaration by someone who is not a verifier is refused too, but an earlier
/// transaction of the block may have registered it: the module's tests hold that rule.)
pub(super) fn bad_models(g: &mut Gen<'_>) -> Planned {
    let Some((who, _)) = super::verify::verifier_actor(g) else {
        return Planned::NoOp;
    };
    let models = if g.rng.one_in(2) {
        vec![SERVED_MODEL; 2]
    } else {
        (0..=gpuchain_serving::MAX_JUDGED_MODELS)
            .map(|i| [u8::try_from(i).unwrap_or(u8::MAX); 32])
            .collect()
    };
    let msg = serving(ServingMsg::Models(MsgServingModels { models }));
    Planned::Txs(vec![g.tx(who, vec![msg])])
}
