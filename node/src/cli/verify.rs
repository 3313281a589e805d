//! `tx verify …` and `query verify …`: verifiers bond, post verdicts and appeal, plant and
//! reveal challenges; anyone lists verifiers, cases and challenges.

use anyhow::{Context, Result};
use gpuchain_client::ChainClient;
use gpuchain_tx::Msg;
use gpuchain_types::{Address, Amount, MemState};
use gpuchain_verify::{
    challenge_commitment, MsgAppeal, MsgBondVerifier, MsgCommitChallenge, MsgRecuse,
    MsgRegisterVerifier, MsgRevealChallenge, MsgSubmitVerdict, MsgUnbondVerifier, VerdictKind,
    VerifyMsg, VerifyRead,
};

use super::Output;

#[derive(clap::Subcommand)]
pub(crate) enum VerifyTx {
    /// Register as a verifier with a bond (at least `min_verifier_stake`).
    Register {
        /// Verifier key.
        from: String,
        /// Bond in ugpu.
        bond: Amount,
    },
    /// Add to the verifier bond.
    Bond {
        /// Verifier key.
        from: String,
        /// ugpu.
        amount: Amount,
    },
    /// Start unbonding part of the verifier bond.
    Unbond {
        /// Verifier key.
        from: String,
        /// ugpu.
        amount: Amount,
    },
    /// Post the verdict on an assigned lease with your own output hash.
    Verdict {
        /// Verifier key.
        from: String,
        /// Lease id.
        lease_id: u64,
        /// honest or faulty.
        #[arg(value_parser = parse_verdict)]
        verdict: VerdictKind,
        /// Hex blake3 of your re-executed output.
        #[arg(long)]
        output_hash: String,
    },
    /// As the assigned verifier, step down from a case you cannot check before its deadline:
    /// no slash and no fee; another verifier is drawn.
    Recuse {
        /// Verifier key.
        from: String,
        /// Lease id.
        lease_id: u64,
    },
    /// Appeal a posted verdict that goes against you (locks the appeal deposit).
    Appeal {
        /// Provider or client key.
        from: String,
        /// Lease id.
        lease_id: u64,
    },
    /// Commit a challenge: blake3(domain ‖ poster ‖ expected output hash ‖ salt).
    CommitChallenge {
        /// Verifier key.
        from: String,
        /// The ordinary account that will post the ringer order.
        #[arg(long)]
        poster: Address,
        /// Hex blake3 of the expected output.
        #[arg(long)]
        expected_output_hash: String,
        /// Hex 32-byte salt; keep it for the reveal.
        #[arg(long)]
        salt: String,
    },
    /// Reveal a challenge once every lease of its order has revealed.
    RevealChallenge {
        /// Verifier key.
        from: String,
        /// Challenge id.
        challenge_id: u64,
        /// The ringer order.
        order_id: u64,
        /// Hex blake3 of the expected output.
        #[arg(long)]
        expected_output_hash: String,
        /// The salt used in the commitment.
        #[arg(long)]
        salt: String,
    },
}

#[derive(clap::Subcommand)]
pub(crate) enum VerifyQuery {
    /// Every verifier.
    Verifiers,
    /// Verification cases (one per audited or disputed lease), or one lease's.
    Cases {
        /// Only this lease.
        lease_id: Option<u64>,
    },
    /// Committed challenges.
    Challenges,
}

fn parse_verdict(text: &str) -> Result<VerdictKind, String> {
    match text {
        "honest" => Ok(VerdictKind::Honest),
        "faulty" => Ok(VerdictKind::Faulty),
        other => Err(format!("unknown verdict {other:?}: use honest or faulty")),
    }
}

fn hex32(text: &str, what: &str) -> Result<[u8; 32]> {
    let bytes = hex::decode(text.trim()).with_context(|| format!("{what} must be hex"))?;
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("{what} must be 32 bytes"))
}

/// The signer's key name and the message.
pub(crate) fn verify_msg(cmd: &VerifyTx) -> Result<(&str, Msg)> {
    let (from, msg) = match cmd {
        VerifyTx::Register { from, bond } => (
            from,
            VerifyMsg::RegisterVerifier(MsgRegisterVerifier { bond: *bond }),
        ),
        VerifyTx::Bond { from, amount } => (
            from,
            VerifyMsg::BondVerifier(MsgBondVerifier { amount: *amount }),
        ),
        VerifyTx::Unbond { from, amount } => (
            from,
            VerifyMsg::UnbondVerifier(MsgUnbondVerifier { amount: *amount }),
        ),
        VerifyTx::Verdict {
            from,
            lease_id,
            verdict,
            output_hash,
        } => (
            from,
            VerifyMsg::SubmitVerdict(MsgSubmitVerdict {
                lease_id: *lease_id,
                output_hash: hex32(output_hash, "--output-hash")?,
                verdict: *verdict,
            }),
        ),
        VerifyTx::Appeal { from, lease_id } => (
            from,
            VerifyMsg::Appeal(MsgAppeal {
                lease_id: *lease_id,
            }),
        ),
        VerifyTx::Recuse { from, lease_id } => (
            from,
            VerifyMsg::Recuse(MsgRecuse {
                lease_id: *lease_id,
            }),
        ),
        VerifyTx::CommitChallenge {
            from,
            poster,
            expected_output_hash,
            salt,
        } => {
            let expected = hex32(expected_output_hash, "--expected-output-hash")?;
            let salt = hex32(salt, "--salt")?;
            (
                from,
                VerifyMsg::CommitChallenge(MsgCommitChallenge {
                    commitment: challenge_commitment(poster, &expected, &salt),
                }),
            )
        }
        VerifyTx::RevealChallenge {
            from,
            challenge_id,
            order_id,
            expected_output_hash,
            salt,
        } => (
            from,
            VerifyMsg::RevealChallenge(MsgRevealChallenge {
                challenge_id: *challenge_id,
                order_id: *order_id,
                expected_output_hash: hex32(expected_output_hash, "--expected-output-hash")?,
                salt: hex32(salt, "--salt")?,
            }),
        ),
    };
    Ok((from.as_str(), Msg::Verify(msg)))
}

fn print_lines<T: serde::Serialize>(out: &Output, items: &[T]) {
    out.print(&items, || {
        items
            .iter()
            .map(|i| serde_json::to_string(i).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    });
}

async fn snapshot(client: &ChainClient, prefix: &str) -> Result<MemState> {
    let part = client.snapshot(prefix).await?;
    let mut state = MemState::new();
    state.apply(
        part.entries()
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect(),
    );
    Ok(state)
}

pub(crate) async fn query(client: &ChainClient, cmd: &VerifyQuery, out: &Output) -> Result<()> {
    let state = snapshot(client, gpuchain_verify::state_key::module_prefix()).await?;
    match cmd {
        VerifyQuery::Verifiers => print_lines(out, &state.verifiers()),
        VerifyQuery::Cases { lease_id } => {
            let cases = match lease_id {
                Some(id) => state.case(*id).into_iter().collect(),
                None => state.cases(),
            };
            print_lines(out, &cases);
        }
        VerifyQuery::Challenges => print_lines(out, &state.challenges()),
    }
    Ok(())
}
