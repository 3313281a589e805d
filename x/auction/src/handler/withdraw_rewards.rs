use gpuchain_types::{Address, StateWrite};

use crate::escrow::move_funds;
use crate::{module_account, AuctionError, AuctionRead, AuctionWrite, RewardsWithdrawnEvent};

pub(super) fn execute(state: &mut impl StateWrite, signer: &Address) -> Result<(), AuctionError> {
    let amount = state.reward(signer);
    if amount == 0 {
        return Err(AuctionError::NoRewards(*signer));
    }
    move_funds(state, &module_account::rewards_pool(), signer, amount)?;
    state.put_reward(signer, 0);
    state.emit(
        RewardsWithdrawnEvent {
            validator: *signer,
            amount,
        }
        .into(),
    );
    Ok(())
}
