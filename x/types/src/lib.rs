//! Shared consensus types for every gpuchain module: bech32 addresses, the error shape that
//! becomes an ABCI code/codespace/log, the state access traits with their copy-on-write
//! overlay, typed events, block context and fixed-point (ppm) arithmetic.
//!
//! Nothing here touches the clock, floats, OS randomness or hash-map iteration: it is linked
//! into consensus code.

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

mod address;
mod address_text;
mod context;
mod error;
mod event;
pub mod hex_bytes;
mod merkle;
mod ppm;
pub mod query_path;
mod state;

pub use address::{Address, AddressError, ADDRESS_HRP, ADDRESS_LEN};
pub use context::{BlockCtx, MAX_RETENTION_SECS};
pub use error::{AppError, ModuleError};
pub use event::{Event, EventAttr, EventSink, TypedEvent};
pub use merkle::{key_hash, Blake3Hasher, PROOF_OP_TYPE};
pub use ppm::{mul_ppm, Ppm, PPM_ONE};
pub use state::{
    layered_get, layered_prefix, layered_prefix_until, queue_key_id, MemState, Overlay, StateRead,
    StateReadExt, StateWrite, StateWriteExt, Write,
};

/// Amounts of the native token in its base unit, `ugpu` (1 GPU = 10^6 ugpu).
pub type Amount = u128;

/// The native denomination's base unit.
pub const DENOM: &str = "ugpu";
