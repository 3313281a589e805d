use gpuchain_types::{Address, StateWrite};
use gpuchain_verify::{VerifyError, VerifyRead};

use crate::{MsgServingModels, ServingError, ServingModelsEvent, ServingWrite, MAX_JUDGED_MODELS};

/// `list` sorted, when it is short enough and names each model once.
pub(crate) fn sorted(list: &[[u8; 32]]) -> Result<Vec<[u8; 32]>, ServingError> {
    let bad = |distinct| ServingError::BadModelList {
        max: MAX_JUDGED_MODELS,
        got: list.len(),
        distinct,
    };
    if list.len() > MAX_JUDGED_MODELS {
        return Err(bad(list.len()));
    }
    let mut models = list.to_vec();
    models.sort_unstable();
    models.dedup();
    if models.len() != list.len() {
        return Err(bad(models.len()));
    }
    Ok(models)
}

pub(super) fn check(m: &MsgServingModels) -> Result<(), ServingError> {
    sorted(&m.models).map(|_| ())
}

pub(super) fn execute(
    state: &mut impl StateWrite,
    signer: &Address,
    m: &MsgServingModels,
) -> Result<(), ServingError> {
    let models = sorted(&m.models)?;
    if state.verifier(signer).is_none() {
        return Err(VerifyError::NotAVerifier(*signer).into());
    }
    state.put_serving_judged_models(signer, &models);
    state.emit(
        ServingModelsEvent {
            verifier: *signer,
            models: u64::try_from(models.len()).map_err(|_| ServingError::Overflow)?,
        }
        .into(),
    );
    Ok(())
}
