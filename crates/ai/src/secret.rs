//! Keeping the API key out of every text a caller sees: [`redact`] removes it (and a start of it
//! cut off where a long text was shortened) from error texts; every provider's error passes
//! through [`ReplyBuilder::fail`](crate::reply::ReplyBuilder::fail), which calls it.

use crate::options::ApiKey;

/// What a redacted key is replaced with.
const REDACTED: &str = "<redacted>";

/// Shortest start of a key that is redacted where a text was cut right inside the key.
const MIN_REDACTED_PREFIX: usize = 8;

/// Removes the API key from a text (servers sometimes echo it back). Every provider's error text
/// passes through here ([`ReplyBuilder::fail`](crate::reply::ReplyBuilder::fail)). Besides the
/// whole key, the start of the key (8 characters or more) is removed where the text ends or was
/// cut (`…`), so a long error body shortened inside the key shows none of it.
///
/// ```
/// use oxpi_ai::options::ApiKey;
/// use oxpi_ai::secret::redact;
///
/// let key = ApiKey::new("sk-0123456789abcdef");
/// assert_eq!(redact("bad key sk-0123456789abcdef".into(), Some(&key)), "bad key <redacted>");
/// assert_eq!(redact("… key sk-0123456…".into(), Some(&key)), "… key <redacted>…");
/// ```
pub fn redact(text: String, secret: Option<&ApiKey>) -> String {
    let Some(key) = secret.map(ApiKey::expose) else {
        return text;
    };
    if key.len() < 4 {
        return text;
    }
    let mut text = if text.contains(key) {
        text.replace(key, REDACTED)
    } else {
        text
    };
    if key.len() <= MIN_REDACTED_PREFIX {
        return text;
    }
    // Where the text was cut: before each `…`, and its end. From the last, so earlier indices
    // stay valid as ranges are replaced.
    let mut cuts: Vec<usize> = text.match_indices('…').map(|(at, _)| at).collect();
    cuts.push(text.len());
    for &cut in cuts.iter().rev() {
        let before = &text[..cut];
        let prefix = (MIN_REDACTED_PREFIX..key.len())
            .rev()
            .filter(|&n| key.is_char_boundary(n))
            .find(|&n| before.ends_with(&key[..n]));
        if let Some(n) = prefix {
            text.replace_range(cut - n..cut, REDACTED);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_removes_the_key_and_its_cut_off_start() {
        let key = ApiKey::new("sk-abcdefghijklmnop");
        let cases = [
            ("no key here", "no key here"),
            (
                "a sk-abcdefghijklmnop b sk-abcdefghijklmnop",
                "a <redacted> b <redacted>",
            ),
            // Cut inside the key, at the end or before `…` (twice in one text).
            ("ends in sk-abcdefgh", "ends in <redacted>"),
            ("x sk-abcdefghij… (99 bytes)", "x <redacted>… (99 bytes)"),
            (
                "a sk-abcdefghi… b sk-abcdefghijkl…",
                "a <redacted>… b <redacted>…",
            ),
            // Fewer than 8 characters of the key, or not at a cut: left alone.
            ("ends in sk-abcd", "ends in sk-abcd"),
            (
                "sk-abcdefgh is mentioned mid-text",
                "sk-abcdefgh is mentioned mid-text",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(redact(text.to_string(), Some(&key)), expected, "{text}");
        }
        assert_eq!(redact("sk-abcdefgh".to_string(), None), "sk-abcdefgh");
        // A key too short to redact safely is left to the exact match only.
        let short = ApiKey::new("abc");
        assert_eq!(redact("abc…".to_string(), Some(&short)), "abc…");
    }
}
