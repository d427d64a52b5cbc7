//! A long run on the faux provider with a small window: 200 turns of tool calls go to the
//! end through repeated automatic compactions (summaries asked of the same faux model with
//! the structured prompt), every request fits the window and pairs each tool call with its
//! result, and the session file replays to the context the last request was built from.

mod common;

use std::sync::{Arc, Mutex};

use oxpi_agent_core::{
    Agent, AgentOptions, AgentTool, AgentToolHandle, AgentToolResult, ToolError, ToolUpdateFn,
};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::{Context, ProviderRegistry, Usage};
use oxpi_session::{
    bind_agent_with, estimate_tokens, to_llm_messages, AutoCompaction, CompactionReason,
    CompactionSettings, ModelSummarizer, NewSessionOptions, SessionManager, SUMMARY_SYSTEM_PROMPT,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    path: String,
}

/// A `read` tool answering 1,200 characters (300 estimated tokens) per call.
struct Read;

impl AgentTool for Read {
    type Args = ReadArgs;
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "Read a file"
    }
    async fn execute(
        &self,
        _id: &str,
        args: ReadArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        let body = format!("contents of {}: ", args.path);
        Ok(AgentToolResult::text(format!(
            "{body}{}",
            "x".repeat(1200 - body.len())
        )))
    }
}

const WINDOW: u64 = 6_000;
const TURNS: usize = 200;

#[derive(Default)]
struct Seen {
    turns: usize,
    summaries: Vec<String>,
    max_tokens: u64,
    unpaired: Vec<String>,
    last_request: Vec<Value>,
}

/// The tokens of a request as the session estimates them.
fn request_tokens(context: &Context) -> u64 {
    let system = context
        .system_prompt
        .as_deref()
        .map_or(0, |s| s.len() as u64 / 4);
    system
        + context
            .messages
            .iter()
            .map(|m| estimate_tokens(&serde_json::to_value(m).expect("json")))
            .sum::<u64>()
}

/// Tool results whose call is not in the assistant message before them.
fn unpaired(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m["role"].as_str() {
            Some("assistant") => {
                open = m["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "toolCall")
                    .filter_map(|b| b["id"].as_str().map(str::to_string))
                    .collect();
            }
            Some("toolResult") => {
                let id = m["toolCallId"].as_str().unwrap_or("").to_string();
                if let Some(i) = open.iter().position(|o| *o == id) {
                    open.remove(i);
                } else {
                    out.push(id);
                }
            }
            _ => open.clear(),
        }
    }
    out
}

/// The faux model's script: summary requests get a summary, the others a `read` call until
/// 200 were made, then a final text. Every reply reports the request's tokens as usage.
fn script(seen: &Arc<Mutex<Seen>>, context: &Context) -> FauxReply {
    let tokens = request_tokens(context);
    let usage = Usage {
        input: tokens,
        output: 10,
        total_tokens: tokens + 10,
        ..Usage::default()
    };
    let mut seen = seen.lock().expect("seen");
    if context.system_prompt.as_deref() == Some(SUMMARY_SYSTEM_PROMPT) {
        let message = serde_json::to_value(&context.messages[0]).expect("json");
        let prompt = match &message["content"] {
            Value::String(s) => s.clone(),
            blocks => blocks[0]["text"].as_str().unwrap_or("").to_string(),
        };
        let n = seen.summaries.len();
        seen.summaries.push(prompt);
        let mut reply = FauxReply::text(format!(
            "## Goal\nRead the files one by one (summary {n}).\n\n## Critical Context\n- turn {}",
            seen.turns
        ));
        reply.usage = usage;
        return reply;
    }
    let messages: Vec<Value> = context
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).expect("json"))
        .collect();
    seen.max_tokens = seen.max_tokens.max(tokens);
    seen.unpaired.extend(unpaired(&messages));
    seen.last_request = messages;
    let turn = seen.turns;
    seen.turns += 1;
    let mut reply = if tokens > WINDOW {
        FauxReply::error(format!(
            "prompt is too long: {tokens} tokens > {WINDOW} maximum"
        ))
    } else if turn < TURNS {
        FauxReply::new().with_raw_tool_call(
            Some(format!("call-{turn}")),
            "read",
            json!({"path": format!("src/file{}.rs", turn % 7)}).to_string(),
        )
    } else {
        FauxReply::text("all files read")
    };
    reply.usage = usage;
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_tool_turns_run_through_repeated_compactions_and_replay_from_the_file() {
    let d = common::dirs();
    let faux = FauxProvider::new().with_chunk_chars(64);
    let seen = Arc::new(Mutex::new(Seen::default()));
    for _ in 0..(TURNS + 120) {
        let seen = Arc::clone(&seen);
        faux.push_fn(move |context| script(&seen, context));
    }
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let mut model = faux.model();
    model.context_window = WINDOW;
    model.max_tokens = 1_000;

    let auto = AutoCompaction::new(
        &model,
        ModelSummarizer::new(model.clone()).with_registry(registry.clone()),
    )
    .with_settings(
        CompactionSettings::new()
            .reserve_tokens(1_000)
            .keep_recent_tokens(1_500),
    );
    let agent = Agent::new(
        auto.install(
            AgentOptions::new(model)
                .with_registry(registry)
                .with_max_turns(TURNS + 10),
        ),
    );
    agent.set_tools(vec![AgentToolHandle::new(Read).expect("schema")]);
    let session =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    let binding = bind_agent_with(&agent, session, &auto).expect("bind");

    binding
        .prompt(
            &agent,
            "Read src/file0.rs to src/file6.rs, again and again.",
        )
        .await
        .expect("prompt");

    let (outcomes, dropped) = binding.take_compactions();
    assert_eq!(binding.take_errors().0.len(), 0);
    let seen = seen.lock().expect("seen");
    let last = agent.messages().last().cloned().expect("a reply");
    assert_eq!(
        serde_json::to_value(&last).expect("json")["content"][0]["text"],
        json!("all files read"),
        "the run reached its end: {:?}",
        agent.error_message()
    );
    assert_eq!(seen.turns, TURNS + 1);
    assert!(seen.unpaired.is_empty(), "unpaired: {:?}", seen.unpaired);
    assert!(
        seen.max_tokens <= WINDOW,
        "a request of {} tokens",
        seen.max_tokens
    );
    let succeeded = outcomes.iter().filter(|o| o.entry_id.is_some()).count();
    assert!(
        succeeded >= 10 && dropped == 0,
        "{succeeded} compactions: {outcomes:?}"
    );
    assert!(outcomes
        .iter()
        .all(|o| o.reason == CompactionReason::Threshold && o.error.is_none()));
    assert_eq!(seen.summaries.len(), succeeded, "one summary request each");
    // The first summary starts from nothing; every later one is handed the previous summary.
    assert!(!seen.summaries[0].contains("<previous-summary>"));
    for (n, prompt) in seen.summaries.iter().enumerate().skip(1) {
        let previous = format!("(summary {})", n - 1);
        assert!(
            prompt.contains("<previous-summary>") && prompt.contains(&previous),
            "summary {n} was not handed summary {}: {prompt}",
            n - 1
        );
        assert!(prompt.contains("[Assistant tool calls]: read(path=\"src/file"));
    }

    // The file: one chain, every call answered right after it, nothing lost.
    let file = binding.with_session(|s| s.session_file().expect("file").to_path_buf());
    let lines = common::lines(&file);
    let messages: Vec<Value> = lines
        .iter()
        .filter(|l| l["type"] == "message")
        .map(|l| l["message"].clone())
        .collect();
    let results = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .count();
    assert_eq!(results, TURNS);
    assert!(unpaired(&messages).is_empty());
    let compactions: Vec<&Value> = lines.iter().filter(|l| l["type"] == "compaction").collect();
    assert_eq!(compactions.len(), succeeded);
    let newest = compactions.last().expect("a compaction");
    assert_eq!(newest["fromHook"], json!(false));
    assert!(newest["tokensBefore"].as_u64().expect("tokensBefore") > WINDOW - 1_000);
    let summary = newest["summary"].as_str().expect("summary");
    assert!(
        summary.contains("<read-files>\nsrc/file0.rs\n"),
        "{summary}"
    );
    assert_eq!(
        newest["details"]["readFiles"].as_array().map(Vec::len),
        Some(7),
        "the files read, carried across compactions"
    );

    // The file replays to the context of the last request plus the final reply, and the idle
    // agent holds the same context.
    drop(binding);
    let reopened = SessionManager::open(&file, None).expect("reopen");
    let replayed = serde_json::to_value(
        to_llm_messages(&reopened.build_session_context().messages).expect("llm"),
    )
    .expect("json");
    let mut expected = seen.last_request.clone();
    expected.push(serde_json::to_value(&last).expect("json"));
    // (Compared without printing: the values are hundreds of kilobytes.)
    assert!(
        replayed == Value::Array(expected),
        "the file does not replay to the last request's context"
    );
    assert!(
        replayed == serde_json::to_value(agent.messages().as_ref()).expect("json"),
        "the idle agent does not hold the session's context"
    );
}
