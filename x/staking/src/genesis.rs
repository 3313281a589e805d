use gpuchain_types::{Address, Amount, StateWrite};
use serde::{Deserialize, Serialize};

use crate::handler::{self, create_validator, register_provider};
use crate::{
    end_block, MsgCreateValidator, MsgRegisterProvider, ProviderAttrs, StakingError, StakingMsg,
    StakingParams, StakingWrite, ValidatorUpdate,
};

/// A validator that exists from the first block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisValidator {
    /// Operator account; must hold `self_bond` in the bank genesis.
    pub operator: Address,
    /// ed25519 consensus key, hex.
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub consensus_pubkey: [u8; 32],
    /// Display name.
    pub moniker: String,
    /// ugpu bonded from the operator's genesis balance.
    pub self_bond: Amount,
}

/// A provider that exists from the first block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisProvider {
    /// Operator account; must hold `bond` in the bank genesis.
    pub operator: Address,
    /// Declared hardware.
    pub attrs: ProviderAttrs,
    /// ugpu bonded from the operator's genesis balance.
    pub bond: Amount,
}

/// Staking's part of the genesis file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StakingGenesis {
    /// Module parameters.
    #[serde(default)]
    pub params: StakingParams,
    /// Initial validators.
    #[serde(default)]
    pub validators: Vec<GenesisValidator>,
    /// Initial providers.
    #[serde(default)]
    pub providers: Vec<GenesisProvider>,
}

impl StakingGenesis {
    /// Writes the parameters, moves every self-bond and provider bond from the operators'
    /// genesis balances (apply the bank genesis first) into the bonded pool, and returns the
    /// initial validator set for InitChain. Runs the same checks as the messages do.
    pub fn apply(&self, state: &mut impl StateWrite) -> Result<Vec<ValidatorUpdate>, StakingError> {
        self.params.validate()?;
        state.put_staking_params(&self.params);
        for v in &self.validators {
            let msg = MsgCreateValidator {
                consensus_pubkey: v.consensus_pubkey,
                moniker: v.moniker.clone(),
                self_bond: v.self_bond,
            };
            handler::check_stateless(&StakingMsg::CreateValidator(msg.clone()), &self.params)?;
            create_validator::create(state, 0, &v.operator, &msg)?;
        }
        for p in &self.providers {
            let msg = MsgRegisterProvider {
                attrs: p.attrs.clone(),
                bond: p.bond,
            };
            handler::check_stateless(&StakingMsg::RegisterProvider(msg.clone()), &self.params)?;
            register_provider::register(state, 0, &p.operator, &msg)?;
        }
        Ok(end_block::update_validator_set(state))
    }
}
