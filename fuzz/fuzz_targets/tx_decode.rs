//! Arbitrary bytes → `Tx::decode`: never panics; whatever decodes re-encodes to the same
//! bytes (borsh is canonical), and its signature check, sign bytes and gas never panic.
#![no_main]

use gpuchain_tx::{intrinsic_gas, sign_bytes, Tx, TxParams};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(tx) = Tx::decode(data) {
        assert_eq!(tx.encode(), data, "decode then encode is the identity");
        let _ = tx.verify_signature();
        let _ = sign_bytes(&tx.body);
        let _ = intrinsic_gas(&TxParams::default(), data.len(), &tx.body);
        let _ = tx.signer();
    }
});
