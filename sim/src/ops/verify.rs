//! x/verify operations: verifiers register, bond and unbond; assigned verifiers post verdicts
//! by profile (honest ones re-execute and find the truth, lazy ones miss their deadline, liars
//! post the opposite); the party a verdict goes against may appeal; faulty verifiers post
//! verdicts they may not (not assigned, twice, not a verifier). Also the honest verdicts of
//! the liveness phase.

use gpuchain_auction::{AuctionRead, Lease};
use gpuchain_serving::{MsgServingModels, ServingMsg};
use gpuchain_tx::Msg;
use gpuchain_verify::{
    Case, CaseStage, MsgAppeal, MsgBondVerifier, MsgRecuse, MsgRegisterVerifier, MsgSubmitVerdict,
    MsgUnbondVerifier, VerdictKind, VerifyMsg, VerifyRead,
};

use super::auction::{is_honest_result, right_result};
use super::{Gen, Planned};
use crate::actors::{Profile, GPU, SERVED_MODEL};

fn verify(m: VerifyMsg) -> Msg {
    Msg::Verify(m)
}

/// A verifier of ours, with its bond.
pub(super) fn verifier_actor(g: &mut Gen<'_>) -> Option<(usize, u128)> {
    let ours: Vec<(usize, u128)> = g
        .state
        .verifiers()
        .into_iter()
        .filter_map(|v| g.world.index.get(&v.operator).map(|&i| (i, v.bonded)))
        .collect();
    g.rng.pick(&ours).copied()
}

/// Someone who is not a verifier yet registers with at least the minimum bond.
pub(super) fn register_verifier(g: &mut Gen<'_>) -> Planned {
    let Some(who) = g.actor_where(|g, i| g.state.verifier(&g.addr(i)).is_none()) else {
        return Planned::NoOp;
    };
    let bond = u128::from(g.rng.range(100, 400)) * GPU;
    let msg = VerifyMsg::RegisterVerifier(MsgRegisterVerifier { bond });
    // With the serving models it judges, as `gpuchain-verifier register` declares them after.
    let models = Msg::Serving(ServingMsg::Models(MsgServingModels {
        models: vec![SERVED_MODEL],
    }));
    Planned::Txs(vec![g.tx(who, vec![verify(msg), models])])
}

/// A verifier adds to its bond.
pub(super) fn bond_verifier(g: &mut Gen<'_>) -> Planned {
    let Some((who, _)) = verifier_actor(g) else {
        return Planned::NoOp;
    };
    let amount = u128::from(g.rng.range(1, 100)) * GPU;
    let msg = VerifyMsg::BondVerifier(MsgBondVerifier { amount });
    Planned::Txs(vec![g.tx(who, vec![verify(msg)])])
}

/// A verifier unbonds part of its bond, sometimes below the minimum (refused while it has
/// open cases; otherwise it stops being drawn).
pub(super) fn unbond_verifier(g: &mut Gen<'_>) -> Planned {
    let Some((who, bonded)) = verifier_actor(g) else {
        return Planned::NoOp;
    };
    let amount = if g.rng.one_in(4) {
        bonded / 2
    } else {
        bonded / 10
    }
    .max(1);
    let msg = VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount });
    Planned::Txs(vec![g.tx(who, vec![verify(msg)])])
}

/// Cases waiting for a verdict from one of our verifiers: (assignee, case).
fn awaiting(g: &Gen<'_>) -> Vec<(usize, Case)> {
    g.state
        .cases()
        .into_iter()
        .filter(|c| c.stage == CaseStage::AwaitingVerdict)
        .filter_map(|c| {
            let who = c.assignee.and_then(|a| g.world.index.get(&a).copied())?;
            Some((who, c))
        })
        .collect()
}

/// The truth about a lease: `faulty` iff its revealed result is not an honest one.
fn truth(g: &Gen<'_>, lease: Option<Lease>, order_id: u64) -> VerdictKind {
    match lease.and_then(|l| l.result_hash) {
        Some(h) if is_honest_result(g, order_id, &h) => VerdictKind::Honest,
        _ => VerdictKind::Faulty,
    }
}

fn verdict_tx(g: &mut Gen<'_>, who: usize, case: &Case, verdict: VerdictKind) -> Vec<u8> {
    let msg = VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
        lease_id: case.lease_id,
        output_hash: right_result(g, case.order_id),
        verdict,
    });
    g.tx(who, vec![verify(msg)])
}

fn opposite(v: VerdictKind) -> VerdictKind {
    match v {
        VerdictKind::Honest => VerdictKind::Faulty,
        VerdictKind::Faulty => VerdictKind::Honest,
    }
}

/// An assigned verifier re-executes and posts its verdict: honest verifiers the truth, liars
/// the opposite, lazy ones nothing (they miss the deadline and are slashed).
pub(super) fn submit_verdict(g: &mut Gen<'_>) -> Planned {
    let cases = awaiting(g);
    let Some((who, case)) = g.rng.pick(&cases).cloned() else {
        return Planned::NoOp;
    };
    let truth = truth(g, g.state.lease(case.lease_id), case.order_id);
    let verdict = match g.profile(who) {
        Profile::Lazy => return Planned::NoOp,
        Profile::Liar => opposite(truth),
        Profile::Honest | Profile::Silent | Profile::Colluder => truth,
    };
    Planned::Txs(vec![verdict_tx(g, who, &case, verdict)])
}

/// The party a first verdict goes against appeals it (a liar provider appeals a right
/// `faulty` too, and loses its deposit).
pub(super) fn appeal(g: &mut Gen<'_>) -> Planned {
    let open: Vec<(usize, Case)> = g
        .state
        .cases()
        .into_iter()
        .filter(|c| c.stage == CaseStage::AppealWindow && c.appellant.is_none())
        .filter_map(|c| {
            let against = match c.verdicts.first()?.verdict {
                VerdictKind::Faulty => c.provider,
                VerdictKind::Honest => c.client,
            };
            g.world.index.get(&against).map(|&i| (i, c))
        })
        .collect();
    let Some((who, case)) = g.rng.pick(&open).cloned() else {
        return Planned::NoOp;
    };
    let msg = VerifyMsg::Appeal(MsgAppeal {
        lease_id: case.lease_id,
    });
    Planned::Txs(vec![g.tx(who, vec![verify(msg)])])
}

/// A verifier that is not the assignee posts a verdict on an awaiting case.
pub(super) fn verdict_not_assigned(g: &mut Gen<'_>) -> Planned {
    let cases = awaiting(g);
    let Some((assignee, case)) = g.rng.pick(&cases).cloned() else {
        return Planned::NoOp;
    };
    let Some(who) = g.actor_where(|g, i| i != assignee && g.state.verifier(&g.addr(i)).is_some())
    else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![verdict_tx(g, who, &case, VerdictKind::Faulty)])
}

/// A verifier posts a second verdict on a case it already gave its verdict on.
pub(super) fn verdict_twice(g: &mut Gen<'_>) -> Planned {
    let posted: Vec<(usize, Case)> = g
        .state
        .cases()
        .into_iter()
        .filter(|c| c.stage != CaseStage::Closed)
        .filter_map(|c| {
            let last = c.verdicts.last()?.verifier;
            g.world.index.get(&last).map(|&i| (i, c))
        })
        .collect();
    let Some((who, case)) = g.rng.pick(&posted).cloned() else {
        return Planned::NoOp;
    };
    let again = case
        .verdicts
        .last()
        .map(|v| opposite(v.verdict))
        .unwrap_or(VerdictKind::Honest);
    Planned::Txs(vec![verdict_tx(g, who, &case, again)])
}

/// Someone who is not a verifier posts a verdict on an awaiting case (or on a lease with
/// no case at all).
pub(super) fn verdict_non_verifier(g: &mut Gen<'_>) -> Planned {
    let Some(who) = g.actor_where(|g, i| g.state.verifier(&g.addr(i)).is_none()) else {
        return Planned::NoOp;
    };
    let cases = awaiting(g);
    let case = match g.rng.pick(&cases).cloned() {
        Some((_, c)) => c,
        None => {
            let leases = g.leases().to_vec();
            let Some(l) = g.rng.pick(&leases).cloned() else {
                return Planned::NoOp;
            };
            fake_case(&l)
        }
    };
    Planned::Txs(vec![verdict_tx(g, who, &case, VerdictKind::Honest)])
}

/// A stand-in case for a lease (only its ids are used to build a verdict).
fn fake_case(l: &Lease) -> Case {
    Case {
        lease_id: l.id,
        order_id: l.order_id,
        provider: l.provider,
        client: l.client,
        round: 0,
        stage: CaseStage::AwaitingVerdict,
        assignee: None,
        deadline_height: 0,
        reassigned: false,
        verdicts: Vec::new(),
        appeal_end_height: None,
        appellant: None,
        deposit: 0,
        served: Vec::new(),
        challenge_id: None,
        outcome: gpuchain_verify::CaseOutcome::Open,
    }
}

/// Liveness phase: every assigned verifier posts the true verdict.
pub fn drain(g: &mut Gen<'_>) -> Vec<Vec<u8>> {
    let mut txs = Vec::new();
    for (who, case) in awaiting(g) {
        let truth = truth(g, g.state.lease(case.lease_id), case.order_id);
        txs.push(verdict_tx(g, who, &case, truth));
    }
    txs
}

/// An assigned verifier of ours that cannot check its case steps down (unslashed; the round
/// is drawn again without it).
pub(super) fn recuse(g: &mut Gen<'_>) -> Planned {
    let cases = awaiting(g);
    let Some((who, case)) = g.rng.pick(&cases).cloned() else {
        return Planned::NoOp;
    };
    let msg = VerifyMsg::Recuse(MsgRecuse {
        lease_id: case.lease_id,
    });
    Planned::Txs(vec![g.tx(who, vec![verify(msg)])])
}
