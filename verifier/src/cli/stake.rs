//! `register`, `bond`, `unbond`: the verifier's bond, as signed transactions from the
//! configured key.

use anyhow::Result;
use gpuchain_agent_kit::args::AmountArgs;
use gpuchain_agent_kit::cli::print_tx;
use gpuchain_verify::{MsgBondVerifier, MsgRegisterVerifier, MsgUnbondVerifier, VerifyMsg};

use crate::chain::Chain;
use crate::config::Config;

/// Arguments of `register`.
pub(crate) type RegisterArgs = gpuchain_agent_kit::args::RegisterArgs<Config>;

pub(super) async fn register(a: RegisterArgs) -> Result<()> {
    let config = a.config.load()?;
    let chain = Chain::open(&config.chain, &config.key)?;
    if let Some(v) = chain.me().await? {
        // On standard error: `--output json` prints only the registration's document.
        eprintln!(
            "{} is already a verifier with {} ugpu bonded (use `bond` to add)",
            chain.address, v.bonded
        );
    } else {
        let bond = a.bond.unwrap_or(u128::from(config.verifier.bond));
        let msg = VerifyMsg::RegisterVerifier(MsgRegisterVerifier { bond });
        print_tx(chain.verify(msg).await?, a.output, "registered")?;
    }
    // Juries for a serving model are drawn among the verifiers that declared it. On
    // standard error, so that `--output json` prints one document.
    if let Some(outcome) = chain.declare_serving_models(&config.serving).await? {
        eprintln!(
            "serving models declared ({} of them): included at height {} (tx {})",
            config.serving.hashes()?.len(),
            outcome.height,
            outcome.hash
        );
    }
    Ok(())
}

pub(super) async fn bond(a: AmountArgs<Config>) -> Result<()> {
    let config = a.config.load()?;
    let msg = VerifyMsg::BondVerifier(MsgBondVerifier { amount: a.amount });
    let chain = Chain::open(&config.chain, &config.key)?;
    print_tx(chain.verify(msg).await?, a.output, "bonded")
}

pub(super) async fn unbond(a: AmountArgs<Config>) -> Result<()> {
    let config = a.config.load()?;
    let msg = VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount: a.amount });
    let chain = Chain::open(&config.chain, &config.key)?;
    print_tx(chain.verify(msg).await?, a.output, "unbonding started")
}
