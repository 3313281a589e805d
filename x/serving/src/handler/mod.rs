//! Message handlers: `check_stateless` (CheckTx and before execution) and `execute` (on a
//! fork that is dropped on error, so a failed message changes nothing).

mod appeal;
mod bid;
mod claim;
mod end;
mod judge;
pub(crate) mod models;
mod open;
mod report;

use gpuchain_types::{Address, BlockCtx, StateRead, StateWrite};

use crate::{ServingError, ServingLease, ServingMsg, ServingParams, ServingRead};

/// Who may act on a lease with a message.
#[derive(Clone, Copy)]
enum Party {
    /// Its provider (claims, heartbeats, appeals of `faulty` verdicts).
    Provider,
    /// Its client (liveness reports, appeals of `honest` verdicts).
    Client,
    /// Either (reveals).
    Either,
}

/// Lease `id`, when `signer` is the party that may act on it; otherwise the error says who may.
fn lease_for(
    state: &impl StateRead,
    id: u64,
    signer: &Address,
    party: Party,
) -> Result<ServingLease, ServingError> {
    let lease = state
        .serving_lease(id)
        .ok_or(ServingError::UnknownLease(id))?;
    let (allowed, who) = match party {
        Party::Provider => (lease.provider == *signer, "the lease's provider"),
        Party::Client => (lease.client == *signer, "the lease's client"),
        Party::Either => (
            lease.provider == *signer || lease.client == *signer,
            "the lease's provider or client",
        ),
    };
    if allowed {
        Ok(lease)
    } else {
        Err(ServingError::NotAllowed {
            signer: *signer,
            allowed: who,
        })
    }
}

/// Checks what needs no state.
pub fn check_stateless(msg: &ServingMsg, params: &ServingParams) -> Result<(), ServingError> {
    match msg {
        ServingMsg::Open(m) => open::check(m, params),
        ServingMsg::Bid(m) if m.price == 0 => Err(ServingError::ZeroPrice),
        ServingMsg::Bid(m) if !crate::is_endpoint_url(&m.endpoint) => {
            Err(ServingError::BadEndpoint(m.endpoint.clone()))
        }
        ServingMsg::Claim(m)
            if m.count == 0 || m.units == 0 || m.end_seq.saturating_sub(m.first_seq) < m.count =>
        {
            Err(ServingError::EmptyClaim)
        }
        ServingMsg::Reveal(m) => judge::check_reveal(m, params),
        ServingMsg::Models(m) => models::check(m),
        _ => Ok(()),
    }
}

/// Runs `msg` signed by `signer`.
pub fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &ServingMsg,
) -> Result<(), ServingError> {
    match msg {
        ServingMsg::Open(m) => open::execute(state, ctx, signer, m),
        ServingMsg::Bid(m) => bid::execute(state, ctx, signer, m),
        ServingMsg::Claim(m) => claim::execute(state, ctx, signer, m),
        ServingMsg::End(m) => end::execute(state, ctx, signer, m),
        ServingMsg::Report(m) => report::report(state, ctx, signer, m),
        ServingMsg::Heartbeat(m) => report::heartbeat(state, ctx, signer, m),
        ServingMsg::Reveal(m) => judge::reveal(state, ctx, signer, m),
        ServingMsg::Verdict(m) => judge::verdict(state, ctx, signer, m),
        ServingMsg::Appeal(m) => appeal::execute(state, ctx, signer, m),
        ServingMsg::Recuse(m) => judge::recuse(state, ctx, signer, m),
        ServingMsg::Models(m) => models::execute(state, signer, m),
    }
}
