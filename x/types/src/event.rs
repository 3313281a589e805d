use std::borrow::Cow;

use borsh::{BorshDeserialize, BorshSerialize};
use serde::{Deserialize, Serialize};

/// A typed event flattened into an ABCI event: a kind (`"bank.transfer"`) and ordered
/// string attributes. Modules build these through their own typed event structs. Kinds and
/// attribute names are almost always literals, so they are borrowed rather than allocated
/// for every event of every transaction.
#[derive(Clone, Debug, PartialEq, Eq, BorshSerialize, BorshDeserialize, Serialize, Deserialize)]
pub struct Event {
    /// Event type, `<module>.<what>`.
    pub kind: Cow<'static, str>,
    /// Attributes in emission order.
    pub attributes: Vec<(Cow<'static, str>, String)>,
}

impl Event {
    /// A new event with no attributes.
    pub fn new(kind: impl Into<Cow<'static, str>>) -> Self {
        Event {
            kind: kind.into(),
            attributes: Vec::new(),
        }
    }

    /// Adds an attribute.
    pub fn attr(mut self, key: impl Into<Cow<'static, str>>, value: impl ToString) -> Self {
        self.attributes.push((key.into(), value.to_string()));
        self
    }

    /// Adds an attribute whose text is already rendered (no second copy).
    pub fn attr_text(mut self, key: impl Into<Cow<'static, str>>, value: String) -> Self {
        self.attributes.push((key.into(), value));
        self
    }

    /// The value of the first attribute named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Where handlers send events; they are kept only if the transaction succeeds.
pub trait EventSink {
    /// Records an event.
    fn emit(&mut self, event: Event);
}
