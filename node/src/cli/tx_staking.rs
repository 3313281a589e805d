//! `tx staking|provider|slashing …`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use gpuchain_slashing::{MsgUnjail, SlashingMsg};
use gpuchain_staking::{
    MsgBondProvider, MsgCreateValidator, MsgDelegateSelf, MsgDeregisterProvider, MsgEditValidator,
    MsgRegisterProvider, MsgUnbondProvider, MsgUnbondValidator, MsgUpdateProvider, ProviderAttrs,
    StakingMsg,
};
use gpuchain_tx::Msg;
use gpuchain_types::Amount;

#[derive(clap::Subcommand)]
pub(crate) enum StakingTx {
    /// Become a validator: bond from your account against a CometBFT consensus key.
    CreateValidator {
        /// Name of the signing (operator) key.
        from: String,
        /// The node's priv_validator_key.json (its public key is read), or a hex public key.
        #[arg(long)]
        consensus_key: String,
        /// Display name.
        #[arg(long)]
        moniker: String,
        /// ugpu to bond.
        #[arg(long)]
        self_bond: Amount,
    },
    /// Bond more to your validator.
    DelegateSelf {
        /// Operator key.
        from: String,
        /// ugpu.
        amount: Amount,
    },
    /// Start unbonding (released after `unbonding_blocks`).
    Unbond {
        /// Operator key.
        from: String,
        /// ugpu.
        amount: Amount,
    },
    /// Change the moniker.
    Edit {
        /// Operator key.
        from: String,
        /// New display name.
        #[arg(long)]
        moniker: String,
    },
}

#[derive(clap::Subcommand)]
pub(crate) enum ProviderTx {
    /// Register hardware (a JSON file of attributes, e.g. from `gpuchain-provider probe`) and bond.
    Register {
        /// Provider key.
        from: String,
        /// Attributes JSON file.
        #[arg(long)]
        attrs: PathBuf,
        /// ugpu to bond (at least `min_provider_stake`).
        #[arg(long)]
        bond: Amount,
    },
    /// Replace the declared attributes.
    Update {
        /// Provider key.
        from: String,
        /// Attributes JSON file.
        #[arg(long)]
        attrs: PathBuf,
    },
    /// Bond more.
    Bond {
        /// Provider key.
        from: String,
        /// ugpu.
        amount: Amount,
    },
    /// Start unbonding.
    Unbond {
        /// Provider key.
        from: String,
        /// ugpu.
        amount: Amount,
    },
    /// Leave the market (no open leases) and unbond everything.
    Deregister {
        /// Provider key.
        from: String,
    },
}

#[derive(clap::Subcommand)]
pub(crate) enum SlashingTx {
    /// Bring a jailed validator back once its jail time is over.
    Unjail {
        /// Operator key.
        from: String,
    },
}

fn consensus_pubkey(arg: &str) -> Result<[u8; 32]> {
    let hex_key = if std::path::Path::new(arg).exists() {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(arg)?)?;
        let b64 = v["pub_key"]["value"]
            .as_str()
            .context("no pub_key.value in key file")?;
        hex::encode(base64_decode(b64)?)
    } else {
        arg.to_string()
    };
    let bytes = hex::decode(hex_key.trim()).context("consensus key must be hex or a key file")?;
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("consensus key must be 32 bytes"))
}

fn base64_decode(text: &str) -> Result<Vec<u8>> {
    use base64::Engine;
    Ok(base64::engine::general_purpose::STANDARD.decode(text)?)
}

fn attrs(path: &PathBuf) -> Result<ProviderAttrs> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("parsing provider attributes in {}", path.display()))
}

/// The signer's key name and the message.
pub(crate) fn staking_msg(cmd: &StakingTx) -> Result<(&str, Msg)> {
    Ok(match cmd {
        StakingTx::CreateValidator {
            from,
            consensus_key,
            moniker,
            self_bond,
        } => (
            from,
            Msg::Staking(StakingMsg::CreateValidator(MsgCreateValidator {
                consensus_pubkey: consensus_pubkey(consensus_key)?,
                moniker: moniker.clone(),
                self_bond: *self_bond,
            })),
        ),
        StakingTx::DelegateSelf { from, amount } => (
            from,
            Msg::Staking(StakingMsg::DelegateSelf(MsgDelegateSelf {
                amount: *amount,
            })),
        ),
        StakingTx::Unbond { from, amount } => (
            from,
            Msg::Staking(StakingMsg::UnbondValidator(MsgUnbondValidator {
                amount: *amount,
            })),
        ),
        StakingTx::Edit { from, moniker } => (
            from,
            Msg::Staking(StakingMsg::EditValidator(MsgEditValidator {
                moniker: moniker.clone(),
            })),
        ),
    })
}

/// The signer's key name and the message.
pub(crate) fn provider_msg(cmd: &ProviderTx) -> Result<(&str, Msg)> {
    Ok(match cmd {
        ProviderTx::Register {
            from,
            attrs: path,
            bond,
        } => (
            from,
            Msg::Staking(StakingMsg::RegisterProvider(MsgRegisterProvider {
                attrs: attrs(path)?,
                bond: *bond,
            })),
        ),
        ProviderTx::Update { from, attrs: path } => (
            from,
            Msg::Staking(StakingMsg::UpdateProvider(MsgUpdateProvider {
                attrs: attrs(path)?,
            })),
        ),
        ProviderTx::Bond { from, amount } => (
            from,
            Msg::Staking(StakingMsg::BondProvider(MsgBondProvider {
                amount: *amount,
            })),
        ),
        ProviderTx::Unbond { from, amount } => (
            from,
            Msg::Staking(StakingMsg::UnbondProvider(MsgUnbondProvider {
                amount: *amount,
            })),
        ),
        ProviderTx::Deregister { from } => (
            from,
            Msg::Staking(StakingMsg::DeregisterProvider(MsgDeregisterProvider {})),
        ),
    })
}

/// The signer's key name and the message.
pub(crate) fn slashing_msg(cmd: &SlashingTx) -> (&str, Msg) {
    match cmd {
        SlashingTx::Unjail { from } => (from, Msg::Slashing(SlashingMsg::Unjail(MsgUnjail {}))),
    }
}
