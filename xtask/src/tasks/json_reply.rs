//! Reading `oxpi --mode json` output for the task suite: the final reply (what `-p` would have
//! printed) and the tokens of each model turn, so a run shows what llama.cpp evaluated per turn
//! and what its prompt cache kept.

use serde_json::Value;

/// One model turn's token counts, from its `message_end` usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TurnTokens {
    /// Prompt tokens evaluated for this turn.
    pub input: u64,
    /// Prompt tokens the server's cache already held.
    pub cache_read: u64,
    /// Tokens generated.
    pub output: u64,
}

/// The final assistant text and every assistant turn's tokens of a `--mode json` record stream.
/// Lines that are not JSON records are skipped.
pub(crate) fn read(stdout: &str) -> (String, Vec<TurnTokens>) {
    let mut answer = String::new();
    let mut turns = Vec::new();
    for line in stdout.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if record["type"] != "message_end" || record["message"]["role"] != "assistant" {
            continue;
        }
        let message = &record["message"];
        let usage = &message["usage"];
        let count = |key: &str| usage[key].as_u64().unwrap_or(0);
        turns.push(TurnTokens {
            input: count("input"),
            cache_read: count("cacheRead"),
            output: count("output"),
        });
        answer = message["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("")
            })
            .unwrap_or_default();
    }
    (answer, turns)
}

/// `1126+14c/30 72+1140c/6`: per turn, tokens evaluated + tokens from the cache / generated.
pub(crate) fn summary(turns: &[TurnTokens]) -> String {
    turns
        .iter()
        .map(|t| format!("{}+{}c/{}", t.input, t.cache_read, t.output))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_assistant_text_and_each_turn_s_tokens() {
        let stdout = concat!(
            r#"{"type":"agent_start"}"#,
            "\n",
            r#"{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"q"}]}}"#,
            "\n",
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","name":"read"}],"usage":{"input":1126,"cacheRead":14,"output":30}}}"#,
            "\n",
            "not json\n",
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"0.7"},{"type":"text","text":".3"}],"usage":{"input":72,"cacheRead":1140,"output":6}}}"#,
            "\n",
        );
        let (answer, turns) = read(stdout);
        assert_eq!(answer, "0.7.3");
        assert_eq!(
            turns,
            vec![
                TurnTokens {
                    input: 1126,
                    cache_read: 14,
                    output: 30
                },
                TurnTokens {
                    input: 72,
                    cache_read: 1140,
                    output: 6
                },
            ]
        );
        assert_eq!(summary(&turns), "1126+14c/30 72+1140c/6");
        assert_eq!(read(""), (String::new(), Vec::new()));
    }
}
