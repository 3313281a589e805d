//! The validator penalty shared by evidence and downtime: burn a share of the bond (and of
//! self-bond that was still bonded at the infraction), jail, maybe tombstone, record.

use gpuchain_bank::{BankRead, BankWrite};
use gpuchain_staking::{module_account, StakingWrite, UnbondingEntry, Validator};
use gpuchain_types::{mul_ppm, Amount, BlockCtx, Ppm, StateWrite};

use crate::{
    JailEvent, SlashEvent, SlashOutcome, SlashReason, SlashRecord, SlashingError, SlashingWrite,
    TombstoneEvent,
};

/// How a validator is punished.
pub(crate) struct Penalty<'a> {
    /// Share of the bond (and of `unbonding`) burned.
    pub(crate) ppm: Ppm,
    /// Recorded reason.
    pub(crate) reason: SlashReason,
    /// Jail end (`u64::MAX` with `tombstone`).
    pub(crate) jailed_until: u64,
    /// Jail for good.
    pub(crate) tombstone: bool,
    /// Unbonding entries that were still bonded at the infraction: they lose `ppm` too.
    pub(crate) unbonding: &'a [UnbondingEntry],
}

/// Burns `ppm` of `validator`'s bond and of the listed unbonding entries, and jails it until
/// `jailed_until`; with `tombstone` it is jailed for good. All checks come before the first
/// write.
pub(crate) fn punish_validator(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut validator: Validator,
    penalty: &Penalty<'_>,
) -> Result<SlashRecord, SlashingError> {
    let Penalty {
        ppm,
        reason,
        jailed_until,
        tombstone,
        unbonding,
    } = *penalty;
    let bonded_cut = mul_ppm(validator.bonded, ppm).ok_or(SlashingError::Overflow)?;
    let cuts: Vec<(&UnbondingEntry, Amount)> = unbonding
        .iter()
        .map(|e| mul_ppm(e.amount, ppm).map(|cut| (e, cut)))
        .collect::<Option<_>>()
        .ok_or(SlashingError::Overflow)?;
    let unbonding_cut = cuts
        .iter()
        .try_fold(0u128, |acc, (_, cut)| acc.checked_add(*cut))
        .ok_or(SlashingError::Overflow)?;
    let slashed = bonded_cut
        .checked_add(unbonding_cut)
        .ok_or(SlashingError::Overflow)?;
    for (pool, required) in [
        (module_account::bonded_pool(), bonded_cut),
        (module_account::unbonding_pool(), unbonding_cut),
    ] {
        let available = state.balance(&pool);
        if available < required {
            return Err(SlashingError::PoolShortfall {
                available,
                required,
            });
        }
    }
    let bonded = validator
        .bonded
        .checked_sub(bonded_cut)
        .ok_or(SlashingError::Overflow)?;
    if bonded_cut > 0 {
        state.burn(&module_account::bonded_pool(), bonded_cut)?;
    }
    if unbonding_cut > 0 {
        state.burn(&module_account::unbonding_pool(), unbonding_cut)?;
    }
    for (entry, cut) in cuts {
        state.set_unbonding_amount(entry, entry.amount.saturating_sub(cut));
    }
    validator.bonded = bonded;
    validator.jailed = true;
    validator.jailed_until = jailed_until;
    validator.tombstoned |= tombstone;
    state.put_validator(&validator);
    let record = state.add_slash_record(SlashRecord {
        id: 0,
        height: ctx.height,
        subject: validator.operator,
        reason,
        outcome: SlashOutcome {
            slashed,
            to_costs: 0,
            to_client: 0,
            to_prover: 0,
            burned: slashed,
        },
        client: None,
        prover: None,
        jailed_until,
        tombstoned: tombstone,
    })?;
    state.emit(
        SlashEvent {
            record: record.clone(),
        }
        .into(),
    );
    state.emit(
        JailEvent {
            subject: validator.operator,
            role: "validator",
            until: jailed_until,
        }
        .into(),
    );
    if tombstone {
        state.emit(
            TombstoneEvent {
                operator: validator.operator,
                consensus_address: hex::encode(validator.consensus_address),
            }
            .into(),
        );
    }
    Ok(record)
}
