//! The ChatGPT account id in a Codex access token: the JWT's payload claim
//! `https://api.openai.com/auth` → `chatgpt_account_id` (pi's `extractAccountId`). The token is
//! only decoded, never verified (the backend does that); errors never quote the token.

use base64::Engine;
use serde_json::Value;

/// The claim that holds the ChatGPT account fields.
const CLAIM: &str = "https://api.openai.com/auth";

/// The JSON payload of a JWT (three dot-separated parts, the middle one base64, URL-safe or
/// standard alphabet, padded or not), or `None`.
pub(crate) fn payload(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_, Some(middle), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let trimmed = middle.trim_end_matches('=');
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(trimmed)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(trimmed))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The ChatGPT account id of an access token; the error says what is missing, without the token.
pub fn account_id(token: &str) -> Result<String, String> {
    payload(token)
        .as_ref()
        .and_then(|p| p.get(CLAIM))
        .and_then(|claim| claim.get("chatgpt_account_id"))
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "Failed to extract accountId from token".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(payload: &str, engine: &base64::engine::GeneralPurpose) -> String {
        format!("eyJhbGciOiJub25lIn0.{}.c2ln", engine.encode(payload))
    }

    #[test]
    fn reads_the_account_id_in_either_alphabet() {
        let body = r#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acct-1"},"x":"??>>"}"#;
        for engine in [
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            &base64::engine::general_purpose::STANDARD,
        ] {
            assert_eq!(account_id(&token(body, engine)), Ok("acct-1".to_string()));
        }
    }

    #[test]
    fn refuses_tokens_without_the_claim_and_never_quotes_them() {
        let url = &base64::engine::general_purpose::URL_SAFE_NO_PAD;
        for bad in [
            "sk-not-a-jwt".to_string(),
            token(r#"{"sub":"x"}"#, url),
            token(
                r#"{"https://api.openai.com/auth":{"chatgpt_account_id":""}}"#,
                url,
            ),
            "a.b.c.d".to_string(),
            "a.!!!.c".to_string(),
        ] {
            let error = account_id(&bad).unwrap_err();
            assert_eq!(error, "Failed to extract accountId from token");
        }
    }
}
