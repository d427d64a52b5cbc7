//! Assistant text replayed as Responses `message` items, as pi 1.6 sends them: with the item's
//! own `id`, `status: "completed"` and its `phase` (`commentary` or `final_answer`, which
//! reasoning models use to tell a progress note from the answer), kept from the stream in the
//! text block's `textSignature` as `{"v":1,"id":…,"phase":…}`.
//!
//! Text without a signature (another model's, or an older session's) gets pi's stand-in id
//! `msg_pi_{message}` (`msg_pi_{message}_{block}` after the first text block); an id longer
//! than the API's 64 characters is shortened to `msg_` and a hash of it.

use serde_json::{json, Value};

use crate::types::content::TextContent;

/// The `textSignature` of a streamed `message` item: `{"v":1,"id":…}` with its `phase` when it
/// has one (byte for byte what pi stores).
pub fn encode_text_signature(id: &str, phase: Option<&str>) -> String {
    let quote = |s: &str| Value::String(s.to_string()).to_string();
    match phase {
        Some(phase) => format!(r#"{{"v":1,"id":{},"phase":{}}}"#, quote(id), quote(phase)),
        None => format!(r#"{{"v":1,"id":{}}}"#, quote(id)),
    }
}

/// The item id and phase in a text signature: a v1 object, else the signature itself as the id
/// (an older form). A phase other than `commentary` or `final_answer` is dropped.
pub fn parse_text_signature(signature: &str) -> (String, Option<String>) {
    if signature.starts_with('{') {
        if let Ok(Value::Object(parsed)) = serde_json::from_str::<Value>(signature) {
            if let (Some(1), Some(id)) = (
                parsed.get("v").and_then(Value::as_i64),
                parsed.get("id").and_then(Value::as_str),
            ) {
                let phase = parsed
                    .get("phase")
                    .and_then(Value::as_str)
                    .filter(|p| matches!(*p, "commentary" | "final_answer"))
                    .map(str::to_string);
                return (id.to_string(), phase);
            }
        }
    }
    (signature.to_string(), None)
}

/// The input item of a text block: the `index`-th message of the transformed conversation,
/// its `block`-th text block.
pub fn text_item(text: &TextContent, index: usize, block: usize) -> Value {
    let (id, phase) = match text.text_signature.as_deref().filter(|s| !s.is_empty()) {
        Some(signature) => parse_text_signature(signature),
        None => (String::new(), None),
    };
    let id = if id.is_empty() {
        if block == 0 {
            format!("msg_pi_{index}")
        } else {
            format!("msg_pi_{index}_{block}")
        }
    } else if id.chars().count() > 64 {
        format!("msg_{}", short_hash(&id))
    } else {
        id
    };
    let mut item = json!({
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text.text, "annotations": []}],
        "status": "completed",
        "id": id,
    });
    if let Some(phase) = phase {
        item["phase"] = Value::String(phase);
    }
    item
}

/// pi's `shortHash`: two 32-bit multiply-xor hashes over the UTF-16 code units, in base 36.
pub fn short_hash(text: &str) -> String {
    let mut h1: u32 = 0xdead_beef;
    let mut h2: u32 = 0x41c6_ce57;
    for unit in text.encode_utf16() {
        let unit = u32::from(unit);
        h1 = (h1 ^ unit).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ unit).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip() {
        let signature = encode_text_signature("msg_1", Some("commentary"));
        assert_eq!(signature, r#"{"v":1,"id":"msg_1","phase":"commentary"}"#);
        assert_eq!(
            parse_text_signature(&signature),
            ("msg_1".to_string(), Some("commentary".to_string()))
        );
        // Values from pi's own `shortHash` run under Node.
        assert_eq!(short_hash("hello"), "1h6qa0qrowduu");
        assert_eq!(short_hash("é€😀"), "vyxm7e1ms3g8t");
        assert_eq!(
            parse_text_signature("msg_legacy"),
            ("msg_legacy".to_string(), None)
        );
    }
}
