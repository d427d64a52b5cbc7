//! Recovery from a full context (pi's overflow recovery): a provider's context-overflow error
//! or an early `length` stop leaves the failed reply out, compacts and retries the turn once,
//! and the prompt is never lost (pi #7086); a second failure gives up with a clear outcome.
//! And a compaction the application asks for (the RPC `compact` command).

mod common;

use std::sync::{Arc, Mutex};

use oxpi_agent_core::{Agent, AgentError, AgentOptions};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::{Context, Message, ProviderRegistry, StopReason, Usage};
use oxpi_session::{
    bind_agent_with, to_llm_messages, AutoCompaction, CompactionReason, CompactionSettings,
    ModelSummarizer, NewSessionOptions, RunError, SessionBinding, SessionManager,
    SUMMARY_SYSTEM_PROMPT,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const PROMPT: &str = "What is the launch code? Answer from what I said.";

/// The faux model's script: summary requests get a summary; the `n`-th other request gets
/// `reply(n)`. It records the other requests' messages.
#[derive(Clone)]
struct Script {
    requests: Arc<Mutex<Vec<Vec<Value>>>>,
    summaries: Arc<Mutex<usize>>,
}

/// What a test works with: the agent, its session binding, the model's script, the automatic
/// compaction and its summarizer.
type Setup = (
    Agent,
    SessionBinding,
    Script,
    AutoCompaction,
    ModelSummarizer,
);

fn setup(d: &common::Dirs, reply: fn(usize) -> FauxReply) -> Setup {
    setup_with_turns(d, reply, 6)
}

/// [`setup`] with `earlier` turns in the session before the prompt.
fn setup_with_turns(d: &common::Dirs, reply: fn(usize) -> FauxReply, earlier: usize) -> Setup {
    let faux = FauxProvider::new().with_chunk_chars(64);
    let script = Script {
        requests: Arc::default(),
        summaries: Arc::default(),
    };
    for _ in 0..20 {
        let script = script.clone();
        faux.push_fn(move |context: &Context| {
            if context.system_prompt.as_deref() == Some(SUMMARY_SYSTEM_PROMPT) {
                let mut n = script.summaries.lock().expect("summaries");
                *n += 1;
                return FauxReply::text(format!(
                    "## Goal\nKeep the launch code.\n\n## Critical Context\n- summary {n}"
                ));
            }
            let mut requests = script.requests.lock().expect("requests");
            requests.push(
                context
                    .messages
                    .iter()
                    .map(|m| serde_json::to_value(m).expect("json"))
                    .collect(),
            );
            reply(requests.len() - 1)
        });
    }
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let mut model = faux.model();
    model.context_window = 100_000;
    model.max_tokens = 1_000;
    let summarizer = ModelSummarizer::new(model.clone()).with_registry(registry.clone());
    let auto = AutoCompaction::new(&model, summarizer.clone())
        .with_settings(CompactionSettings::new().keep_recent_tokens(300));
    let agent = Agent::new(auto.install(AgentOptions::new(model).with_registry(registry)));
    let mut session =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    // Earlier turns, far below the threshold by the estimate (the provider counts otherwise).
    for t in 0..earlier {
        session
            .append_message(&Message::user(format!("note {t}: {}", "n".repeat(400))))
            .expect("user");
        session
            .append_message_json(json!({"role": "assistant",
                "content": [{"type": "text", "text": "a".repeat(400)}],
                "api": "faux", "provider": "faux", "model": "faux-model", "stopReason": "stop",
                "timestamp": t,
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}))
            .expect("reply");
    }
    let binding = bind_agent_with(&agent, session, &auto).expect("bind");
    (agent, binding, script, auto, summarizer)
}

fn overflow() -> FauxReply {
    FauxReply::error("prompt is too long: 150000 tokens > 100000 maximum")
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn file_lines(binding: &SessionBinding) -> Vec<Value> {
    common::lines(&binding.with_session(|s| s.session_file().expect("file").to_path_buf()))
}

/// The prompt's `message` entries in the file.
fn prompts_in_file(lines: &[Value]) -> usize {
    lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .filter(|l| text_of(&l["message"]) == PROMPT)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_error_compacts_and_retries_the_turn_and_the_prompt_stays() {
    let d = common::dirs();
    let (agent, binding, script, _auto, _) = setup(&d, |n| match n {
        0 => overflow(),
        _ => FauxReply::text("The launch code is in my notes."),
    });
    binding.prompt(&agent, PROMPT).await.expect("prompt");

    let (outcomes, _) = binding.take_compactions();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[0].reason, CompactionReason::Overflow);
    assert!(outcomes[0].will_retry && outcomes[0].entry_id.is_some());
    let requests = script.requests.lock().expect("requests").clone();
    assert_eq!(requests.len(), 2, "the first request and its one retry");
    // The retry: the summary first, the prompt last, the failed reply nowhere.
    let retry = &requests[1];
    assert!(text_of(&retry[0]).contains("<summary>\n## Goal\nKeep the launch code."));
    assert_eq!(retry.last().map(text_of).as_deref(), Some(PROMPT));
    assert!(retry.iter().all(|m| m["stopReason"] != "error"));

    let lines = file_lines(&binding);
    assert_eq!(prompts_in_file(&lines), 1, "the prompt is in the file once");
    let failed = lines
        .iter()
        .find(|l| l["type"] == "message" && l["message"]["stopReason"] == "error")
        .expect("the failed reply stays in the file");
    let edit = lines
        .iter()
        .find(|l| l["type"] == "context_edit")
        .expect("an omission");
    assert_eq!(edit["targetId"], failed["id"]);
    assert_eq!(edit["replacement"], Value::Null);
    // The file replays to what the agent holds: the summary, the prompt, the answer.
    let file = binding.with_session(|s| s.session_file().expect("file").to_path_buf());
    drop(binding);
    let reopened = SessionManager::open(&file, None).expect("reopen");
    let replayed = serde_json::to_value(
        to_llm_messages(&reopened.build_session_context().messages).expect("llm"),
    )
    .expect("json");
    assert_eq!(
        replayed,
        serde_json::to_value(agent.messages().as_ref()).expect("json")
    );
    let last = replayed.as_array().and_then(|m| m.last()).expect("answer");
    assert_eq!(text_of(last), "The launch code is in my notes.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_overflow_gives_up_after_one_retry_and_the_prompt_stays() {
    let d = common::dirs();
    let (agent, binding, script, _auto, _) = setup(&d, |_| overflow());
    // Recovery gave up: the run's failure reaches the caller.
    let error = binding
        .prompt(&agent, PROMPT)
        .await
        .expect_err("the overflow stays");
    assert_eq!(
        error.to_string(),
        "prompt is too long: 150000 tokens > 100000 maximum"
    );

    let (outcomes, _) = binding.take_compactions();
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    assert!(outcomes[0].entry_id.is_some() && outcomes[0].will_retry);
    assert_eq!(outcomes[1].entry_id, None);
    assert!(
        outcomes[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("after one compact-and-retry")),
        "{:?}",
        outcomes[1]
    );
    assert_eq!(script.requests.lock().expect("requests").len(), 2);
    assert_eq!(prompts_in_file(&file_lines(&binding)), 1);
    // The agent's context still holds the prompt for the user to retry later.
    let history = serde_json::to_value(agent.messages().as_ref()).expect("json");
    assert!(history
        .as_array()
        .expect("array")
        .iter()
        .any(|m| text_of(m) == PROMPT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_length_stop_is_retried_once_after_compacting() {
    let d = common::dirs();
    let (agent, binding, script, _auto, _) = setup(&d, |n| match n {
        0 => {
            let mut cut = FauxReply::text("The launch").with_stop_reason(StopReason::Length);
            cut.usage = Usage {
                output: 3,
                ..Usage::default()
            };
            cut
        }
        _ => FauxReply::text("The launch code is in my notes."),
    });
    binding.prompt(&agent, PROMPT).await.expect("prompt");
    let (outcomes, _) = binding.take_compactions();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(outcomes[0].will_retry);
    assert_eq!(script.requests.lock().expect("requests").len(), 2);
    let last = serde_json::to_value(agent.messages().last().expect("reply")).expect("json");
    assert_eq!(text_of(&last), "The launch code is in my notes.");
    assert_eq!(prompts_in_file(&file_lines(&binding)), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_reply_cut_at_the_window_with_nothing_to_compact_is_the_outcome() {
    let d = common::dirs();
    let (agent, binding, script, _auto, _) = setup_with_turns(
        &d,
        |_| {
            let mut cut = FauxReply::text("src/a/src/a/src/a").with_stop_reason(StopReason::Length);
            cut.usage = Usage {
                output: 3,
                ..Usage::default()
            };
            cut
        },
        0,
    );
    // Nothing precedes the prompt, so there is nothing to compact and no retry: the run fails
    // saying so, not with "No messages to continue from".
    let error = binding
        .prompt(&agent, PROMPT)
        .await
        .expect_err("the cut reply is the run's failure");
    assert_eq!(
        error.to_string(),
        "the reply stopped at the context window and was left out of the context; \
         context overflow recovery failed: nothing to compact"
    );
    assert!(matches!(
        error,
        RunError::Agent(AgentError::Run {
            stop_reason: Some(StopReason::Length),
            ..
        })
    ));
    let (outcomes, _) = binding.take_compactions();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert_eq!(outcomes[0].error.as_deref(), Some("nothing to compact"));
    assert_eq!(script.requests.lock().expect("requests").len(), 1);
    // The prompt stays in the context and the file, for the user to retry.
    let history = serde_json::to_value(agent.messages().as_ref()).expect("json");
    assert_eq!(
        history.as_array().map(|m| text_of(&m[0])),
        Some(PROMPT.into())
    );
    assert_eq!(prompts_in_file(&file_lines(&binding)), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_the_application_asks_for_gives_the_agent_the_compacted_context() {
    let d = common::dirs();
    let (agent, binding, _script, _auto, summarizer) = setup(&d, |_| FauxReply::text("unused"));
    let before = agent.messages().len();
    let id = binding
        .compact(
            &agent,
            &CompactionSettings::new().keep_recent_tokens(150),
            &summarizer.clone().with_instructions("the launch code"),
            CancellationToken::new(),
        )
        .await
        .expect("compact")
        .expect("an entry");
    let history = serde_json::to_value(agent.messages().as_ref()).expect("json");
    let history = history.as_array().expect("array");
    assert!(history.len() < before, "{} -> {}", before, history.len());
    assert!(text_of(&history[0]).contains("Keep the launch code."));
    let entry = binding
        .with_session(|s| s.entry(&id).cloned())
        .expect("entry");
    assert_eq!(entry.get("fromHook"), Some(&json!(false)));
    let (outcomes, _) = binding.take_compactions();
    assert_eq!(outcomes[0].reason, CompactionReason::Manual);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_window_never_triggers_a_threshold_compaction() {
    let d = common::dirs();
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("fine"));
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let mut model = faux.model();
    model.context_window = 0;
    let summarizer = ModelSummarizer::new(model.clone()).with_registry(registry.clone());
    let auto = AutoCompaction::new(&model, summarizer)
        .with_settings(CompactionSettings::new().keep_recent_tokens(10));
    let agent = Agent::new(auto.install(AgentOptions::new(model).with_registry(registry)));
    let mut session =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    session
        .append_message(&Message::user("n".repeat(4000)))
        .expect("user");
    let binding = bind_agent_with(&agent, session, &auto).expect("bind");
    binding.prompt(&agent, "go").await.expect("prompt");
    assert_eq!(binding.take_compactions().0, Vec::new());
    assert_eq!(faux.call_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_the_agent_cannot_use_is_reported_as_such_not_as_a_compaction() {
    let d = common::dirs();
    let (agent, binding, script, _auto, _) = setup(&d, |_| FauxReply::text("fine"));
    // A message no oxpi-ai message can hold (a known role, content of no known shape),
    // appended after binding. (A role pi does not know is left out of the request instead.)
    binding
        .with_session(|s| {
            s.append_message_json(json!({"role": "user", "content": 5, "timestamp": 7}))
        })
        .expect("append");
    binding.prompt(&agent, PROMPT).await.expect("prompt");

    // The request went out with the agent's own history, and the run ended normally.
    assert_eq!(script.requests.lock().expect("requests").len(), 1);
    let (outcomes, _) = binding.take_compactions();
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    // Before the request: the session's context could not be sent; no threshold was crossed.
    assert_eq!(outcomes[0].reason, CompactionReason::ContextUnusable);
    assert!(
        outcomes[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the request keeps the agent's context")
                && e.contains("(role \"user\")")),
        "{:?}",
        outcomes[0]
    );
    // After the run: the idle agent keeps its history; nothing overflowed.
    assert_eq!(outcomes[1].reason, CompactionReason::ContextUnusable);
    assert!(
        outcomes[1].error.as_deref().is_some_and(
            |e| e.contains("the agent keeps its history") && e.contains("(role \"user\")")
        ),
        "{:?}",
        outcomes[1]
    );
    for outcome in &outcomes {
        assert_eq!(outcome.entry_id, None);
        assert!(!outcome.will_retry);
        assert!(outcome.context_tokens > 0, "{outcome:?}");
    }
    assert_eq!(
        script.summaries.lock().map(|n| *n).expect("summaries"),
        0,
        "nothing was compacted"
    );
}
