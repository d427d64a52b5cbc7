//! The oxpi side of `pi-reqdiff`: each case through `oxpi_ai::stream` with the catalogue model's
//! base URL pointed at the recording server, no retries, drained to its last event.

use std::time::Duration;

use futures::StreamExt;
use oxpi_ai::{AssistantMessageEvent, Context, StreamOptions, ToolChoice};
use serde_json::Value;

use super::cases::Case;

/// How many cases run at once.
const PARALLEL: usize = 16;
/// The longest one case may take (the server answers at once; this only bounds a hang).
const CASE_LIMIT: Duration = Duration::from_secs(30);

/// pi's `streamSimple` options as oxpi's. `Err` names an option oxpi cannot take.
pub(crate) fn options_of(json: &Value) -> Result<StreamOptions, String> {
    let mut options = StreamOptions::default()
        .with_max_retries(0)
        .with_timeout(CASE_LIMIT);
    let Some(map) = json.as_object() else {
        return Err("the options are not an object".into());
    };
    for (key, value) in map {
        let wrong = || format!("option {key}: unexpected value {value}");
        options = match key.as_str() {
            "apiKey" => options.with_api_key(value.as_str().ok_or_else(wrong)?),
            "reasoning" => {
                options.with_reasoning(serde_json::from_value(value.clone()).map_err(|_| wrong())?)
            }
            "cacheRetention" => options
                .with_cache_retention(serde_json::from_value(value.clone()).map_err(|_| wrong())?),
            "sessionId" => options.with_session_id(value.as_str().ok_or_else(wrong)?),
            "toolChoice" => options.with_tool_choice(match value.as_str() {
                Some("auto") => ToolChoice::Auto,
                Some("none") => ToolChoice::None,
                _ => return Err(wrong()),
            }),
            "maxTokens" => options.with_max_tokens(value.as_u64().ok_or_else(wrong)?),
            "temperature" => options.with_temperature(value.as_f64().ok_or_else(wrong)? as f32),
            "headers" => options.with_headers(
                value
                    .as_object()
                    .ok_or_else(wrong)?
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())),
            ),
            "metadata" => options.with_metadata(
                value
                    .as_object()
                    .ok_or_else(wrong)?
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            ),
            // pi's transport choice (the Codex backend's SSE instead of a WebSocket).
            "transport" => options,
            other => return Err(format!("option {other} has no oxpi counterpart")),
        };
    }
    Ok(options)
}

/// Runs one case; `Err` when it could not start (its message is the case's outcome).
async fn run_case(case: &Case, server: &str) -> Result<Option<String>, String> {
    let mut model = case.model.clone();
    model.base_url = case
        .base_url
        .replace("{server}", &format!("{server}/ox/{}", case.id));
    let context: Context = serde_json::from_value(case.context.clone())
        .map_err(|e| format!("oxpi does not read the context: {e}"))?;
    let options = options_of(&case.options)?;
    let mut events = oxpi_ai::stream(&model, &context, options);
    let mut error = None;
    let drain = async {
        while let Some(event) = events.next().await {
            if let AssistantMessageEvent::Error { error: message, .. } = &event {
                error = Some(message.error_message.clone().unwrap_or_default());
            }
        }
    };
    tokio::time::timeout(CASE_LIMIT, drain)
        .await
        .map_err(|_| "oxpi's stream did not end within 30 s".to_string())?;
    Ok(error)
}

/// Runs every case, a few at a time; returns each case's error text (`None` when it ended
/// without one), in the cases' order.
pub(crate) async fn run_all(cases: &[Case], server: &str) -> Vec<Option<String>> {
    futures::stream::iter(cases.iter().map(|case| async move {
        match run_case(case, server).await {
            Ok(error) => error,
            Err(message) => Some(message),
        }
    }))
    .buffered(PARALLEL)
    .collect()
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxpi_ai::{CacheRetention, ReasoningLevel};
    use serde_json::json;

    #[test]
    fn maps_every_option_and_rejects_unknown_ones() {
        let options = options_of(&json!({
            "apiKey": "k", "reasoning": "xhigh", "cacheRetention": "long", "sessionId": "s",
            "toolChoice": "none", "maxTokens": 9, "temperature": 0.25,
            "headers": {"x-a": "1"}, "metadata": {"user_id": "u"}, "transport": "sse"
        }))
        .unwrap();
        assert_eq!(options.api_key.as_ref().map(|k| k.expose()), Some("k"));
        assert_eq!(options.reasoning, Some(ReasoningLevel::Xhigh));
        assert_eq!(options.cache_retention, Some(CacheRetention::Long));
        assert_eq!(options.tool_choice, Some(ToolChoice::None));
        assert_eq!(options.max_tokens, Some(9));
        assert_eq!(options.max_retries, 0);
        assert_eq!(options.headers.get("x-a").map(String::as_str), Some("1"));
        assert_eq!(options.metadata.get("user_id"), Some(&json!("u")));
        assert!(options_of(&json!({"frobnicate": 1}))
            .unwrap_err()
            .contains("frobnicate"));
        assert!(options_of(&json!({"toolChoice": "sometimes"})).is_err());
    }
}
