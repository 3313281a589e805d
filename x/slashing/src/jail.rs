//! The validator penalty shared by evidence and downtime: burn a share of the bond from the
//! bonded pool, jail, maybe tombstone, record.

use gpuchain_bank::{BankRead, BankWrite};
use gpuchain_staking::{module_account, StakingWrite, Validator};
use gpuchain_types::{mul_ppm, BlockCtx, Ppm, StateWrite};

use crate::{
    JailEvent, SlashEvent, SlashOutcome, SlashReason, SlashRecord, SlashingError, SlashingWrite,
    TombstoneEvent,
};

/// Burns `ppm` of `validator`'s bond and jails it until `jailed_until`; with `tombstone` it
/// is jailed for good. All checks come before the first write.
pub(crate) fn punish_validator(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    mut validator: Validator,
    ppm: Ppm,
    reason: SlashReason,
    jailed_until: u64,
    tombstone: bool,
) -> Result<SlashRecord, SlashingError> {
    let slashed = mul_ppm(validator.bonded, ppm).ok_or(SlashingError::Overflow)?;
    let pool = module_account::bonded_pool();
    let available = state.balance(&pool);
    if available < slashed {
        return Err(SlashingError::PoolShortfall {
            available,
            required: slashed,
        });
    }
    let bonded = validator
        .bonded
        .checked_sub(slashed)
        .ok_or(SlashingError::Overflow)?;
    if slashed > 0 {
        state.burn(&pool, slashed)?;
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
