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

/// A module's event as a type: it encodes into an [`Event`] and decodes from the attributes
/// a client reads back from CometBFT (`block_results`, transaction results), so the module
/// that emits it and every agent that reacts to it share one definition of its kind and its
/// attribute names: renaming either fails to compile rather than silently stalling a reader.
/// Declared with [`typed_event!`](crate::typed_event).
pub trait TypedEvent: Sized + Into<Event> {
    /// The event kind, `<module>.<what>`.
    const KIND: &'static str;

    /// The event, if `kind` is [`Self::KIND`] and every attribute `attr` returns is present
    /// and parses.
    fn decode<'a>(kind: &str, attr: impl Fn(&str) -> Option<&'a str>) -> Option<Self>;

    /// The event, if `event` is one.
    fn from_event(event: &Event) -> Option<Self> {
        Self::decode(&event.kind, |key| event.get(key))
    }
}

/// A value carried as an event attribute: written with `Display`, read back with
/// [`EventAttr::parse_attr`], which inverts it.
pub trait EventAttr: Sized {
    /// The value `text` was written from, if it is one.
    fn parse_attr(text: &str) -> Option<Self>;
}

macro_rules! parsed_attr {
    ($($ty:ty),*) => {
        $(impl EventAttr for $ty {
            fn parse_attr(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        })*
    };
}

parsed_attr!(u8, u16, u32, u64, u128, bool, String, crate::Address);

impl EventAttr for Cow<'static, str> {
    fn parse_attr(text: &str) -> Option<Self> {
        Some(Cow::Owned(text.to_string()))
    }
}

/// Declares a typed event: a struct with one public field per attribute (each an
/// [`EventAttr`]), its conversion into an [`Event`] of kind `$kind` with the attributes in
/// field order, and its [`TypedEvent`] decoding.
#[macro_export]
macro_rules! typed_event {
    ($(#[$doc:meta])* $name:ident = $kind:literal { $($(#[$fdoc:meta])* $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl From<$name> for $crate::Event {
            fn from(e: $name) -> Self {
                $crate::Event::new($kind)$(.attr(stringify!($field), e.$field))*
            }
        }

        impl $crate::TypedEvent for $name {
            const KIND: &'static str = $kind;

            fn decode<'a>(kind: &str, attr: impl Fn(&str) -> Option<&'a str>) -> Option<Self> {
                let _ = &attr;
                if kind != $kind {
                    return None;
                }
                Some($name {
                    $($field: <$ty as $crate::EventAttr>::parse_attr(attr(stringify!($field))?)?,)*
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Address;

    crate::typed_event!(
        /// An event with one attribute of every supported kind.
        EveryKindEvent = "test.every_kind" {
            /// A small number.
            round: u8,
            /// An amount.
            amount: u128,
            /// A flag.
            yes: bool,
            /// An account.
            who: Address,
            /// A name.
            why: Cow<'static, str>,
        }
    );

    fn sample() -> EveryKindEvent {
        EveryKindEvent {
            round: 2,
            amount: u128::MAX,
            yes: true,
            who: Address([9; 20]),
            why: "expired".into(),
        }
    }

    #[test]
    fn a_typed_event_decodes_from_what_it_encodes() {
        let event: Event = sample().into();
        assert_eq!(event.kind, EveryKindEvent::KIND);
        assert_eq!(EveryKindEvent::from_event(&event), Some(sample()));
    }

    #[test]
    fn another_kind_or_a_missing_or_bad_attribute_decodes_to_nothing() {
        let mut event: Event = sample().into();
        event.kind = "test.other".into();
        assert_eq!(EveryKindEvent::from_event(&event), None);

        let mut event: Event = sample().into();
        event.attributes.retain(|(k, _)| k != "who");
        assert_eq!(EveryKindEvent::from_event(&event), None);

        let mut event: Event = sample().into();
        for (k, v) in &mut event.attributes {
            if k == "round" {
                *v = "300".into();
            }
        }
        assert_eq!(EveryKindEvent::from_event(&event), None, "300 is no u8");
    }
}
