//! App-defined messages in the agent's history (pi-agent-core 1.6's `CustomAgentMessages`, held
//! as [`Message::Custom`]): pi's own JSON of them reads and writes back unchanged, they get
//! `message_start` / `message_end` and stay in the history as pi's agent keeps them, the default
//! `convert_to_llm` leaves them out of the request (the bytes a local server receives hold no
//! trace of them), a custom one turns them into user messages as pi's coding agent does, and
//! no provider ever receives one as it is.
//!
//! `fixtures/pi16/custom_messages.json` was recorded by `bench/node/pi16/custom_messages.mjs`
//! on pi-coding-agent 1.6.0 (its `SessionManager` and `convertToLlm`) and pi-agent-core 1.6.0 (an
//! `Agent` on pi-ai's faux provider, prompted with the session context's messages).

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use oxpi_agent_core::{Agent, AgentEvent, AgentOptions};
use oxpi_ai::faux::FauxReply;
use oxpi_ai::{
    Context, CustomMessage, Message, Model, StreamOptions, UserContent, UserMessage,
    UserMessageContent,
};
use oxpi_testkit::{Reply, TestServer};
use serde_json::{json, Value};

fn recording() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/pi16/custom_messages.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every number as an f64: JavaScript writes a zero cost as `0`, serde an `f64` zero as `0.0`.
fn numbers_as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Parses pi's JSON of a message, asserts it writes back unchanged, returns it.
fn round_trip(what: &str, value: &Value) -> Message {
    let message: Message = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{what}: pi's JSON does not parse: {e}\n{value:#}"));
    let back = serde_json::to_value(&message).unwrap();
    assert_eq!(
        numbers_as_f64(&back),
        numbers_as_f64(value),
        "{what}: the round trip changed pi's JSON"
    );
    message
}

fn messages(value: &Value) -> Vec<Message> {
    value
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, m)| round_trip(&format!("message {i}"), m))
        .collect()
}

/// The prompt pi's script gave its agent: the context's app-defined messages, then `go on`.
fn prompt(recording: &Value) -> Vec<Message> {
    let mut prompt: Vec<Message> = messages(&recording["context"])
        .into_iter()
        .filter(|m| !matches!(m, Message::User(_) | Message::Assistant(_)))
        .collect();
    prompt.push(
        serde_json::from_value(json!({"role": "user", "content": "go on", "timestamp": 5}))
            .unwrap(),
    );
    prompt
}

fn text_of(user: &UserMessage) -> String {
    user.text_content()
}

/// pi's coding agent's `convertToLlm` (`core/messages.js`), the facts re-stated for the test.
fn coding_agent_convert(messages: &[Message]) -> Vec<Message> {
    let user = |text: String, timestamp: i64| {
        Message::User(UserMessage {
            content: UserMessageContent::Blocks(vec![UserContent::text(text)]),
            timestamp,
        })
    };
    let str_field = |c: &CustomMessage, key: &str| {
        c.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    messages
        .iter()
        .filter_map(|m| {
            let Message::Custom(c) = m else {
                return Some(m.clone());
            };
            let at = c.timestamp();
            match c.role() {
                "custom" => {
                    let content = match c.get("content") {
                        Some(Value::String(s)) => json!([{"type": "text", "text": s}]),
                        Some(other) => other.clone(),
                        None => json!([]),
                    };
                    Some(Message::User(UserMessage {
                        content: serde_json::from_value(content).unwrap(),
                        timestamp: at,
                    }))
                }
                "bashExecution" if c.get("excludeFromContext") == Some(&json!(true)) => None,
                "bashExecution" => {
                    let mut text = format!("Ran `{}`\n", str_field(c, "command"));
                    let output = str_field(c, "output");
                    if output.is_empty() {
                        text.push_str("(no output)");
                    } else {
                        text.push_str(&format!("```\n{output}\n```"));
                    }
                    let code = c.get("exitCode").and_then(Value::as_i64);
                    if c.get("cancelled") == Some(&json!(true)) {
                        text.push_str("\n\n(command cancelled)");
                    } else if let Some(code) = code.filter(|c| *c != 0) {
                        text.push_str(&format!("\n\nCommand exited with code {code}"));
                    }
                    if c.get("truncated") == Some(&json!(true)) && c.get("fullOutputPath").is_some() {
                        text.push_str(&format!(
                            "\n\n[Output truncated. Full output: {}]",
                            str_field(c, "fullOutputPath")
                        ));
                    }
                    Some(user(text, at))
                }
                "branchSummary" => Some(user(
                    format!("The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{}</summary>", str_field(c, "summary")),
                    at,
                )),
                "compactionSummary" => Some(user(
                    format!("The conversation history before this point was compacted into the following summary:\n\n<summary>\n{}\n</summary>", str_field(c, "summary")),
                    at,
                )),
                _ => None,
            }
        })
        .collect()
}

fn text_reply(text: &str) -> Reply {
    Reply::sse([
        format!("data: {{\"id\":\"c1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n"),
        "data: [DONE]\n\n".to_string(),
    ])
}

fn server_options(server: &TestServer) -> AgentOptions {
    let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    AgentOptions::new(model).with_stream_options(
        StreamOptions::default()
            .with_max_retries(0)
            .with_timeout(Duration::from_secs(10)),
    )
}

/// The text of each message of a Chat Completions request body.
fn body_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

/// Words of the app-defined messages that must not reach a request.
const TRACES: [&str; 9] = [
    "bashExecution",
    "customType",
    "compactionSummary",
    "branchSummary",
    "sleep 9",
    "ls nope",
    "An extension's note",
    "Went elsewhere",
    "Summary of nothing yet",
];

#[test]
fn pi_1_6s_app_defined_messages_read_and_write_back_unchanged() {
    let recording = recording();
    let context = messages(&recording["context"]);
    let kinds: Vec<&str> = context.iter().map(Message::role).collect();
    assert_eq!(
        kinds,
        [
            "compactionSummary",
            "user",
            "bashExecution",
            "bashExecution",
            "custom",
            "custom",
            "assistant",
            "branchSummary"
        ]
    );
    for message in &context {
        assert_eq!(
            matches!(message, Message::Custom(_)),
            !["user", "assistant"].contains(&message.role()),
            "{} is held as what it is",
            message.role()
        );
    }
    let Message::Custom(note) = &context[4] else {
        panic!("the extension's note is a custom message")
    };
    assert_eq!(note.get("customType"), Some(&json!("note")));
    assert_eq!(note.get("details"), Some(&json!({"source": "ext", "n": 1})));
    // A `message` entry of pi's session file holds a bashExecution message as it is.
    for entry in recording["sessionFile"].as_array().unwrap() {
        if entry["type"] == "message" {
            round_trip("a session file's message entry", &entry["message"]);
        }
    }
    // And pi's agent history after a run (custom kinds in place, the turn after them).
    for run in ["defaultRun", "convertedRun"] {
        messages(&recording[run]["messages"]);
    }
}

#[test]
fn a_model_role_is_never_an_app_defined_one_and_a_bad_llm_message_stays_an_error() {
    for role in ["system", "user", "assistant", "toolResult", ""] {
        assert!(
            CustomMessage::new(role, Default::default()).is_err(),
            "{role:?}"
        );
    }
    let mut fields = serde_json::Map::new();
    fields.insert("role".into(), json!("x"));
    assert!(CustomMessage::new("note", fields).is_err());
    let mut note = CustomMessage::new("note", Default::default()).unwrap();
    assert!(note.insert("role", json!("user")).is_err());
    // A message with a model's role and a bad field is an error, not an app-defined message.
    let bad = serde_json::from_value::<Message>(json!({"role": "user", "timestamp": 1}));
    assert!(bad.unwrap_err().to_string().contains("content"));
    let missing = serde_json::from_value::<Message>(json!({"content": "x"}));
    assert!(missing.unwrap_err().to_string().contains("role"));
    let number = serde_json::from_value::<Message>(json!({"role": 7}));
    assert!(number.is_err());
}

#[tokio::test]
async fn app_defined_messages_get_message_start_and_end_and_stay_in_the_history_as_pis() {
    let recording = recording();
    let pi_run = &recording["defaultRun"];
    let faux = faux();
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux));
    let events: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let sink = events.clone();
    let _sub = agent.subscribe(move |e| {
        if !matches!(e, AgentEvent::MessageUpdate { .. }) {
            sink.lock().unwrap().push(e.clone());
        }
    });
    agent.prompt(prompt(&recording)).await.unwrap();
    assert_eq!(agent.error_message(), None);
    let events = events.lock().unwrap().clone();
    assert_event_grammar(&events);

    let summary = |e: &Value| {
        format!(
            "{} {}",
            e["type"].as_str().unwrap(),
            e["message"]["role"].as_str().unwrap_or("")
        )
    };
    let ours: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let theirs = pi_run["events"].as_array().unwrap();
    assert_eq!(
        ours.iter().map(summary).collect::<Vec<_>>(),
        theirs.iter().map(summary).collect::<Vec<_>>(),
        "the event sequence of pi 1.6's agent"
    );
    // The events of app-defined messages are pi's, field for field.
    for (ours, theirs) in ours.iter().zip(theirs) {
        let role = theirs["message"]["role"].as_str().unwrap_or("");
        if !["", "user", "assistant"].contains(&role) {
            assert_eq!(ours, theirs, "{role}");
        }
    }
    // The history holds them where pi's does.
    let history = agent.messages();
    let pi_history = pi_run["messages"].as_array().unwrap();
    assert_eq!(
        history.iter().map(Message::role).collect::<Vec<_>>(),
        pi_history
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect::<Vec<_>>()
    );
    for (ours, theirs) in history.iter().zip(pi_history) {
        if let Message::Custom(_) = ours {
            assert_eq!(&serde_json::to_value(ours).unwrap(), theirs);
        }
    }
    // agent_end lists them with the run's other messages.
    let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() else {
        panic!("the run ends with agent_end")
    };
    assert_eq!(messages.len(), pi_history.len());
    // The faux provider saw only the user message, as pi's did.
    assert_eq!(pi_run["requests"][0].as_array().unwrap().len(), 1);
    assert_eq!(faux.requests()[0].roles, ["user"]);
}

#[tokio::test]
async fn the_default_convert_to_llm_sends_no_trace_of_them() {
    let recording = recording();
    let server = TestServer::start(vec![text_reply("done")]).await.unwrap();
    let agent = Agent::new(server_options(&server));
    agent.prompt(prompt(&recording)).await.unwrap();
    assert_eq!(agent.error_message(), None);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = String::from_utf8(requests[0].body.clone()).unwrap();
    for trace in TRACES {
        assert!(
            !body.contains(trace),
            "{trace:?} reached the request: {body}"
        );
    }
    assert_eq!(
        body_texts(&requests[0].json()),
        [("user".to_string(), "go on".to_string())]
    );
    // They are still in the history, for the application.
    assert_eq!(agent.messages().iter().filter(|m| !m.is_llm()).count(), 6);
}

#[tokio::test]
async fn a_custom_convert_to_llm_sends_them_as_pis_coding_agent_does() {
    let recording = recording();
    let server = TestServer::start(vec![text_reply("done")]).await.unwrap();
    let agent = Agent::new(server_options(&server).with_convert_to_llm(coding_agent_convert));
    agent.prompt(prompt(&recording)).await.unwrap();
    assert_eq!(agent.error_message(), None);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    // The request holds, as user messages, the texts pi's coding agent made of them.
    let pi_request: Vec<(String, String)> = recording["convertedRun"]["requests"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let user: UserMessage = serde_json::from_value(m.clone()).unwrap();
            ("user".to_string(), text_of(&user))
        })
        .collect();
    assert_eq!(pi_request.len(), 7, "pi sent every one but none excluded");
    assert_eq!(body_texts(&requests[0].json()), pi_request);
    let body = String::from_utf8(requests[0].body.clone()).unwrap();
    assert!(!body.contains("bashExecution") && !body.contains("customType"));
}

#[tokio::test]
async fn what_a_custom_convert_to_llm_leaves_app_defined_is_still_not_sent() {
    let server = TestServer::start(vec![text_reply("done")]).await.unwrap();
    let note = CustomMessage::from_value(
        json!({"role": "notification", "text": "secret-note", "timestamp": 1}),
    )
    .unwrap();
    // The stream function sees what a provider would: no app-defined message.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let agent = Agent::new(
        server_options(&server)
            .with_convert_to_llm(|messages: &[Message]| messages.to_vec())
            .with_stream_fn(move |model, context, options| {
                let roles = context.messages.iter().map(|m| m.role().to_string());
                log.lock().unwrap().extend(roles);
                oxpi_ai::stream(model, context, options)
            }),
    );
    agent
        .prompt(vec![Message::Custom(note), Message::user("hello")])
        .await
        .unwrap();
    assert_eq!(agent.error_message(), None);
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert!(
        !body.contains("secret-note") && !body.contains("notification"),
        "{body}"
    );
    assert_eq!(*seen.lock().unwrap(), ["user"]);
    assert_eq!(agent.messages()[0].role(), "notification");
}

#[tokio::test]
async fn a_provider_never_receives_one_even_outside_an_agent() {
    let server = TestServer::start(vec![text_reply("done")]).await.unwrap();
    let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    let note = CustomMessage::from_value(
        json!({"role": "custom", "customType": "ui", "content": "secret-note", "display": true, "timestamp": 1}),
    )
    .unwrap();
    let context = Context::new("Be brief.")
        .with_message(Message::Custom(note))
        .with_message(Message::user("hello"));
    // The shared request step drops it before any provider's converter.
    let request = context.for_request();
    assert_eq!(
        request
            .messages
            .iter()
            .map(Message::role)
            .collect::<Vec<_>>(),
        ["user"]
    );
    let reply = oxpi_ai::complete(
        &model,
        &context,
        StreamOptions::default().with_max_retries(0),
    )
    .await;
    assert_eq!(reply.text(), "done", "{:?}", reply.error_message);
    let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
    assert!(
        !body.contains("secret-note") && !body.contains("customType"),
        "{body}"
    );
    assert_eq!(
        body_texts(&serde_json::from_str(&body).unwrap()),
        [
            ("system".to_string(), "Be brief.".to_string()),
            ("user".to_string(), "hello".to_string())
        ]
    );
}

#[tokio::test]
async fn a_steered_app_defined_message_gets_its_events_too() {
    let faux = faux();
    faux.push(call("c1", "read", json!({"path": "a"})));
    faux.push(FauxReply::text("done"));
    let agent = Agent::new(options(&faux).with_tool(handle(ReadTool::default())));
    let (log, _sub) = EventLog::attach(&agent);
    let note = CustomMessage::from_value(json!({"role": "custom", "customType": "steer", "content": "x", "display": false, "timestamp": 2})).unwrap();
    agent.steer(Message::Custom(note.clone()));
    agent.prompt("read a").await.unwrap();
    let custom_events: Vec<String> = log
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message }
                if !message.is_llm() =>
            {
                Some(event_name(e))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        custom_events,
        ["message_start(custom)", "message_end(custom)"]
    );
    assert!(agent.messages().contains(&Message::Custom(note)));
    // The faux provider never saw it.
    assert!(faux.requests().iter().all(|r| !r.roles.contains(&"custom")));
}
