use gpuchain_types::{Address, BlockCtx, StateWrite};

use crate::{
    state_key, Challenge, ChallengeCommittedEvent, MsgCommitChallenge, VerifyError, VerifyRead,
    VerifyWrite,
};

/// An eligible verifier commits a challenge before posting its ringer order.
pub(super) fn execute(
    state: &mut impl StateWrite,
    ctx: &BlockCtx,
    signer: &Address,
    msg: &MsgCommitChallenge,
) -> Result<(), VerifyError> {
    let params = state.verify_params();
    let mut verifier = state
        .verifier(signer)
        .ok_or(VerifyError::NotAVerifier(*signer))?;
    if verifier.bonded < params.min_verifier_stake {
        return Err(VerifyError::BelowMinStake {
            bond: verifier.bonded,
            min: params.min_verifier_stake,
        });
    }
    if verifier.jailed_until > ctx.height {
        return Err(VerifyError::VerifierJailed {
            verifier: *signer,
            until: verifier.jailed_until,
        });
    }
    if verifier.open_challenges >= params.max_open_challenges {
        return Err(VerifyError::TooManyChallenges(params.max_open_challenges));
    }
    let expires_height = ctx
        .height
        .checked_add(params.challenge_ttl_blocks)
        .ok_or(VerifyError::Overflow)?;
    verifier.open_challenges = verifier
        .open_challenges
        .checked_add(1)
        .ok_or(VerifyError::Overflow)?;
    let id = state.take_verify_id(state_key::next_challenge_id())?;
    state.put_challenge(&Challenge {
        id,
        verifier: *signer,
        commitment: msg.commitment,
        height: ctx.height,
        expires_height,
    });
    state.put_verifier(&verifier);
    state.emit(
        ChallengeCommittedEvent {
            challenge_id: id,
            verifier: *signer,
            expires_height,
        }
        .into(),
    );
    Ok(())
}
