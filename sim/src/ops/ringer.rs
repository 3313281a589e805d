//! Ringer challenges: a verifier commits `(expected output, salt)`, posts an order whose
//! right output it therefore knows, and reveals once every lease is judged. Honest verifiers
//! commit the right output, so liar providers are faulted and honest ones pass; liar
//! verifiers commit a wrong one, so honest providers are faulted and must appeal. Faulty
//! reveals (wrong salt) are refused.

use gpuchain_auction::{AuctionMsg, Order};
use gpuchain_tx::Msg;
use gpuchain_verify::{
    challenge_commitment, Challenge, MsgCommitChallenge, MsgRevealChallenge, VerifyMsg, VerifyRead,
};

use super::auction::{expected_output, job, order_msg};
use super::verify::verifier_actor;
use super::{Gen, Planned};
use crate::actors::Profile;

/// A ringer the simulation planted, from commit to reveal.
#[derive(Clone, Debug)]
pub struct Ringer {
    /// The verifier (actor index).
    pub verifier: usize,
    /// Seed of the ringer order's job.
    pub seed: u64,
    /// What the verifier committed as the right output.
    pub expected: [u8; 32],
    /// The committed salt.
    pub salt: [u8; 32],
    /// Height of the block the commit was sent in.
    pub sent_at: u64,
    /// Whether its order has been posted.
    pub order_posted: bool,
}

impl Ringer {
    fn commitment(&self, g: &Gen<'_>) -> [u8; 32] {
        challenge_commitment(&g.addr(self.verifier), &self.expected, &self.salt)
    }

    /// Its challenge among `open` (the challenges on chain), once committed and until
    /// revealed or expired.
    fn challenge(&self, g: &Gen<'_>, open: &[Challenge]) -> Option<Challenge> {
        let (owner, commitment) = (g.addr(self.verifier), self.commitment(g));
        open.iter()
            .find(|c| c.verifier == owner && c.commitment == commitment)
            .cloned()
    }

    /// Its order on chain, once posted.
    fn order(&self, g: &Gen<'_>) -> Option<Order> {
        let (client, job) = (g.addr(self.verifier), job(self.seed));
        g.orders()
            .iter()
            .find(|o| o.client == client && o.job == job)
            .cloned()
    }
}

fn verify(m: VerifyMsg) -> Msg {
    Msg::Verify(m)
}

/// A verifier commits a ringer. Forgets ringers whose challenge is gone (revealed or
/// expired) or never landed.
pub(super) fn commit(g: &mut Gen<'_>) -> Planned {
    let ringers = std::mem::take(&mut g.world.ringers);
    let open = g.state.challenges();
    let kept = ringers
        .into_iter()
        .filter(|r| r.sent_at.saturating_add(2) >= g.height || r.challenge(g, &open).is_some())
        .collect();
    g.world.ringers = kept;
    let Some((who, _)) = verifier_actor(g) else {
        return Planned::NoOp;
    };
    let seed = g.rng.next_u64();
    let right = expected_output(&job(seed));
    let expected = match g.profile(who) {
        Profile::Liar => *blake3::hash(&right).as_bytes(),
        _ => right,
    };
    let ringer = Ringer {
        verifier: who,
        seed,
        expected,
        salt: *blake3::hash(&[b"ringer".as_slice(), &seed.to_le_bytes()].concat()).as_bytes(),
        sent_at: g.height,
        order_posted: false,
    };
    let commitment = ringer.commitment(g);
    g.world.ringers.push(ringer);
    let msg = VerifyMsg::CommitChallenge(MsgCommitChallenge { commitment });
    Planned::Txs(vec![g.tx(who, vec![verify(msg)])])
}

/// A verifier whose challenge is on chain posts the ringer order.
pub(super) fn post_order(g: &mut Gen<'_>) -> Planned {
    let open = g.state.challenges();
    let ready: Vec<usize> = (0..g.world.ringers.len())
        .filter(|&i| {
            let r = &g.world.ringers[i];
            !r.order_posted && r.challenge(g, &open).is_some_and(|c| c.height < g.height)
        })
        .collect();
    let Some(&i) = g.rng.pick(&ready) else {
        return Planned::NoOp;
    };
    let max = u128::from(g.rng.range(100_000, 2_000_000));
    let mut msg = order_msg(g, max);
    let ringer = &mut g.world.ringers[i];
    ringer.order_posted = true;
    let (who, seed) = (ringer.verifier, ringer.seed);
    msg.job = job(seed);
    Planned::Txs(vec![
        g.tx(who, vec![Msg::Auction(AuctionMsg::PostOrder(msg))])
    ])
}

/// A ringer whose order is on chain, with its challenge and order.
fn revealable(g: &mut Gen<'_>) -> Option<(Ringer, Challenge, Order)> {
    let open = g.state.challenges();
    let candidates: Vec<(Ringer, Challenge, Order)> = g
        .world
        .ringers
        .iter()
        .filter(|r| r.order_posted)
        .filter_map(|r| Some((r.clone(), r.challenge(g, &open)?, r.order(g)?)))
        .collect();
    g.rng.pick(&candidates).cloned()
}

fn reveal_tx(g: &mut Gen<'_>, r: &Ringer, c: &Challenge, o: &Order, salt: [u8; 32]) -> Vec<u8> {
    let msg = VerifyMsg::RevealChallenge(MsgRevealChallenge {
        challenge_id: c.id,
        order_id: o.id,
        expected_output_hash: r.expected,
        salt,
    });
    g.tx(r.verifier, vec![verify(msg)])
}

/// The verifier reveals (refused until every lease of the order is judged).
pub(super) fn reveal(g: &mut Gen<'_>) -> Planned {
    let Some((r, c, o)) = revealable(g) else {
        return Planned::NoOp;
    };
    Planned::Txs(vec![reveal_tx(g, &r, &c, &o, r.salt)])
}

/// A reveal with the wrong salt: refused, and the challenge stays open.
pub(super) fn reveal_wrong_salt(g: &mut Gen<'_>) -> Planned {
    let Some((r, c, o)) = revealable(g) else {
        return Planned::NoOp;
    };
    let wrong = *blake3::hash(&r.salt).as_bytes();
    Planned::Txs(vec![reveal_tx(g, &r, &c, &o, wrong)])
}
