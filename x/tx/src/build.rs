use crate::{intrinsic_gas, Msg, Tx, TxBody, TxParams};
use ed25519_dalek::SigningKey;

/// Signs `msgs` with the exact gas they need and the minimum fee for it. borsh integers are
/// fixed-width, so the encoded size (and so the gas) does not depend on the fee chosen.
pub fn build_signed_tx(
    key: &SigningKey,
    chain_id: &str,
    nonce: u64,
    params: &TxParams,
    msgs: Vec<Msg>,
    memo: &str,
) -> Tx {
    let mut body = TxBody {
        chain_id: chain_id.to_string(),
        nonce,
        fee: 0,
        gas_limit: 0,
        msgs,
        memo: memo.to_string(),
    };
    let size = Tx::sign(body.clone(), key).encode().len();
    body.gas_limit = intrinsic_gas(params, size, &body);
    body.fee = params.min_fee(body.gas_limit);
    Tx::sign(body, key)
}
