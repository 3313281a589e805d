use gpuchain_types::{Address, StateWrite};

use crate::{AuctionError, AuctionRead, AuctionWrite, MsgConfirmReceipt, ReceiptConfirmedEvent};

/// The client records that it fetched a revealed output; an accepted lease is then paid at
/// its payout height without an availability check.
pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    msg: &MsgConfirmReceipt,
) -> Result<(), AuctionError> {
    let mut lease = state
        .lease(msg.lease_id)
        .ok_or(AuctionError::UnknownLease(msg.lease_id))?;
    if lease.client != *signer {
        return Err(AuctionError::NotOrderClient(*signer));
    }
    if lease.result_hash.is_none() || lease.state.is_final() {
        return Err(AuctionError::WrongLeaseState {
            id: lease.id,
            state: lease.state,
        });
    }
    if lease.fetched {
        return Err(AuctionError::AlreadyConfirmed(lease.id));
    }
    lease.fetched = true;
    state.put_lease(&lease);
    state.emit(
        ReceiptConfirmedEvent {
            lease_id: lease.id,
            order_id: lease.order_id,
            client: lease.client,
        }
        .into(),
    );
    Ok(())
}
