use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::judge::record_comparison;
use crate::{AuctionError, AuctionRead, LeaseState, MsgCompareReplicas};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgCompareReplicas,
) -> Result<(), AuctionError> {
    let lease = state
        .lease(msg.lease_id)
        .ok_or(AuctionError::UnknownLease(msg.lease_id))?;
    if lease.provider != *signer {
        return Err(AuctionError::NotLeaseProvider(*signer));
    }
    if lease.state != LeaseState::Comparing {
        return Err(AuctionError::WrongLeaseState {
            id: lease.id,
            state: lease.state,
        });
    }
    if state.comparison(lease.id).is_some() {
        return Err(AuctionError::AlreadyCompared(lease.id));
    }
    record_comparison(state, ctx, &lease, msg.consistent)
}
