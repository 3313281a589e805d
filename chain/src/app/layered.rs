use std::collections::BTreeMap;

use gpuchain_types::{StateRead, Write};

/// Uncommitted writes (a block's, or the mempool check state's) seen on top of a base
/// state, without copying either.
pub(crate) struct Layered<'a> {
    pub(crate) top: &'a Write,
    pub(crate) base: &'a dyn StateRead,
}

impl StateRead for Layered<'_> {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        match self.top.get(key) {
            Some(v) => v.clone(),
            None => self.base.get_raw(key),
        }
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let mut merged: BTreeMap<String, Vec<u8>> =
            self.base.prefix_raw(prefix).into_iter().collect();
        for (k, v) in self.top.range(prefix.to_string()..) {
            if !k.starts_with(prefix) {
                break;
            }
            match v {
                Some(v) => merged.insert(k.clone(), v.clone()),
                None => merged.remove(k),
            };
        }
        merged.into_iter().collect()
    }
}
