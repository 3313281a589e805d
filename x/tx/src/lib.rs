//! The gpuchain transaction envelope: a borsh `Tx { body, public_key, signature }`, the
//! message enum that routes to every module, domain-separated sign bytes, ed25519 checks,
//! gas and fee rules, and the `tx` codespace's error codes. docs/protocol.md specifies the
//! same bytes for implementers in other languages.

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

mod build;
mod error;
mod gas;
mod msg;
mod params;
pub mod signature;
mod tx;

pub use build::build_signed_tx;
pub use error::TxError;
pub use gas::intrinsic_gas;
pub use msg::Msg;
pub use params::TxParams;
pub use tx::{sign_bytes, Tx, TxBody, SIGN_DOMAIN};
