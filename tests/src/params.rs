//! Chain parameters end-to-end tests start their localnets with, each a step on the
//! `LocalnetSpec` that [`crate::TestNet::start_with`] hands its tweak; a test combines the
//! ones it needs and sets what is its own after them.

use gpuchain_node::localnet::LocalnetSpec;

/// A revealed result is final soon: 5 blocks to reveal, 3 to challenge.
pub fn short_reveal_and_challenge(spec: &mut LocalnetSpec) {
    let p = &mut spec.genesis.auction.params;
    p.reveal_window_blocks = 5;
    p.challenge_window_blocks = 3;
}

/// No audit draw at all (reputation and the deterrence floor off): only disputes and
/// ringers check a result.
pub fn no_audits(spec: &mut LocalnetSpec) {
    let p = &mut spec.genesis.auction.params;
    p.audit_min_ppm = 0;
    p.audit_max_ppm = 0;
    p.audit_deterrence_ppm = 0;
}

/// Every revealed result is audited (audit_min = audit_max = 100%).
pub fn audit_every_result(spec: &mut LocalnetSpec) {
    let p = &mut spec.genesis.auction.params;
    p.audit_min_ppm = 1_000_000;
    p.audit_max_ppm = 1_000_000;
}

/// Verdicts with room for a slow machine: the auction waits `verdict_window` blocks for one,
/// a verifier has `verdict_deadline` blocks to post it, and it stands after a 2-block appeal
/// window.
pub fn verdict_windows(spec: &mut LocalnetSpec, verdict_window: u64, verdict_deadline: u64) {
    spec.genesis.auction.params.verdict_window_blocks = verdict_window;
    let v = &mut spec.genesis.verify.params;
    v.verdict_deadline_blocks = verdict_deadline;
    v.appeal_window_blocks = 2;
}

/// Chain parameters for a market of provider agents alone: short reveal and challenge
/// windows, no audit draw, and a 6-block verdict window, so nothing waits on a verifier.
pub fn providers_only(spec: &mut LocalnetSpec) {
    short_reveal_and_challenge(spec);
    no_audits(spec);
    spec.genesis.auction.params.verdict_window_blocks = 6;
}

/// Chain parameters for a test of disputes with no audit draw, short reveal and challenge
/// windows and long verdict windows, so a slow CI machine never takes a fallback.
pub fn disputes_only(spec: &mut LocalnetSpec) {
    short_reveal_and_challenge(spec);
    no_audits(spec);
    verdict_windows(spec, 400, 200);
}
