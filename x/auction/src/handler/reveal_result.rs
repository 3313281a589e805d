use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::judge::{commitment, judge_order};
use crate::{
    AuctionError, AuctionRead, AuctionWrite, LeaseState, MsgRevealResult, ResultRevealedEvent,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgRevealResult,
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(msg.lease_id)
        .ok_or(AuctionError::UnknownLease(msg.lease_id))?;
    if lease.provider != *signer {
        return Err(AuctionError::NotLeaseProvider(*signer));
    }
    if lease.state != LeaseState::Committed {
        return Err(AuctionError::WrongLeaseState {
            id: lease.id,
            state: lease.state,
        });
    }
    if ctx.height > lease.reveal_end_height {
        return Err(AuctionError::RevealTooLate {
            end: lease.reveal_end_height,
        });
    }
    let all_committed = state
        .leases_of_order(lease.order_id)
        .iter()
        .all(|l| l.state != LeaseState::Open);
    if !all_committed && ctx.height <= lease.deadline_height {
        return Err(AuctionError::RevealTooEarly {
            deadline: lease.deadline_height,
        });
    }
    if lease.commitment != Some(commitment(&msg.result_hash, signer, &msg.salt)) {
        return Err(AuctionError::CommitmentMismatch);
    }
    lease.result_hash = Some(msg.result_hash);
    lease.state = LeaseState::Revealed;
    state.put_lease(&lease);
    state.emit(
        ResultRevealedEvent {
            lease_id: lease.id,
            order_id: lease.order_id,
            provider: lease.provider,
            result_hash: hex::encode(msg.result_hash),
        }
        .into(),
    );
    judge_order(state, ctx, lease.order_id)
}
