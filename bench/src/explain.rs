//! Which documented differences explain how oxpi's and pi's final messages differ on a replayed
//! stream ([`explain`]), for `cargo xtask pi-replay`.

use serde_json::{Map, Value};

use crate::replay::{differences, Exchange, Summary, SummaryUsage};

/// A deliberate difference from pi-ai, documented in `docs/differences-from-pi.md` (the
/// anchor is [`Known::anchor`]; the entry's `Concerns:` line says for which pi versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Known {
    /// A reply cut by the output limit in the middle of a tool call's arguments: oxpi keeps `{}`
    /// and an `argumentsError`; pi 0.73.1 salvages the partial JSON as the arguments (pi 1.6
    /// does as oxpi).
    TruncatedArguments,
    /// Arguments `"null"` (Groq, for a tool without properties): oxpi `{}`, pi 0.73.1 `null`,
    /// pi 1.6 `{}` with an `argumentsError`.
    NullArguments,
    /// Responses `response.incomplete`: oxpi `length` with the event's usage; pi 0.73.1 ignores
    /// the event (`stop`, no usage; pi 1.6 does as oxpi).
    ResponsesIncomplete,
    /// OpenRouter's `native_finish_reason` says the upstream model hit its limit while
    /// `finish_reason` says `tool_calls`: oxpi `length`, pi `toolUse`.
    NativeFinishReason,
}

impl Known {
    /// Every documented difference the replay can tell.
    pub const ALL: [Known; 4] = [
        Known::TruncatedArguments,
        Known::NullArguments,
        Known::ResponsesIncomplete,
        Known::NativeFinishReason,
    ];

    /// The heading anchor in `docs/differences-from-pi.md`.
    pub fn anchor(self) -> &'static str {
        match self {
            Known::TruncatedArguments => "truncated-tool-call-arguments",
            Known::NullArguments => "tool-call-arguments-null",
            Known::ResponsesIncomplete => "responses-responseincomplete",
            Known::NativeFinishReason => "openrouter-native_finish_reason",
        }
    }
}

/// Which documented differences explain how `oxpi` and `pi` differ on `exchange`, and the
/// differing fields none of them explains. Only a difference for which `concerns` says yes may
/// explain anything: the replay passes the entries whose `Concerns:` line names the pi version
/// it ran against.
pub fn explain(
    exchange: &Exchange,
    oxpi: &Summary,
    pi: &Summary,
    concerns: impl Fn(Known) -> bool,
) -> (Vec<Known>, Vec<&'static str>) {
    let fields = differences(oxpi, pi);
    let mut known = Vec::new();
    let mut explained: Vec<&'static str> = Vec::new();
    if concerns(Known::ResponsesIncomplete)
        && exchange.api == "openai-responses"
        && oxpi.stop_reason == "length"
        && pi.stop_reason == "stop"
        && pi.usage == SummaryUsage::default()
    {
        known.push(Known::ResponsesIncomplete);
        explained.extend(
            fields
                .iter()
                .filter(|f| **f == "stopReason" || f.starts_with("usage.")),
        );
    }
    if concerns(Known::NativeFinishReason)
        && exchange.api == "openai-completions"
        && exchange.provider == "openrouter"
        && oxpi.stop_reason == "length"
        && pi.stop_reason == "toolUse"
    {
        known.push(Known::NativeFinishReason);
        explained.push("stopReason");
    }
    let call_fields = ["toolCalls", "toolCalls.argumentsError"];
    if call_fields.iter().any(|f| fields.contains(f))
        && oxpi.tool_calls.len() == pi.tool_calls.len()
    {
        let mut all = true;
        for (ours, theirs) in oxpi.tool_calls.iter().zip(&pi.tool_calls) {
            let empty = Value::Object(Map::new());
            if ours.name != theirs.name {
                all = false;
            } else if ours.arguments == theirs.arguments
                && ours.arguments_error == theirs.arguments_error
            {
                continue;
            } else if concerns(Known::TruncatedArguments)
                && ours.arguments_error
                && !theirs.arguments_error
                && oxpi.stop_reason == "length"
            {
                known.push(Known::TruncatedArguments);
            } else if concerns(Known::NullArguments)
                && !ours.arguments_error
                && ours.arguments == empty
                && (theirs.arguments.is_null()
                    || (theirs.arguments == empty && theirs.arguments_error))
            {
                known.push(Known::NullArguments);
            } else {
                all = false;
            }
        }
        if all {
            explained.extend(call_fields);
        }
    }
    known.sort();
    known.dedup();
    let unexplained = fields
        .into_iter()
        .filter(|f| !explained.contains(f))
        .collect();
    (known, unexplained)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::replay::SummaryCall;

    fn all(_: Known) -> bool {
        true
    }

    fn summary() -> Summary {
        Summary {
            id: "x".into(),
            stop_reason: "stop".into(),
            error_message: None,
            text: "hi".into(),
            thinking: String::new(),
            tool_calls: vec![SummaryCall {
                name: "read".into(),
                arguments: serde_json::json!({"path": "a"}),
                arguments_error: false,
            }],
            usage: SummaryUsage {
                input: 1,
                output: 2,
                cache_read: 0,
                cache_write: 0,
                total_tokens: 3,
            },
        }
    }

    fn exchange(api: &str, provider: &str) -> Exchange {
        Exchange {
            id: "x".into(),
            api: api.into(),
            provider: provider.into(),
            model: "m".into(),
            sse: PathBuf::new(),
            status: 200,
            headers: Map::new(),
        }
    }

    #[test]
    fn explain_names_the_documented_differences() {
        let completions = exchange("openai-completions", "openrouter");
        // Cut arguments, with OpenRouter's native reason.
        let mut ours = summary();
        ours.stop_reason = "length".into();
        ours.tool_calls[0].arguments = serde_json::json!({});
        ours.tool_calls[0].arguments_error = true;
        let mut theirs = summary();
        theirs.stop_reason = "toolUse".into();
        assert_eq!(
            explain(&completions, &ours, &theirs, all),
            (
                vec![Known::TruncatedArguments, Known::NativeFinishReason],
                vec![]
            )
        );
        // The same on another provider leaves the stop reason unexplained.
        let groq = exchange("openai-completions", "groq");
        assert_eq!(
            explain(&groq, &ours, &theirs, all),
            (vec![Known::TruncatedArguments], vec!["stopReason"])
        );
        // `null` arguments.
        let mut ours = summary();
        ours.tool_calls[0].arguments = serde_json::json!({});
        let mut theirs = summary();
        theirs.tool_calls[0].arguments = Value::Null;
        assert_eq!(
            explain(&groq, &ours, &theirs, all),
            (vec![Known::NullArguments], vec![])
        );
        // pi 1.6's form: `{}` with an arguments error, where oxpi has none.
        theirs.tool_calls[0].arguments = serde_json::json!({});
        theirs.tool_calls[0].arguments_error = true;
        assert_eq!(
            explain(&groq, &ours, &theirs, all),
            (vec![Known::NullArguments], vec![])
        );
        // Both flag the cut arguments (pi 1.6): nothing to explain.
        let mut cut = summary();
        cut.stop_reason = "length".into();
        cut.tool_calls[0].arguments = serde_json::json!({});
        cut.tool_calls[0].arguments_error = true;
        assert_eq!(explain(&groq, &cut, &cut, |_| false), (vec![], vec![]));
        // Anything else is unexplained.
        let mut other = summary();
        other.text = "different".into();
        assert_eq!(
            explain(&groq, &summary(), &other, all),
            (vec![], vec!["text"])
        );
        // Responses incomplete: length with usage against stop without.
        let mut ours = summary();
        ours.stop_reason = "length".into();
        let mut theirs = summary();
        theirs.usage = SummaryUsage::default();
        assert_eq!(
            explain(&exchange("openai-responses", "openai"), &ours, &theirs, all),
            (vec![Known::ResponsesIncomplete], vec![])
        );
    }

    #[test]
    fn a_difference_explains_nothing_for_a_version_its_entry_does_not_concern() {
        // The cut-arguments stream of OpenRouter, against an entry set where only
        // `native_finish_reason` concerns the version replayed (pi 1.6's case).
        let completions = exchange("openai-completions", "openrouter");
        let mut ours = summary();
        ours.stop_reason = "length".into();
        ours.tool_calls[0].arguments = serde_json::json!({});
        ours.tool_calls[0].arguments_error = true;
        let mut theirs = summary();
        theirs.stop_reason = "toolUse".into();
        let only_native = |k: Known| k == Known::NativeFinishReason;
        assert_eq!(
            explain(&completions, &ours, &theirs, only_native),
            (
                vec![Known::NativeFinishReason],
                vec!["toolCalls", "toolCalls.argumentsError"]
            )
        );
        // And with no entry at all, both fields stay unexplained.
        assert_eq!(
            explain(&completions, &ours, &theirs, |_| false),
            (
                vec![],
                vec!["stopReason", "toolCalls", "toolCalls.argumentsError"]
            )
        );
        // Responses incomplete is not excused when its entry does not concern the version.
        let mut ours = summary();
        ours.stop_reason = "length".into();
        let mut theirs = summary();
        theirs.usage = SummaryUsage::default();
        let (known, unexplained) = explain(
            &exchange("openai-responses", "openai"),
            &ours,
            &theirs,
            |k| k != Known::ResponsesIncomplete,
        );
        assert!(known.is_empty());
        assert!(unexplained.contains(&"stopReason"), "{unexplained:?}");
    }

    #[test]
    fn every_difference_has_a_tagged_entry_on_the_page() {
        let page = include_str!("../../docs/differences-from-pi.md");
        let tags = crate::concerns::concerns_by_anchor(page).expect("the Concerns: lines parse");
        for known in Known::ALL {
            assert!(
                tags.contains_key(known.anchor()),
                "docs/differences-from-pi.md has no tagged entry #{}",
                known.anchor()
            );
        }
    }
}
