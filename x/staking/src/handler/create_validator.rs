use gpuchain_bank::BankWrite;
use gpuchain_types::{Address, BlockCtx, StateWrite};

use super::{can_pay, positive};
use crate::{
    consensus_address, module_account, validation, MsgCreateValidator, StakingError, StakingParams,
    StakingRead, StakingWrite, Validator, ValidatorCreatedEvent,
};

pub(super) fn check_stateless(
    msg: &MsgCreateValidator,
    params: &StakingParams,
) -> Result<(), StakingError> {
    validation::consensus_key(&msg.consensus_pubkey)?;
    validation::moniker(&msg.moniker, params)?;
    positive(msg.self_bond)
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgCreateValidator,
) -> Result<(), StakingError> {
    create(state, ctx.height, signer, msg)
}

/// Shared with genesis: every stateful check, then the bond and the records.
pub(crate) fn create(
    state: &mut impl StateWrite,
    height: u64,
    signer: &Address,
    msg: &MsgCreateValidator,
) -> Result<(), StakingError> {
    let params = state.staking_params();
    if state.validator(signer).is_some() {
        return Err(StakingError::ValidatorExists(*signer));
    }
    let consensus_address = consensus_address(&msg.consensus_pubkey);
    if state
        .validator_by_consensus_address(&consensus_address)
        .is_some()
    {
        return Err(StakingError::ConsensusKeyInUse(hex::encode(
            consensus_address,
        )));
    }
    if msg.self_bond < params.min_self_bond {
        return Err(StakingError::BelowMinSelfBond {
            bond: msg.self_bond,
            min: params.min_self_bond,
        });
    }
    can_pay(state, signer, msg.self_bond)?;
    state.transfer(signer, &module_account::bonded_pool(), msg.self_bond)?;
    let validator = Validator {
        operator: *signer,
        consensus_pubkey: msg.consensus_pubkey,
        consensus_address,
        moniker: msg.moniker.clone(),
        bonded: msg.self_bond,
        jailed: false,
        jailed_until: 0,
        tombstoned: false,
        created_height: height,
    };
    state.put_validator(&validator);
    state.emit(
        ValidatorCreatedEvent {
            operator: *signer,
            consensus_address: hex::encode(consensus_address),
            bonded: msg.self_bond,
        }
        .into(),
    );
    Ok(())
}
