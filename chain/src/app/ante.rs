//! Transaction admission: the checks every transaction passes before its messages run.

use gpuchain_bank::{module_account, BankWrite, ChargeError};
use gpuchain_tx::{intrinsic_gas, Tx, TxError, TxParams};
use gpuchain_types::{Address, StateWrite};

/// Checks that need no state beyond the parameters and chain id.
pub(crate) fn check_stateless(
    tx: &Tx,
    encoded_len: usize,
    params: &TxParams,
    chain_id: &str,
) -> Result<u64, TxError> {
    let body = &tx.body;
    if body.chain_id != chain_id {
        return Err(TxError::WrongChainId {
            expected: chain_id.to_string(),
            got: body.chain_id.clone(),
        });
    }
    let msgs = body.msgs.len();
    if msgs == 0 || u32::try_from(msgs).map_or(true, |m| m > params.max_msgs_per_tx) {
        return Err(TxError::MsgCount {
            got: msgs,
            max: params.max_msgs_per_tx,
        });
    }
    if u32::try_from(body.memo.len()).map_or(true, |m| m > params.max_memo_bytes) {
        return Err(TxError::MemoTooLong {
            got: body.memo.len(),
            max: params.max_memo_bytes,
        });
    }
    if body.gas_limit > params.max_block_gas {
        return Err(TxError::GasLimitTooHigh {
            limit: body.gas_limit,
            max: params.max_block_gas,
        });
    }
    let needed = intrinsic_gas(params, encoded_len, body);
    if needed > body.gas_limit {
        return Err(TxError::OutOfGas {
            needed,
            limit: body.gas_limit,
        });
    }
    let min = params.min_fee(body.gas_limit);
    if body.fee < min {
        return Err(TxError::FeeTooLow {
            min,
            got: body.fee,
            gas_limit: body.gas_limit,
        });
    }
    Ok(needed)
}

/// Checks the nonce, takes the fee from `signer` (the transaction's, derived once by the
/// caller) into the fee pool and bumps the nonce. On error nothing has been written.
pub(crate) fn charge(
    state: &mut impl StateWrite,
    tx: &Tx,
    signer: &Address,
) -> Result<(), TxError> {
    let fee = tx.body.fee;
    state
        .charge_signer(signer, tx.body.nonce, fee, &module_account::fee_pool())
        .map_err(|e| match e {
            ChargeError::BadNonce { expected } => TxError::BadNonce {
                expected,
                got: tx.body.nonce,
            },
            ChargeError::CannotPayFee { balance } => TxError::CannotPayFee { fee, balance },
        })
}
