//! `check_stateless` is pure; `execute` runs on a fork of state and does every stateful
//! check itself before its first write.

use gpuchain_staking::StakingRead;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    check_name, Plan, UpgradeError, UpgradeMsg, UpgradeRead, UpgradeScheduledEvent,
    UpgradeSignalEvent, UpgradeWrite, MIN_UPGRADE_DELAY_BLOCKS,
};

/// Checks that need no state.
pub fn check_stateless(msg: &UpgradeMsg) -> Result<(), UpgradeError> {
    match msg {
        UpgradeMsg::Signal(m) => check_name(&m.name),
        UpgradeMsg::Withdraw(_) => Ok(()),
    }
}

/// Executes `msg` signed by `signer` in the block described by `ctx`.
pub fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &UpgradeMsg,
) -> Result<(), UpgradeError> {
    match msg {
        UpgradeMsg::Signal(m) => signal(
            state,
            ctx,
            signer,
            Plan {
                name: m.name.clone(),
                height: m.height,
            },
        ),
        UpgradeMsg::Withdraw(_) => withdraw(state, signer),
    }
}

fn signal(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    plan: Plan,
) -> Result<(), UpgradeError> {
    check_name(&plan.name)?;
    let active = state.active_set();
    if !active.iter().any(|v| v.operator == *signer) {
        return Err(UpgradeError::NotAnActiveValidator(*signer));
    }
    let min = ctx
        .height
        .checked_add(MIN_UPGRADE_DELAY_BLOCKS)
        .ok_or(UpgradeError::Overflow)?;
    if plan.height < min {
        return Err(UpgradeError::TooSoon {
            height: plan.height,
            min,
            now: ctx.height,
        });
    }
    if let Some(applied) = state.applied_upgrade(&plan.name) {
        return Err(UpgradeError::AlreadyApplied {
            name: applied.name,
            height: applied.height,
        });
    }
    state.put_upgrade_signal(signer, &plan);

    let mut behind: u128 = 0;
    let mut total: u128 = 0;
    for validator in &active {
        let power = u128::from(validator.power);
        total = total.checked_add(power).ok_or(UpgradeError::Overflow)?;
        if state.upgrade_signal(&validator.operator).as_ref() == Some(&plan) {
            behind = behind.checked_add(power).ok_or(UpgradeError::Overflow)?;
        }
    }
    state.emit(
        UpgradeSignalEvent {
            operator: *signer,
            plan: Some(plan.clone()),
            power: u64::try_from(behind).unwrap_or(u64::MAX),
            total_power: u64::try_from(total).unwrap_or(u64::MAX),
        }
        .into(),
    );
    // Strictly more than two thirds, as CometBFT counts a commit.
    let scheduled = behind.checked_mul(3).ok_or(UpgradeError::Overflow)?
        > total.checked_mul(2).ok_or(UpgradeError::Overflow)?;
    if scheduled {
        // Each plan starts from no signals: a stale vote for an old plan must not count
        // towards a later one.
        state.clear_upgrade_signals();
        state.put_upgrade_plan(&plan);
        state.emit(UpgradeScheduledEvent { plan }.into());
    }
    Ok(())
}

fn withdraw(state: &mut impl StateWrite, signer: &Address) -> Result<(), UpgradeError> {
    if state.upgrade_signal(signer).is_none() {
        return Err(UpgradeError::NoSignal(*signer));
    }
    state.delete_upgrade_signal(signer);
    let total = state
        .active_set()
        .iter()
        .fold(0u64, |sum, v| sum.saturating_add(v.power));
    state.emit(
        UpgradeSignalEvent {
            operator: *signer,
            plan: None,
            power: 0,
            total_power: total,
        }
        .into(),
    );
    Ok(())
}
