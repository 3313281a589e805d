use gpuchain_slashing::SlashingRead;
use gpuchain_staking::StakingRead;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::escrow::{audit_reserve, claim_in_window, CLAIMS_PER_WINDOW};
use crate::receipt::BatchAck;
use crate::{
    claim_amount, max_claim, Claim, ClaimStage, MsgClaimServing, ServingClaimEvent, ServingError,
    ServingLeaseState, ServingOrderState, ServingRead, ServingWrite, Timer,
};

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    m: &MsgClaimServing,
) -> Result<(), ServingError> {
    let mut lease = super::lease_for(state, m.lease_id, signer, super::Party::Provider)?;
    let mut order = state
        .serving_order(lease.order_id)
        .ok_or(ServingError::UnknownOrder(lease.order_id))?;
    if lease.state == ServingLeaseState::Closed || order.state != ServingOrderState::Serving {
        return Err(ServingError::LeaseClosed(lease.id));
    }
    if m.first_seq != lease.next_seq {
        return Err(ServingError::WrongSequence {
            lease_id: lease.id,
            expected: lease.next_seq,
            got: m.first_seq,
        });
    }
    let span = m.end_seq.saturating_sub(m.first_seq);
    if m.count == 0 || m.units == 0 || m.count > span {
        return Err(ServingError::EmptyClaim);
    }
    let ack = BatchAck {
        chain_id: ctx.chain_id.clone(),
        lease_id: lease.id,
        first_seq: m.first_seq,
        end_seq: m.end_seq,
        count: m.count,
        units: m.units,
        root: m.root,
    };
    if !ack.is_signed_by(&lease.client, &m.client_key, &m.client_signature) {
        return Err(ServingError::BadAcknowledgement(lease.id));
    }
    let params = state.serving_params();
    let amount =
        claim_amount(m.units, lease.price, lease.model.kind).ok_or(ServingError::Overflow)?;
    if amount == 0 {
        return Err(ServingError::EmptyClaim);
    }
    let bond = state.provider(signer).map_or(0, |p| p.bonded);
    let max = max_claim(
        bond,
        state.slashing_params().wrong_result_slash_ppm,
        params.audit_ppm,
    );
    if amount > max {
        return Err(ServingError::ClaimOverBond { amount, max });
    }
    let (window, past_window) = claim_in_window(
        state.serving_claim_window(signer),
        ctx.height,
        amount,
        max.saturating_mul(CLAIMS_PER_WINDOW),
        &params,
    )?;
    let reserve = audit_reserve(amount, &params)?;
    let held = amount.checked_add(reserve).ok_or(ServingError::Overflow)?;
    order.deposit = order
        .deposit
        .checked_sub(held)
        .ok_or(ServingError::ClaimOverDeposit {
            amount,
            reserve,
            available: order.deposit,
        })?;
    lease.next_seq = m.end_seq;
    lease.units = lease
        .units
        .checked_add(m.units)
        .ok_or(ServingError::Overflow)?;
    lease.open_claims = lease
        .open_claims
        .checked_add(1)
        .ok_or(ServingError::Overflow)?;
    let claim = Claim {
        id: state.next_serving_id("claim")?,
        lease_id: lease.id,
        first_seq: m.first_seq,
        end_seq: m.end_seq,
        count: m.count,
        units: m.units,
        root: m.root,
        amount,
        audit_reserve: reserve,
        height: ctx.height,
        stage: ClaimStage::Posted,
    };
    state.put_serving_order(&order);
    state.put_serving_lease(&lease);
    state.put_serving_claim(&claim);
    state.put_serving_claim_window(signer, &window);
    if past_window {
        state.put_serving_forced_audit(claim.id);
    }
    state.set_serving_timer(ctx.height, Timer::Draw(claim.id));
    state.emit(
        ServingClaimEvent {
            claim_id: claim.id,
            lease_id: lease.id,
            provider: *signer,
            count: m.count,
            units: m.units,
            amount,
        }
        .into(),
    );
    Ok(())
}
