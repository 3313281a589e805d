//! The gpuchain transaction envelope: a borsh `Tx { body, public_key, signature }`, the
//! message enum that routes to every module, domain-separated sign bytes, ed25519 checks,
//! gas and fee rules, and the `tx` codespace's error codes. docs/protocol.md specifies the
//! same bytes for implementers in other languages.

mod error;
mod gas;
mod msg;
mod params;
mod tx;

pub use error::TxError;
pub use gas::intrinsic_gas;
pub use msg::Msg;
pub use params::TxParams;
pub use tx::{sign_bytes, Tx, TxBody, SIGN_DOMAIN};
