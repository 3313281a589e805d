use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

/// Bank parameters.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BankParams {
    /// Most outputs one multi-send may carry.
    pub max_multi_send_outputs: u32,
}

impl Default for BankParams {
    fn default() -> Self {
        BankParams {
            max_multi_send_outputs: 64,
        }
    }
}
