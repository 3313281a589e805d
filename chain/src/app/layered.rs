use gpuchain_types::{
    layered_get, layered_prefix, layered_prefix_until, Event, EventSink, StateRead, StateWrite,
    Write,
};

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

    fn prefix_until_raw(&self, prefix: &str, end: &str) -> Vec<(String, Vec<u8>)> {
        layered_prefix_until(self.top, self.base, prefix, end)
    }
}

/// Like [`Layered`], but writes go straight into `top`: only for code that writes nothing
/// unless it succeeds (the ante handler), which then needs no fork of its own.
pub(crate) struct LayeredMut<'a> {
    pub(crate) top: &'a mut Write,
    pub(crate) base: &'a dyn StateRead,
    pub(crate) events: Vec<Event>,
}

impl StateRead for LayeredMut<'_> {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        layered_get(self.top, self.base, key)
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        layered_prefix(self.top, self.base, prefix)
    }

    fn prefix_until_raw(&self, prefix: &str, end: &str) -> Vec<(String, Vec<u8>)> {
        layered_prefix_until(self.top, self.base, prefix, end)
    }
}

impl EventSink for LayeredMut<'_> {
    fn emit(&mut self, event: Event) {
        self.events.push(event);
    }
}

impl StateWrite for LayeredMut<'_> {
    fn put_raw(&mut self, key: String, value: Vec<u8>) {
        self.top.insert(key, Some(value));
    }

    fn delete(&mut self, key: String) {
        self.top.insert(key, None);
    }
}
