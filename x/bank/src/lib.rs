//! x/bank: accounts (the `ugpu` balance and the transaction nonce, one state leaf each),
//! transfers, module accounts (fee pool, escrow, bonded pool…)
//! and total-supply tracking. Invariant: the sum of all balances equals the supply.

// Consensus code never panics: bad input is an error code that changes nothing.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::todo,
        clippy::unimplemented,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

mod account;
mod error;
mod events;
mod genesis;
pub mod handler;
mod msgs;
mod params;
pub mod state_key;
mod view;

pub use account::Account;
pub use error::BankError;
pub use events::TransferEvent;
pub use genesis::BankGenesis;
pub use msgs::{BankMsg, MsgMultiSend, MsgSend, Output};
pub use params::BankParams;
pub use view::{BankRead, BankWrite, ChargeError};

use gpuchain_types::Address;

/// Well-known module accounts. No key controls them; only module code moves their funds.
pub mod module_account {
    use super::Address;

    /// Collects transaction fees and the market's take rate.
    pub fn fee_pool() -> Address {
        // Every transaction pays it: derive the address once.
        static FEE_POOL: std::sync::OnceLock<Address> = std::sync::OnceLock::new();
        *FEE_POOL.get_or_init(|| Address::module("fee_pool"))
    }
}
