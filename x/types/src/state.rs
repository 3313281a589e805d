//! State access for modules. Keys are strings under a module prefix (`"bank/accounts/…"`);
//! values are borsh. Reads never fail: a storage fault or an undecodable stored value is a
//! broken invariant, and the node halts loudly rather than diverge from its peers.

use std::collections::BTreeMap;

use borsh::{BorshDeserialize, BorshSerialize};

use crate::event::{Event, EventSink};

/// Pending writes: `Some(value)` to set, `None` to delete. Ordered, so applying them is
/// deterministic.
pub type Write = BTreeMap<String, Option<Vec<u8>>>;

/// Read access to a state version.
pub trait StateRead {
    /// The raw value under `key`.
    fn get_raw(&self, key: &str) -> Option<Vec<u8>>;
    /// Every `(key, value)` whose key starts with `prefix`, in key order.
    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)>;
    /// The entries of [`StateRead::prefix_raw`] whose key sorts before `end`: the front of a
    /// prefix, read without the rest (a queue's due entries). The default reads the whole
    /// prefix; stores override it.
    fn prefix_until_raw(&self, prefix: &str, end: &str) -> Vec<(String, Vec<u8>)> {
        let mut entries = self.prefix_raw(prefix);
        entries.retain(|(k, _)| k.as_str() < end);
        entries
    }
}

/// Write access: changes land in an overlay and are applied only if the transaction succeeds.
pub trait StateWrite: StateRead + EventSink {
    /// Sets `key` to `value`.
    fn put_raw(&mut self, key: String, value: Vec<u8>);
    /// Removes `key`.
    fn delete(&mut self, key: String);
}

/// Stops the node: the stored state cannot be trusted, and carrying on would fork the chain.
fn halt(what: &str, key: &str) -> ! {
    eprintln!("FATAL: {what} at state key {key:?}; halting to avoid diverging from the network");
    std::process::abort()
}

/// Typed reads over any [`StateRead`].
pub trait StateReadExt: StateRead {
    /// The borsh-decoded value under `key`.
    fn get<T: BorshDeserialize>(&self, key: &str) -> Option<T> {
        let bytes = self.get_raw(key)?;
        match T::try_from_slice(&bytes) {
            Ok(v) => Some(v),
            Err(_) => halt("undecodable stored value", key),
        }
    }

    /// Every borsh-decoded value under `prefix`, in key order.
    fn prefix<T: BorshDeserialize>(&self, prefix: &str) -> Vec<(String, T)> {
        self.prefix_raw(prefix)
            .into_iter()
            .map(|(k, v)| match T::try_from_slice(&v) {
                Ok(t) => (k, t),
                Err(_) => halt("undecodable stored value", &k),
            })
            .collect()
    }

    /// The decoded entries of a queue keyed by when they are due (keys `<prefix><due, 20
    /// digits>/…`, `due` a height or a block time in milliseconds) due by `now`, in key
    /// order, read without the entries due later: a queue holding a retention window of
    /// entries costs each block only what is due.
    fn due_by<T: BorshDeserialize>(&self, prefix: &str, now: u64) -> Vec<(String, T)> {
        let entries = match now.checked_add(1) {
            Some(next) => self.prefix_until_raw(prefix, &format!("{prefix}{next:020}")),
            None => self.prefix_raw(prefix),
        };
        entries
            .into_iter()
            .map(|(k, v)| match T::try_from_slice(&v) {
                Ok(t) => (k, t),
                Err(_) => halt("undecodable stored value", &k),
            })
            .collect()
    }

    /// The entries of a queue of unit values keyed `<prefix><due, 20 digits>/<id>` (see
    /// [`StateReadExt::due_by`]) due by `now`: (key, id), in key order. A key that ends in no
    /// id was not written by this chain's code: the node halts.
    fn ids_due(&self, prefix: &str, now: u64) -> Vec<(String, u64)> {
        self.due_by::<()>(prefix, now)
            .into_iter()
            .map(|(key, ())| match queue_key_id(&key) {
                Some(id) => (key, id),
                None => halt("queue key without an id", &key),
            })
            .collect()
    }
}

impl<S: StateRead + ?Sized> StateReadExt for S {}

/// The id that ends a queue key (`…/<due>/<id>`).
pub fn queue_key_id(key: &str) -> Option<u64> {
    key.rsplit('/').next()?.parse().ok()
}

/// Typed writes over any [`StateWrite`].
pub trait StateWriteExt: StateWrite {
    /// Stores the borsh encoding of `value` under `key`.
    fn put<T: BorshSerialize>(&mut self, key: String, value: &T) {
        match borsh::to_vec(value) {
            Ok(bytes) => self.put_raw(key, bytes),
            Err(_) => halt("unencodable value", &key),
        }
    }
}

impl<S: StateWrite + ?Sized> StateWriteExt for S {}

/// A copy-on-write view over a parent state: the per-block and per-transaction fork.
pub struct Overlay<'a> {
    parent: &'a dyn StateRead,
    writes: Write,
    events: Vec<Event>,
}

impl<'a> Overlay<'a> {
    /// A fork of `parent` with no changes yet.
    pub fn new(parent: &'a dyn StateRead) -> Self {
        Overlay {
            parent,
            writes: Write::new(),
            events: Vec::new(),
        }
    }

    /// The changes and events, for the caller to apply to the parent.
    pub fn into_parts(self) -> (Write, Vec<Event>) {
        (self.writes, self.events)
    }

    /// Applies a child fork's changes and events on top of this one.
    pub fn absorb(&mut self, writes: Write, events: Vec<Event>) {
        self.writes.extend(writes);
        self.events.extend(events);
    }

    /// The changes made so far.
    pub fn writes(&self) -> &Write {
        &self.writes
    }
}

impl StateRead for Overlay<'_> {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        layered_get(&self.writes, self.parent, key)
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        layered_prefix(&self.writes, self.parent, prefix)
    }

    fn prefix_until_raw(&self, prefix: &str, end: &str) -> Vec<(String, Vec<u8>)> {
        layered_prefix_until(&self.writes, self.parent, prefix, end)
    }
}

/// `key` as seen through pending `top` writes over `base`.
pub fn layered_get(top: &Write, base: &dyn StateRead, key: &str) -> Option<Vec<u8>> {
    match top.get(key) {
        Some(v) => v.clone(),
        None => base.get_raw(key),
    }
}

/// Every entry under `prefix` as seen through pending `top` writes over `base`, in key order.
pub fn layered_prefix(top: &Write, base: &dyn StateRead, prefix: &str) -> Vec<(String, Vec<u8>)> {
    merge_over(top, base.prefix_raw(prefix), prefix, None)
}

/// [`layered_prefix`] for the keys that sort before `end` only.
pub fn layered_prefix_until(
    top: &Write,
    base: &dyn StateRead,
    prefix: &str,
    end: &str,
) -> Vec<(String, Vec<u8>)> {
    merge_over(top, base.prefix_until_raw(prefix, end), prefix, Some(end))
}

fn merge_over(
    top: &Write,
    base: Vec<(String, Vec<u8>)>,
    prefix: &str,
    end: Option<&str>,
) -> Vec<(String, Vec<u8>)> {
    let mut merged: BTreeMap<String, Vec<u8>> = base.into_iter().collect();
    for (k, v) in top.range(prefix.to_string()..) {
        if !k.starts_with(prefix) || end.is_some_and(|end| k.as_str() >= end) {
            break;
        }
        match v {
            Some(v) => merged.insert(k.clone(), v.clone()),
            None => merged.remove(k),
        };
    }
    merged.into_iter().collect()
}

impl EventSink for Overlay<'_> {
    fn emit(&mut self, event: Event) {
        self.events.push(event);
    }
}

impl StateWrite for Overlay<'_> {
    fn put_raw(&mut self, key: String, value: Vec<u8>) {
        self.writes.insert(key, Some(value));
    }

    fn delete(&mut self, key: String) {
        self.writes.insert(key, None);
    }
}

/// An in-memory state, for genesis building, module unit tests and simulation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemState {
    entries: BTreeMap<String, Vec<u8>>,
}

impl MemState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a set of writes.
    pub fn apply(&mut self, writes: Write) {
        for (k, v) in writes {
            match v {
                Some(v) => self.entries.insert(k, v),
                None => self.entries.remove(&k),
            };
        }
    }

    /// Every entry, in key order.
    pub fn entries(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.entries
    }
}

impl StateRead for MemState {
    fn get_raw(&self, key: &str) -> Option<Vec<u8>> {
        self.entries.get(key).cloned()
    }

    fn prefix_raw(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        self.entries
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn prefix_until_raw(&self, prefix: &str, end: &str) -> Vec<(String, Vec<u8>)> {
        self.entries
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix) && k.as_str() < end)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue_key(height: u64, id: u64) -> String {
        format!("q/{height:020}/{id:020}")
    }

    #[test]
    fn a_queue_read_to_a_height_sees_exactly_the_due_entries_through_an_overlay() {
        let mut base = MemState::new();
        base.apply(
            (1..=30)
                .map(|h| (queue_key(h, h), Some(vec![h as u8])))
                .chain([
                    ("q0".to_string(), Some(vec![0])),
                    ("r/1".into(), Some(vec![0])),
                ])
                .collect(),
        );
        let mut fork = Overlay::new(&base);
        fork.delete(queue_key(10, 10));
        fork.put_raw(queue_key(10, 99), vec![7]);
        fork.put_raw(queue_key(11, 1), vec![8]);
        fork.put_raw(queue_key(12, 1), vec![9]);
        for height in [0, 9, 10, 11, 29, 30, 31, u64::MAX] {
            let due: Vec<(String, u8)> = fork.due_by("q/", height);
            let expected: Vec<(String, u8)> = fork
                .prefix_raw("q/")
                .into_iter()
                .filter(|(k, _)| {
                    let at: u64 = k[2..22].parse().unwrap();
                    at <= height
                })
                .map(|(k, v)| (k, v[0]))
                .collect();
            assert_eq!(due, expected, "due by {height}");
            assert_eq!(base.due_by::<u8>("q/", height).len() as u64, height.min(30));
        }
    }

    #[test]
    fn overlay_reads_its_own_writes_and_hides_deletes() {
        let mut base = MemState::new();
        let mut w = Write::new();
        w.insert("a/1".into(), Some(vec![1]));
        w.insert("a/2".into(), Some(vec![2]));
        w.insert("b/1".into(), Some(vec![3]));
        base.apply(w);

        let mut fork = Overlay::new(&base);
        fork.delete("a/1".into());
        fork.put_raw("a/3".into(), vec![4]);
        assert_eq!(fork.get_raw("a/1"), None);
        let keys: Vec<String> = fork.prefix_raw("a/").into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec!["a/2".to_string(), "a/3".to_string()]);
        assert_eq!(
            base.get_raw("a/1"),
            Some(vec![1]),
            "parent untouched until applied"
        );
    }
}
