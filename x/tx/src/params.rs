use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::{Amount, PPM_ONE};
use serde::{Deserialize, Serialize};

/// Limits and prices for transactions; part of genesis.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxParams {
    /// Largest encoded transaction accepted.
    pub max_tx_bytes: u32,
    /// Most messages in one transaction.
    pub max_msgs_per_tx: u32,
    /// Longest memo.
    pub max_memo_bytes: u32,
    /// Gas a block may consume in total.
    pub max_block_gas: u64,
    /// Minimum price of gas, in millionths of a ugpu per unit of gas.
    pub min_gas_price_ppm: u64,
    /// Gas per encoded byte.
    pub gas_per_byte: u64,
    /// Gas for the signature check.
    pub gas_per_signature: u64,
    /// Gas per message, on top of the bytes.
    pub gas_per_msg: u64,
}

impl Default for TxParams {
    fn default() -> Self {
        TxParams {
            max_tx_bytes: 65_536,
            max_msgs_per_tx: 32,
            max_memo_bytes: 256,
            max_block_gas: 60_000_000,
            min_gas_price_ppm: 10_000,
            gas_per_byte: 10,
            gas_per_signature: 1_000,
            gas_per_msg: 1_000,
        }
    }
}

impl TxParams {
    /// The smallest fee accepted for `gas_limit`, rounded up.
    pub fn min_fee(&self, gas_limit: u64) -> Amount {
        let micro = u128::from(gas_limit).saturating_mul(u128::from(self.min_gas_price_ppm));
        micro.div_ceil(u128::from(PPM_ONE))
    }
}
