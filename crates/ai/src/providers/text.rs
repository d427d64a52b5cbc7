//! [`Text`]: a JSON string that borrows from the text being parsed when it can, for the
//! stream chunks parsed once per delta.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A JSON string, borrowed from the chunk unless it had escapes.
///
/// (serde borrows a bare `Cow<str>` field, but not one inside an `Option`; this does both.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl<'a> Text<'a> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, owned.
    pub fn into_owned(self) -> String {
        self.0.into_owned()
    }

    /// The same text, borrowed from this one.
    pub fn borrowed(&self) -> Text<'_> {
        Text(Cow::Borrowed(&self.0))
    }

    /// The same text, owned, so it no longer borrows the chunk.
    pub fn into_static(self) -> Text<'static> {
        Text(Cow::Owned(self.0.into_owned()))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}
