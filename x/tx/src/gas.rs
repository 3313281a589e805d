use crate::{TxBody, TxParams};

/// Gas a transaction needs before any handler runs: bytes, signature and messages. This
/// simple, fully deterministic model is all the gas accounting there is; it is documented
/// in docs/protocol.md so that clients can compute it exactly.
pub fn intrinsic_gas(params: &TxParams, encoded_len: usize, body: &TxBody) -> u64 {
    let bytes = u64::try_from(encoded_len).unwrap_or(u64::MAX);
    let msgs = u64::try_from(body.msgs.len()).unwrap_or(u64::MAX);
    bytes
        .saturating_mul(params.gas_per_byte)
        .saturating_add(params.gas_per_signature)
        .saturating_add(msgs.saturating_mul(params.gas_per_msg))
}
