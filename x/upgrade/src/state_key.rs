//! Upgrade state keys. The chain state is a public API: these strings are documented in
//! docs/protocol.md and must not change.

use gpuchain_types::Address;

/// Everything the module keeps: the prefix of all its keys.
pub fn module_prefix() -> &'static str {
    "upgrade/"
}

/// The scheduled plan, if any: borsh [`crate::Plan`].
pub fn plan() -> &'static str {
    "upgrade/plan"
}

/// One active validator's signal: borsh [`crate::Plan`].
pub fn signal(operator: &Address) -> String {
    format!("upgrade/signals/{}", operator.to_hex())
}

/// Prefix of every signal, in operator order.
pub fn signals_prefix() -> &'static str {
    "upgrade/signals/"
}

/// One applied upgrade: borsh [`crate::AppliedUpgrade`].
pub fn applied(name: &str) -> String {
    format!("upgrade/applied/{name}")
}

/// Prefix of every applied upgrade, in name order.
pub fn applied_prefix() -> &'static str {
    "upgrade/applied/"
}
