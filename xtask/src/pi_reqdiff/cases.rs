//! The cases of `pi-reqdiff`: which catalogue models, which contexts (pi's context JSON, read by
//! both sides) and which `streamSimple` options.
//!
//! Models: three of every provider (first, middle, last by id), plus every model whose compat
//! block (with its API, reasoning flag and input kinds) no earlier model of its provider has.
//! Contexts: a plain prompt, tools with nested schemas, a same-model history (thinking with a
//! signature, a tool call, a tool result with an image, a user image), and a history from every
//! other API. Options: none, every reasoning level, cache retention none/short/long with a session
//! id (and one over-long session id), tool choice, max tokens, temperature, extra headers and
//! metadata.

use std::collections::{BTreeMap, BTreeSet};

use oxpi_ai::Model;
use serde_json::{json, Value};

/// One case: a model, a context and options, the same for both sides.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// Unique, URL-safe (`c123`).
    pub(crate) id: String,
    /// The catalogue model.
    pub(crate) model: Model,
    /// The model's base URL with `{server}` in place of its scheme and host.
    pub(crate) base_url: String,
    /// The context's name (`plain`, `tools`, `history-same`, `history-from-<api>`).
    pub(crate) context_name: String,
    /// pi's context JSON.
    pub(crate) context: Value,
    /// The options' name (`default`, `reasoning-high`, …).
    pub(crate) options_name: String,
    /// pi's `streamSimple` options, the same for both sides.
    pub(crate) options: Value,
    /// Options only pi is given: how its Bedrock client reaches a plain HTTP/1.1 server
    /// (`AWS_BEDROCK_FORCE_HTTP1`; the AWS SDK speaks HTTP/2 by default).
    pub(crate) pi_only: Value,
}

impl Case {
    /// The case as the Node driver reads it.
    pub(crate) fn to_driver_json(&self) -> Value {
        json!({
            "id": self.id,
            "provider": self.model.provider,
            "model": self.model.id,
            "baseUrl": self.base_url,
            "context": self.context,
            "options": self.options,
            "piOnly": self.pi_only,
        })
    }

    /// `provider/model context options`, for messages.
    pub(crate) fn label(&self) -> String {
        format!(
            "{}/{} {} {}",
            self.model.provider, self.model.id, self.context_name, self.options_name
        )
    }
}

/// The session id of the cache cases.
const SESSION_ID: &str = "reqdiff-session-0123456789";

/// The models to run: three per provider plus one per distinct compat block.
pub(crate) fn select_models(models: &[Model]) -> Vec<Model> {
    let mut by_provider: BTreeMap<&str, Vec<&Model>> = BTreeMap::new();
    for model in models {
        by_provider.entry(&model.provider).or_default().push(model);
    }
    let mut selected = Vec::new();
    for list in by_provider.values() {
        let picks: BTreeSet<usize> = [0, list.len() / 2, list.len().saturating_sub(1)].into();
        let mut seen = BTreeSet::new();
        for (i, model) in list.iter().enumerate() {
            let key = format!(
                "{}|{}|{}|{:?}",
                model.api,
                model
                    .compat
                    .as_ref()
                    .map(Value::to_string)
                    .unwrap_or_default(),
                model.reasoning,
                model.input
            );
            let new_compat = model.compat.is_some() && !seen.contains(&key);
            if picks.contains(&i) || new_compat {
                selected.push((*model).clone());
            }
            seen.insert(key);
        }
    }
    selected
}

/// `base_url` with its scheme and host replaced by `{server}`, and the catalogue's placeholders
/// (`{CLOUDFLARE_ACCOUNT_ID}`, `{location}`, …) filled with fixed values, the same for both
/// sides. An empty base URL (Azure: the resource comes from the environment) becomes
/// `{server}/openai/v1`.
pub(crate) fn server_base_url(base_url: &str) -> String {
    if base_url.is_empty() {
        return "{server}/openai/v1".to_string();
    }
    let rest = base_url
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(base_url);
    let path = rest.find('/').map(|i| &rest[i..]).unwrap_or("");
    let path = path
        .replace("{CLOUDFLARE_ACCOUNT_ID}", "acct-reqdiff")
        .replace("{CLOUDFLARE_GATEWAY_ID}", "gw-reqdiff")
        .replace("{location}", "us-central1");
    format!("{{server}}{path}")
}

/// The APIs a foreign history can come from, each with a provider and model that produced it.
const HISTORY_SOURCES: [(&str, &str, &str); 6] = [
    ("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
    ("openai-responses", "openai", "gpt-5"),
    ("openai-completions", "deepseek", "deepseek-reasoner"),
    ("google-generative-ai", "google", "gemini-2.5-flash"),
    ("mistral-conversations", "mistral", "mistral-large-latest"),
    (
        "bedrock-converse-stream",
        "amazon-bedrock",
        "anthropic.claude-sonnet-4",
    ),
];

/// A 1×1 PNG.
const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

fn user(text: &str, timestamp: u64) -> Value {
    json!({"role": "user", "content": text, "timestamp": timestamp})
}

fn tools() -> Value {
    json!([
        {
            "name": "read_file",
            "description": "Read a file, optionally a few line ranges of it.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file's path"},
                    "options": {
                        "type": "object",
                        "properties": {
                            "encoding": {"type": "string", "enum": ["utf8", "latin1"]},
                            "ranges": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "start": {"type": "integer", "minimum": 1},
                                        "end": {"type": "integer"}
                                    },
                                    "required": ["start"]
                                }
                            }
                        }
                    }
                },
                "required": ["path"]
            }
        },
        {
            "name": "search",
            "description": "Search the workspace.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": ["integer", "null"]},
                    "filter": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "object", "properties": {"glob": {"type": "string"}}, "additionalProperties": false}
                        ]
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            }
        }
    ])
}

/// The signatures and call id an assistant turn of `api` carries.
fn signatures(api: &str) -> (Value, Value, String) {
    match api {
        "openai-responses" | "azure-openai-responses" | "openai-codex-responses" => (
            json!(json!({"type": "reasoning", "id": "rs_reqdiff1", "summary": [{"type": "summary_text", "text": "Thinking about the file."}], "encrypted_content": "gAAAAreqdiff"}).to_string()),
            json!(json!({"v": 1, "id": "msg_reqdiff1", "phase": "commentary"}).to_string()),
            "call_reqdiff1|fc_reqdiff1.with+odd/chars=long-enough-to-be-cut".to_string(),
        ),
        "openai-completions" => (
            json!("reasoning_content"),
            Value::Null,
            "call_reqdiff1".to_string(),
        ),
        "google-generative-ai" | "google-vertex" => (
            json!("Q2lnQkFWU2lnbmF0dXJlcmVxZGlmZg=="),
            Value::Null,
            "read_file_reqdiff1".to_string(),
        ),
        "mistral-conversations" => (Value::Null, Value::Null, "aBcD3fGh1".to_string()),
        _ => (
            json!("EqQBCkgIBxABGAIiQHJlcWRpZmYtc2lnbmF0dXJl"),
            Value::Null,
            "toolu_01Reqdiff1".to_string(),
        ),
    }
}

/// A user turn with an image, an assistant turn of `api`/`provider`/`model` (thinking with its
/// signature, text, a tool call), the tool's result with an image, and a closing user turn.
fn history(api: &str, provider: &str, model: &str) -> Value {
    let (thinking_signature, text_signature, call_id) = signatures(api);
    let mut thinking =
        json!({"type": "thinking", "thinking": "The user wants the file; read it first."});
    if !thinking_signature.is_null() {
        thinking["thinkingSignature"] = thinking_signature;
    }
    let mut text = json!({"type": "text", "text": "Reading the file."});
    if !text_signature.is_null() {
        text["textSignature"] = text_signature;
    }
    let mut call = json!({"type": "toolCall", "id": call_id, "name": "read_file", "arguments": {"path": "src/main.rs", "options": {"ranges": [{"start": 1, "end": 5}]}}});
    if api.starts_with("google") {
        call["thoughtSignature"] = json!("Q2lnQkFWVGhvdWdodFNpZ25hdHVyZQ==");
    }
    json!([
        {"role": "user", "content": [
            {"type": "text", "text": "What does this screenshot and src/main.rs show?"},
            {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}
        ], "timestamp": 1},
        {"role": "assistant", "content": [thinking, text, call], "api": api, "provider": provider,
         "model": model, "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
         "stopReason": "toolUse", "timestamp": 2},
        {"role": "toolResult", "toolCallId": call_id, "toolName": "read_file", "content": [
            {"type": "text", "text": "fn main() {}"},
            {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}
        ], "isError": false, "timestamp": 3},
        user("Thanks. Now summarise it.", 4)
    ])
}

/// The contexts for `model`: plain, tools, same-model history, one history per other API.
fn contexts(model: &Model) -> Vec<(String, Value)> {
    let system = "You are a terse assistant.";
    let mut out = vec![
        (
            "plain".to_string(),
            json!({"systemPrompt": system, "messages": [user("Say hi.", 1)]}),
        ),
        (
            "tools".to_string(),
            json!({"systemPrompt": system, "messages": [user("Read src/main.rs.", 1)], "tools": tools()}),
        ),
        (
            "history-same".to_string(),
            json!({"systemPrompt": system, "messages": history(model.api.as_str(), &model.provider, &model.id), "tools": tools()}),
        ),
    ];
    for (api, provider, id) in HISTORY_SOURCES {
        if api != model.api.as_str() {
            out.push((
                format!("history-from-{api}"),
                json!({"systemPrompt": system, "messages": history(api, provider, id), "tools": tools()}),
            ));
        }
    }
    out
}

/// The option sets run on the `tools` context (the default, empty one runs on every context).
fn option_sets(model: &Model) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let levels: &[&str] = if model.reasoning {
        &["minimal", "low", "medium", "high", "xhigh", "max"]
    } else {
        &["high"]
    };
    for level in levels {
        out.push((format!("reasoning-{level}"), json!({"reasoning": level})));
    }
    for retention in ["none", "short", "long"] {
        out.push((
            format!("cache-{retention}"),
            json!({"cacheRetention": retention, "sessionId": SESSION_ID}),
        ));
    }
    out.push((
        "cache-long-session-id".to_string(),
        json!({"cacheRetention": "short", "sessionId": "s".repeat(80)}),
    ));
    out.push(("tool-choice-auto".into(), json!({"toolChoice": "auto"})));
    out.push(("tool-choice-none".into(), json!({"toolChoice": "none"})));
    out.push(("max-tokens".into(), json!({"maxTokens": 1234})));
    out.push(("temperature".into(), json!({"temperature": 0.25})));
    out.push((
        "headers".into(),
        json!({"headers": {"x-reqdiff-case": "yes", "x-team": "oxpi"}}),
    ));
    out.push((
        "metadata".into(),
        json!({"metadata": {"user_id": "user-42", "other": "ignored"}}),
    ));
    out
}

/// The API key of a provider's cases: a made-up JWT for the ChatGPT (Codex) backend, which reads
/// the account id from the key, a plain string elsewhere.
pub(crate) fn api_key(model: &Model) -> String {
    if model.api.as_str() == "openai-codex-responses" {
        // {"alg":"none"} . {"https://api.openai.com/auth":{"chatgpt_account_id":"acct-reqdiff"}} . sig
        return "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1yZXFkaWZmIn19.c2ln".to_string();
    }
    format!("key-reqdiff-{}", model.provider)
}

/// Every case for `models`, numbered in order.
pub(crate) fn build(models: &[Model]) -> Vec<Case> {
    let mut cases = Vec::new();
    for model in models {
        let base_url = server_base_url(&model.base_url);
        let key = api_key(model);
        let with_key = |options: &Value| {
            let mut options = options.clone();
            options["apiKey"] = json!(key);
            if model.api.as_str() == "openai-codex-responses" {
                options["transport"] = json!("sse");
            }
            options
        };
        let pi_only = if model.api.as_str() == "bedrock-converse-stream" {
            json!({"env": {"AWS_BEDROCK_FORCE_HTTP1": "1", "AWS_REGION": "us-east-1"}})
        } else {
            json!({})
        };
        let mut runs: Vec<(String, Value, String, Value)> = Vec::new();
        let all = contexts(model);
        for (name, context) in &all {
            runs.push((
                name.clone(),
                context.clone(),
                "default".into(),
                with_key(&json!({})),
            ));
        }
        if model.reasoning {
            if let Some((_, same)) = all.iter().find(|(n, _)| n == "history-same") {
                runs.push((
                    "history-same".into(),
                    same.clone(),
                    "reasoning-high".into(),
                    with_key(&json!({"reasoning": "high"})),
                ));
            }
        }
        if let Some((_, tools)) = all.iter().find(|(n, _)| n == "tools") {
            for (name, options) in option_sets(model) {
                runs.push(("tools".into(), tools.clone(), name, with_key(&options)));
            }
        }
        for (context_name, context, options_name, options) in runs {
            cases.push(Case {
                id: format!("c{}", cases.len()),
                model: model.clone(),
                base_url: base_url.clone(),
                context_name,
                context,
                options_name,
                options,
                pi_only: pi_only.clone(),
            });
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_keep_their_path_and_fill_placeholders() {
        assert_eq!(server_base_url("https://api.openai.com/v1"), "{server}/v1");
        assert_eq!(server_base_url("https://api.anthropic.com"), "{server}");
        assert_eq!(server_base_url(""), "{server}/openai/v1");
        assert_eq!(
            server_base_url("https://gateway.ai.cloudflare.com/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/openai"),
            "{server}/v1/acct-reqdiff/gw-reqdiff/openai"
        );
    }

    #[test]
    fn every_provider_is_selected_and_ids_are_unique() {
        let all = oxpi_ai::models::builtin_models();
        let selected = select_models(all);
        let providers: BTreeSet<&str> = all.iter().map(|m| m.provider.as_str()).collect();
        let chosen: BTreeSet<&str> = selected.iter().map(|m| m.provider.as_str()).collect();
        assert_eq!(providers, chosen);
        let cases = build(&selected[..2]);
        let ids: BTreeSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), cases.len());
        assert!(cases.iter().all(|c| c.options["apiKey"].is_string()));
        assert!(cases
            .iter()
            .any(|c| c.context_name == "history-from-anthropic-messages"));
    }
}
