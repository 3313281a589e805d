use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::judge::finish;
use crate::{AuctionError, AuctionRead, LeaseState, MsgReleaseLease};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgReleaseLease,
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(msg.lease_id)
        .ok_or(AuctionError::UnknownLease(msg.lease_id))?;
    if lease.provider != *signer {
        return Err(AuctionError::NotLeaseProvider(*signer));
    }
    if !matches!(lease.state, LeaseState::Open | LeaseState::Committed) {
        return Err(AuctionError::WrongLeaseState {
            id: lease.id,
            state: lease.state,
        });
    }
    if ctx.height > lease.deadline_height {
        return Err(AuctionError::ReleaseTooLate {
            deadline: lease.deadline_height,
            height: ctx.height,
        });
    }
    finish(state, ctx, &mut lease, LeaseState::Released, None)
}
