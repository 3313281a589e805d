use gpuchain_types::{layered_get, layered_prefix, StateRead, Write};

/// Uncommitted writes (a block's, or the mempool check state's) seen on top of a base
/// state, without copying either.
pub(crate) struct Layered<'a> {
    pub(crate) top: &'a Write,
    pub(crate) base: &'a dyn StateRead,
}

impl StateRead for Layered<'_> {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        layered_get(self.top, self.base, key)
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        layered_prefix(self.top, self.base, prefix)
    }
}
