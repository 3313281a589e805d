//! Fee-pool distribution, each end-block: the whole fee pool balance `B` is split into
//! `validators_share_ppm × B` for the active validators, `community_share_ppm × B` for the
//! community pool, and the rest for the verification pool. The validators' part goes to the
//! `rewards_pool` account and is credited to each active validator's operator as
//! `part × power / total_power` (rounded down); the rounding dust, or the whole part when no
//! validator is active, goes to the community pool. Validators withdraw with
//! `MsgWithdrawRewards`.

use gpuchain_bank::module_account::fee_pool;
use gpuchain_bank::BankRead;
use gpuchain_staking::StakingRead;
use gpuchain_types::{mul_ppm, Amount, StateWrite};

use crate::escrow::move_funds;
use crate::{module_account, AuctionError, AuctionRead, AuctionWrite, FeePoolDistributedEvent};

/// Splits the fee pool. Returns the amount distributed.
pub fn distribute_fee_pool(state: &mut impl StateWrite) -> Result<Amount, AuctionError> {
    let total = state.balance(&fee_pool());
    if total == 0 {
        return Ok(0);
    }
    let params = state.auction_params();
    let validators_part =
        mul_ppm(total, params.validators_share_ppm).ok_or(AuctionError::Overflow)?;
    let mut community = mul_ppm(total, params.community_share_ppm).ok_or(AuctionError::Overflow)?;
    let verification = total
        .checked_sub(validators_part)
        .and_then(|r| r.checked_sub(community))
        .ok_or(AuctionError::Overflow)?;
    let active = state.active_set();
    let total_power: u128 = active.iter().map(|m| u128::from(m.power)).sum();
    let mut credited: Amount = 0;
    for member in &active {
        let share = validators_part
            .checked_mul(u128::from(member.power))
            .ok_or(AuctionError::Overflow)?
            .checked_div(total_power)
            .unwrap_or(0);
        if share > 0 {
            let new = state
                .reward(&member.operator)
                .checked_add(share)
                .ok_or(AuctionError::Overflow)?;
            state.put_reward(&member.operator, new);
            credited = credited.checked_add(share).ok_or(AuctionError::Overflow)?;
        }
    }
    let dust = validators_part
        .checked_sub(credited)
        .ok_or(AuctionError::Overflow)?;
    community = community.checked_add(dust).ok_or(AuctionError::Overflow)?;
    move_funds(
        state,
        &fee_pool(),
        &module_account::rewards_pool(),
        credited,
    )?;
    move_funds(
        state,
        &fee_pool(),
        &module_account::community_pool(),
        community,
    )?;
    move_funds(
        state,
        &fee_pool(),
        &module_account::verification_pool(),
        verification,
    )?;
    state.emit(
        FeePoolDistributedEvent {
            amount: total,
            validators: credited,
            community,
            verification,
        }
        .into(),
    );
    Ok(total)
}
