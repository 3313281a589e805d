use borsh::{BorshDeserialize, BorshSerialize};
use gpuchain_types::Amount;

/// One account's state leaf: its balance and the nonce its next transaction must carry.
/// Both live in one record so that a transfer touches one tree leaf per account, not two;
/// an account with neither is absent from state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, BorshSerialize, BorshDeserialize)]
pub struct Account {
    /// Balance in ugpu.
    pub balance: Amount,
    /// Next transaction nonce (transactions signed by this account so far).
    pub nonce: u64,
}

impl Account {
    /// True when the record carries nothing and is deleted rather than stored.
    pub fn is_empty(&self) -> bool {
        self.balance == 0 && self.nonce == 0
    }
}
