use gpuchain_bank::{BankRead, BankWrite};
use gpuchain_staking::{module_account, StakingRead, StakingWrite};
use gpuchain_types::{mul_ppm, Address, Amount, BlockCtx, StateWrite};

use crate::{
    FaultKind, JailEvent, SlashEvent, SlashOutcome, SlashReason, SlashRecord, SlashingError,
    SlashingRead, SlashingWrite,
};

/// What proving a fault cost, paid out of the slash before anything else: `amount` to
/// `to` (the verification pool, which paid the verifiers).
#[derive(Clone, Copy, Debug)]
pub struct FaultCosts {
    /// Receiver.
    pub to: Address,
    /// ugpu; the slash pays at most all of itself.
    pub amount: Amount,
}

/// Slashes a provider for a proven `reason`: takes the fault's ppm of its bond, pays `costs`
/// out of it first, refunds `client_share_ppm` of the rest to `harmed_client` (for a wrong
/// result only: [`FaultKind::pays_the_client`]), pays
/// `prover_share_ppm` of the rest to `prover` (burned when there is none), burns what is
/// left including rounding, and jails the provider for `provider_jail_blocks` so it cannot
/// bid. Called by the market and verification modules. Either everything happens or
/// nothing does.
pub fn slash_provider(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    provider: &Address,
    reason: FaultKind,
    harmed_client: &Address,
    prover: Option<&Address>,
    costs: Option<FaultCosts>,
) -> Result<SlashOutcome, SlashingError> {
    let params = state.slashing_params();
    let mut record = state
        .provider(provider)
        .ok_or(SlashingError::UnknownProvider(*provider))?;
    let outcome = split(
        record.bonded,
        params.fault_slash_ppm(reason),
        &params,
        (reason.pays_the_client(), prover.is_some()),
        costs.map_or(0, |c| c.amount),
    )?;
    let pool = module_account::bonded_pool();
    let available = state.balance(&pool);
    if available < outcome.slashed {
        return Err(SlashingError::PoolShortfall {
            available,
            required: outcome.slashed,
        });
    }
    let bonded = record
        .bonded
        .checked_sub(outcome.slashed)
        .ok_or(SlashingError::Overflow)?;
    let jail_end = ctx
        .height
        .checked_add(params.provider_jail_blocks)
        .ok_or(SlashingError::Overflow)?;
    let jailed_until = record.jailed_until.max(jail_end);

    if let Some(c) = costs.filter(|_| outcome.to_costs > 0) {
        state.transfer(&pool, &c.to, outcome.to_costs)?;
    }
    if outcome.to_client > 0 {
        state.transfer(&pool, harmed_client, outcome.to_client)?;
    }
    if let Some(prover) = prover.filter(|_| outcome.to_prover > 0) {
        state.transfer(&pool, prover, outcome.to_prover)?;
    }
    if outcome.burned > 0 {
        state.burn(&pool, outcome.burned)?;
    }
    record.bonded = bonded;
    record.jailed_until = jailed_until;
    state.put_provider(&record);
    let slash = state.add_slash_record(SlashRecord {
        id: 0,
        height: ctx.height,
        subject: *provider,
        reason: SlashReason::Provider(reason),
        outcome,
        client: Some(*harmed_client),
        prover: prover.copied(),
        jailed_until,
        tombstoned: false,
    })?;
    state.emit(SlashEvent { record: slash }.into());
    state.emit(
        JailEvent {
            subject: *provider,
            role: "provider",
            until: jailed_until,
        }
        .into(),
    );
    Ok(outcome)
}

/// The amounts of a slash of `ppm` of `bond` that first pays `costs`, with shares for the
/// client and the prover where they get one; the burn takes every rounding remainder, so
/// the parts always add up to the whole.
fn split(
    bond: u128,
    ppm: u32,
    params: &crate::SlashingParams,
    (to_the_client, has_prover): (bool, bool),
    costs: Amount,
) -> Result<SlashOutcome, SlashingError> {
    let slashed = mul_ppm(bond, ppm).ok_or(SlashingError::Overflow)?;
    let to_costs = costs.min(slashed);
    let rest = slashed.saturating_sub(to_costs);
    let to_client = if to_the_client {
        mul_ppm(rest, params.client_share_ppm).ok_or(SlashingError::Overflow)?
    } else {
        0
    };
    let to_prover = if has_prover {
        mul_ppm(rest, params.prover_share_ppm).ok_or(SlashingError::Overflow)?
    } else {
        0
    };
    let burned = rest
        .checked_sub(to_client)
        .and_then(|rest| rest.checked_sub(to_prover))
        .ok_or(SlashingError::Overflow)?;
    Ok(SlashOutcome {
        slashed,
        to_costs,
        to_client,
        to_prover,
        burned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SlashingParams;

    #[test]
    fn split_parts_sum_exactly_with_the_remainder_burned() {
        let params = SlashingParams::default();
        for bond in [
            0u128,
            1,
            7,
            999,
            1_000_003,
            123_456_789_011,
            u128::MAX / 1_000_000,
        ] {
            for ppm in [0u32, 1, 20_000, 300_000, 1_000_000] {
                for (client, has_prover, costs) in [
                    (true, false, 0),
                    (true, true, 0),
                    (true, true, 5_000),
                    (true, false, u128::MAX),
                    (false, true, 0),
                ] {
                    let o = split(bond, ppm, &params, (client, has_prover), costs).unwrap();
                    assert_eq!(
                        o.to_costs + o.to_client + o.to_prover + o.burned,
                        o.slashed,
                        "{bond} {ppm}"
                    );
                    assert!(o.slashed <= bond);
                    assert_eq!(o.to_costs, costs.min(o.slashed));
                    if !has_prover {
                        assert_eq!(o.to_prover, 0);
                    }
                    if !client {
                        assert_eq!(o.to_client, 0);
                    }
                }
            }
        }
        let o = split(1_000_003, 300_000, &params, (true, true), 0).unwrap();
        // 300_000 slashed (rounded down from 300_000.9); half to the client, 30% to the prover.
        assert_eq!(
            o,
            SlashOutcome {
                slashed: 300_000,
                to_costs: 0,
                to_client: 150_000,
                to_prover: 90_000,
                burned: 60_000
            }
        );
        let o = split(33, 1_000_000, &params, (true, true), 0).unwrap();
        assert_eq!(
            o,
            SlashOutcome {
                slashed: 33,
                to_costs: 0,
                to_client: 16,
                to_prover: 9,
                burned: 8
            }
        );
        // The costs come first; the shares apply to what is left.
        let o = split(1_000_000, 300_000, &params, (true, true), 100_000).unwrap();
        assert_eq!(
            o,
            SlashOutcome {
                slashed: 300_000,
                to_costs: 100_000,
                to_client: 100_000,
                to_prover: 60_000,
                burned: 40_000
            }
        );
    }
}
