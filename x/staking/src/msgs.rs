use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::Amount;
use serde::{Deserialize, Serialize};

use crate::ProviderAttrs;

/// Makes the signer a validator with consensus key `consensus_pubkey`, bonding `self_bond`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgCreateValidator {
    /// ed25519 consensus public key (CometBFT's `priv_validator_key.json`).
    #[serde(with = "gpuchain_types::hex_bytes")]
    pub consensus_pubkey: [u8; 32],
    /// Display name.
    pub moniker: String,
    /// ugpu to bond from the signer.
    pub self_bond: Amount,
}

/// Bonds `amount` more ugpu to the signer's validator.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgDelegateSelf {
    /// ugpu.
    pub amount: Amount,
}

/// Starts unbonding `amount` ugpu of the signer's validator.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgUnbondValidator {
    /// ugpu.
    pub amount: Amount,
}

/// Changes the signer's validator's moniker.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgEditValidator {
    /// New display name.
    pub moniker: String,
}

/// Registers the signer as a provider, bonding `bond`.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgRegisterProvider {
    /// Declared hardware.
    pub attrs: ProviderAttrs,
    /// ugpu to bond, at least `min_provider_stake`.
    pub bond: Amount,
}

/// Replaces the signer's declared hardware.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgUpdateProvider {
    /// New attributes.
    pub attrs: ProviderAttrs,
}

/// Bonds `amount` more ugpu to the signer's provider.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgBondProvider {
    /// ugpu.
    pub amount: Amount,
}

/// Starts unbonding `amount` ugpu of the signer's provider.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgUnbondProvider {
    /// ugpu.
    pub amount: Amount,
}

/// Removes the signer's provider registration and unbonds its whole bond. Refused while it
/// has open leases.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct MsgDeregisterProvider {}

/// Every staking message. The borsh variant index is part of the wire format.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StakingMsg {
    /// Variant 0.
    CreateValidator(MsgCreateValidator),
    /// Variant 1.
    DelegateSelf(MsgDelegateSelf),
    /// Variant 2.
    UnbondValidator(MsgUnbondValidator),
    /// Variant 3.
    EditValidator(MsgEditValidator),
    /// Variant 4.
    RegisterProvider(MsgRegisterProvider),
    /// Variant 5.
    UpdateProvider(MsgUpdateProvider),
    /// Variant 6.
    BondProvider(MsgBondProvider),
    /// Variant 7.
    UnbondProvider(MsgUnbondProvider),
    /// Variant 8.
    DeregisterProvider(MsgDeregisterProvider),
}

impl StakingMsg {
    /// `staking.<message>`, for logs and events.
    pub fn name(&self) -> &'static str {
        match self {
            StakingMsg::CreateValidator(_) => "staking.create_validator",
            StakingMsg::DelegateSelf(_) => "staking.delegate_self",
            StakingMsg::UnbondValidator(_) => "staking.unbond_validator",
            StakingMsg::EditValidator(_) => "staking.edit_validator",
            StakingMsg::RegisterProvider(_) => "staking.register_provider",
            StakingMsg::UpdateProvider(_) => "staking.update_provider",
            StakingMsg::BondProvider(_) => "staking.bond_provider",
            StakingMsg::UnbondProvider(_) => "staking.unbond_provider",
            StakingMsg::DeregisterProvider(_) => "staking.deregister_provider",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borsh_variant_index_is_the_wire_format() {
        let bytes = borsh::to_vec(&StakingMsg::DeregisterProvider(MsgDeregisterProvider {}));
        assert_eq!(bytes.ok(), Some(vec![8]));
        let bytes = borsh::to_vec(&StakingMsg::DelegateSelf(MsgDelegateSelf { amount: 1 }));
        assert_eq!(bytes.ok().and_then(|b| b.first().copied()), Some(1));
    }
}
