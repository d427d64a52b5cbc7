//! [`Delta`]: the text a delta event carries (`text_delta`, `thinking_delta`, `toolcall_delta`).
//!
//! A stream of a long reply is mostly delta events of a few bytes each. A `String` per event
//! cost an allocation in the provider and a free in the consumer (about 220 instructions, a
//! tenth of an event's whole cost); a [`Delta`] keeps up to 24 bytes inline, in the same 24
//! bytes a `String` takes, and only longer text on the heap.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

/// The new text of a delta event. Use it as a `&str` (it derefs to one, and prints like one);
/// build it from a `&str`, a `String` or a `Cow<str>` with `.into()`; turn it into a `String`
/// with [`into_string`](Self::into_string) or `String::from`.
///
/// Text of up to 24 bytes is kept inline, without an allocation; longer text is kept on the
/// heap (an owned `String`'s buffer is reused). In JSON it is a plain string, as in pi's events.
///
/// ```
/// use oxpi_ai::event::Delta;
///
/// let delta = Delta::from("Hello");
/// assert_eq!(delta, "Hello");
/// assert_eq!(delta.len(), 5);
/// let mut text = String::from("> ");
/// text.push_str(&delta);
/// assert_eq!(format!("{text} {delta}"), "> Hello Hello");
/// assert_eq!(serde_json::to_string(&delta).unwrap(), r#""Hello""#);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Delta(CompactString);

impl Delta {
    /// A delta holding a copy of `text`.
    #[inline]
    pub fn new(text: &str) -> Self {
        Self(CompactString::new(text))
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The text as a `String` (reusing the heap buffer when there is one).
    #[inline]
    pub fn into_string(self) -> String {
        self.0.into_string()
    }
}

impl Deref for Delta {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for Delta {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Delta {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Delta {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

/// Like a `String`'s: the quoted text.
impl fmt::Debug for Delta {
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for Delta {
    #[inline]
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<&String> for Delta {
    #[inline]
    fn from(text: &String) -> Self {
        Self::new(text)
    }
}

impl From<String> for Delta {
    #[inline]
    fn from(text: String) -> Self {
        Self(CompactString::from(text))
    }
}

impl From<Cow<'_, str>> for Delta {
    #[inline]
    fn from(text: Cow<'_, str>) -> Self {
        Self(CompactString::from(text))
    }
}

impl From<Delta> for String {
    #[inline]
    fn from(delta: Delta) -> Self {
        delta.into_string()
    }
}

impl PartialEq<str> for Delta {
    #[inline]
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Delta {
    #[inline]
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Delta {
    #[inline]
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Delta> for str {
    #[inline]
    fn eq(&self, other: &Delta) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Delta> for &str {
    #[inline]
    fn eq(&self, other: &Delta) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Delta> for String {
    #[inline]
    fn eq(&self, other: &Delta) -> bool {
        self.as_str() == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_text_read_back_the_same() {
        let long = "x".repeat(100);
        for text in [
            "",
            "a",
            "é ü 日本",
            "exactly twenty-four byte",
            long.as_str(),
        ] {
            assert_eq!(Delta::from(text).as_str(), text);
            assert_eq!(Delta::from(text.to_string()).as_str(), text);
            assert_eq!(Delta::from(Cow::Borrowed(text)).as_str(), text);
            assert_eq!(Delta::from(text).into_string(), text);
        }
    }

    #[test]
    fn json_and_debug_are_those_of_a_string() {
        for text in ["", "line\n\"quoted\"", "日本", &"long ".repeat(20)] {
            let delta = Delta::from(text);
            assert_eq!(
                serde_json::to_string(&delta).unwrap(),
                serde_json::to_string(text).unwrap()
            );
            assert_eq!(format!("{delta:?}"), format!("{text:?}"));
            assert_eq!(format!("{delta}"), text);
            let back: Delta = serde_json::from_str(&serde_json::to_string(text).unwrap()).unwrap();
            assert_eq!(back, text);
        }
    }

    #[test]
    fn compares_with_strings_both_ways() {
        let delta = Delta::from("abc");
        let (text, owned): (&str, String) = ("abc", "abc".to_string());
        assert_eq!(delta, text);
        assert_eq!(text, delta);
        assert_eq!(delta, owned);
        assert_eq!(owned, delta);
        assert_ne!(delta, "abd");
    }
}
