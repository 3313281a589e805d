//! Verifiers for other modules' judgements (serving audits): the same bond-weighted draw
//! that assigns market cases, the open-case count that keeps a serving verifier's bond in
//! place, and the slashes for a missed or overturned verdict. Other modules decide what is
//! judged and when; this module decides who may judge and what a wrong judge loses.

use gpuchain_bank::BankRead;
use gpuchain_types::{Address, BlockCtx, StateRead, StateWrite};

use crate::settle::{release as release_case, slash_verifier, Offence};
use crate::{VerifyError, VerifyRead, VerifyWrite};

/// A verifier drawn by bond for `subject` under `purpose` in this block, among the eligible
/// verifiers that are not in `parties`, not funded first by a party and did not fund one
/// first, and not in `served`. `None` when nobody is eligible.
pub fn draw(
    state: &impl StateRead,
    ctx: &BlockCtx,
    purpose: &str,
    subject: &[u8],
    parties: &[Address],
    served: &[Address],
) -> Option<Address> {
    draw_among(state, ctx, (purpose, subject), parties, served, |_| true)
}

/// [`draw`] among the verifiers `admits` takes (those that judge a claim's model, say).
pub fn draw_among(
    state: &impl StateRead,
    ctx: &BlockCtx,
    (purpose, subject): (&str, &[u8]),
    parties: &[Address],
    served: &[Address],
    admits: impl Fn(&Address) -> bool,
) -> Option<Address> {
    let candidates = candidates(state, ctx.height, parties, served, admits);
    let total = candidates
        .iter()
        .try_fold(0u128, |sum, (_, bond)| sum.checked_add(*bond))
        .filter(|t| *t > 0)?;
    let seed = ctx.draw(purpose, subject);
    let first = seed.first_chunk::<16>()?;
    let mut r = u128::from_be_bytes(*first).checked_rem(total)?;
    for (verifier, bond) in candidates {
        match r.checked_sub(bond) {
            Some(rest) => r = rest,
            None => return Some(verifier),
        }
    }
    None
}

/// Whom [`draw_among`] draws from at `height`, with their bonds: the eligible verifiers
/// `admits` takes that are not in `parties`, not funded first by a party and did not fund
/// one first, and not in `served`.
pub fn candidates(
    state: &impl StateRead,
    height: u64,
    parties: &[Address],
    served: &[Address],
    admits: impl Fn(&Address) -> bool,
) -> Vec<(Address, u128)> {
    let mut excluded = parties.to_vec();
    excluded.extend(parties.iter().filter_map(|p| state.funder(p)));
    state
        .eligible_verifiers(height)
        .into_iter()
        .map(|v| (v.operator, v.bonded))
        .filter(|(a, _)| !excluded.contains(a) && !served.contains(a) && admits(a))
        // Funded first by a party, not merely by whoever funded a party: a shared funder (an
        // exchange's hot wallet) would let a provider funded from it exclude every verifier
        // funded from it, and with none left an audit falls back to acceptance. One owner
        // funding both through an intermediary is drawn with its share of verifier bond.
        .filter(|(a, _)| state.funder(a).is_none_or(|f| !parties.contains(&f)))
        .collect()
}

/// Counts a judgement `verifier` was given, so that it cannot unbond below the minimum
/// before its verdict is settled.
pub fn engage(state: &mut impl StateWrite, verifier: &Address) -> Result<(), VerifyError> {
    let mut record = state
        .verifier(verifier)
        .ok_or(VerifyError::NotAVerifier(*verifier))?;
    record.open_cases = record
        .open_cases
        .checked_add(1)
        .ok_or(VerifyError::Overflow)?;
    state.put_verifier(&record);
    Ok(())
}

/// Its part in a judgement is over.
pub fn release(state: &mut impl StateWrite, verifier: &Address) {
    release_case(state, verifier);
}

/// Counts a verdict posted on time.
pub fn count_verdict(state: &mut impl StateWrite, verifier: &Address) {
    if let Some(mut record) = state.verifier(verifier) {
        record.verdicts = record.verdicts.saturating_add(1);
        state.put_verifier(&record);
    }
}

/// What a verifier did wrong in another module's judgement.
#[derive(Clone, Copy, Debug)]
pub enum Misjudgement {
    /// No verdict by the deadline.
    Missed,
    /// A verdict the majority overturned; the harmed party gets the harmed share.
    Overturned {
        /// Who the wrong verdict went against.
        harmed: Address,
    },
}

/// Slashes and jails `verifier` as a market case would (`verifier_miss_slash_ppm` or
/// `verifier_wrong_slash_ppm` of its bond); `subject` names the judgement in the event.
pub fn slash(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    verifier: &Address,
    what: Misjudgement,
    subject: u64,
) -> Result<(), VerifyError> {
    let offence = match what {
        Misjudgement::Missed => Offence::Missed,
        Misjudgement::Overturned { harmed } => Offence::Wrong(Some(harmed)),
    };
    slash_verifier(state, ctx, verifier, offence, subject).map(|_| ())
}
