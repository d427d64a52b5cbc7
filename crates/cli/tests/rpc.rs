//! `oxpi --mode rpc` as a process, driven with JSON lines as pi's clients send them, against a
//! scripted Chat Completions server: a prompt with a tool call, steering, abort, the state and
//! messages, fork, clone, switch_session, new_session, and pi's error shapes.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

struct Rpc {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    records: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
    next: u32,
}

impl Rpc {
    fn start(d: &Dirs, extra: &[String]) -> Self {
        let mut command = oxpi(d);
        command
            .args(["--mode", "rpc"])
            .args(extra)
            .stdin(Stdio::piped());
        let mut child = command.spawn().expect("start oxpi --mode rpc");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, records) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).await.unwrap_or(0) > 0 {
                let text = String::from_utf8(std::mem::take(&mut line)).expect("UTF-8");
                assert!(text.ends_with('\n'), "a record ends with LF: {text:?}");
                let value: Value = serde_json::from_str(&text).expect("one JSON record per line");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            records,
            seen: Vec::new(),
            next: 0,
        }
    }

    async fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends `command` with a fresh id; returns its response.
    async fn call(&mut self, mut command: Value) -> Value {
        self.next += 1;
        let id = format!("req-{}", self.next);
        command["id"] = json!(id);
        self.send_raw(&command.to_string()).await;
        self.until(|r| r["type"] == "response" && r["id"] == json!(id))
            .await
    }

    /// The next record matching `pred` (records before it are kept in `seen`).
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let record = match tokio::time::timeout(DEADLINE, self.records.recv()).await {
                Ok(Some(record)) => record,
                Ok(None) => panic!("oxpi stopped; records so far: {:?}", self.seen),
                Err(_) => panic!(
                    "no record within {DEADLINE:?}; records so far: {:?}",
                    self.seen
                ),
            };
            self.seen.push(record.clone());
            if pred(&record) {
                return record;
            }
        }
    }

    async fn settled(&mut self) -> Value {
        self.until(|r| r["type"] == "agent_settled").await
    }

    async fn close(mut self) -> Option<i32> {
        drop(self.stdin);
        let status = tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .expect("oxpi exits when stdin closes")
            .unwrap();
        status.code()
    }
}

/// The keys of the object `value`, sorted.
fn sorted_keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn data(response: &Value) -> &Value {
    assert_eq!(response["success"], true, "{response}");
    &response["data"]
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_with_a_tool_call_then_state_messages_and_errors() {
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "rpc works\n").unwrap();
    let server = scripted_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));

    let response = rpc
        .call(json!({"type": "prompt", "message": "read notes.txt"}))
        .await;
    assert_eq!(
        response,
        json!({"id": "req-1", "type": "response", "command": "prompt", "success": true,
               "data": {"disposition": "started"}})
    );
    let settled = rpc.settled().await;
    assert_eq!(settled, json!({"type": "agent_settled", "aborted": false}));
    let types: Vec<&str> = rpc
        .seen
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"tool_execution_end"), "{types:?}");
    assert_eq!(
        types.iter().position(|t| *t == "response"),
        Some(0),
        "the response comes before the run's events"
    );

    let response = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(
        sorted_keys(&response),
        ["command", "data", "id", "success", "type"]
    );
    let state = data(&response);
    // pi's RpcSessionState (`sessionName` only once the session has one).
    assert_eq!(
        sorted_keys(state),
        [
            "autoCompactionEnabled",
            "followUpMode",
            "isCompacting",
            "isStreaming",
            "messageCount",
            "model",
            "pendingMessageCount",
            "sessionFile",
            "sessionId",
            "steeringMode",
            "thinkingLevel"
        ]
    );
    assert_eq!(state["isStreaming"], false);
    assert_eq!(
        state["messageCount"], 5,
        "system, user, assistant, toolResult, assistant"
    );
    assert_eq!(state["model"]["id"], "scripted-1");
    assert_eq!(state["thinkingLevel"], "off");
    assert_eq!(state["steeringMode"], "one-at-a-time");
    let file = state["sessionFile"]
        .as_str()
        .expect("a session file")
        .to_string();
    assert!(std::path::Path::new(&file).is_file());

    let messages = rpc.call(json!({"type": "get_messages"})).await;
    let roles: Vec<&str> = data(&messages)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "toolResult", "assistant"]
    );
    let text = rpc.call(json!({"type": "get_last_assistant_text"})).await;
    assert_eq!(data(&text)["text"], "Done: rpc works");

    let unknown = rpc.call(json!({"type": "teleport"})).await;
    assert_eq!(
        unknown,
        json!({"id": "req-5", "type": "response", "command": "teleport", "success": false,
               "error": "Unknown command: teleport"})
    );
    rpc.send_raw("{not json").await;
    let parse = rpc.until(|r| r["command"] == "parse").await;
    assert_eq!(parse["success"], false);
    assert!(parse.get("id").is_none());
    assert!(parse["error"]
        .as_str()
        .unwrap()
        .starts_with("Failed to parse command: "));
    let bad_model = rpc
        .call(json!({"type": "set_model", "provider": "nobody", "modelId": "x"}))
        .await;
    assert_eq!(bad_model["error"], "Model not found: nobody/x");

    let stats = rpc.call(json!({"type": "get_session_stats"})).await;
    let stats = data(&stats);
    assert_eq!(
        (
            stats["userMessages"].clone(),
            stats["toolCalls"].clone(),
            stats["totalMessages"].clone()
        ),
        (json!(1), json!(1), json!(5))
    );
    assert_eq!(
        stats["tokens"]["input"], 20,
        "the text reply's usage (the tool call reported none)"
    );
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn abort_ends_a_stalled_reply_and_steering_is_queued_while_running() {
    let d = dirs();
    let server = scripted_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));
    rpc.call(json!({"type": "prompt", "message": "be slow"}))
        .await;
    rpc.until(|r| r["assistantMessageEvent"]["type"] == "text_delta")
        .await;
    let busy = rpc
        .call(json!({"type": "prompt", "message": "again"}))
        .await;
    assert_eq!(
        busy["error"],
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    );
    let steer = rpc
        .call(json!({"type": "steer", "message": "use fewer words"}))
        .await;
    assert_eq!(data(&steer), &json!({"disposition": "queued"}));
    let update = rpc
        .seen
        .iter()
        .find(|r| r["type"] == "queue_update")
        .expect("queue_update before the steer's response");
    assert_eq!(update["steering"], json!(["use fewer words"]));
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(data(&state)["isStreaming"], true);
    assert_eq!(data(&state)["pendingMessageCount"], 1);
    let cleared = rpc.call(json!({"type": "clear_queue"})).await;
    assert_eq!(data(&cleared)["steering"], json!(["use fewer words"]));

    let abort = tokio::time::timeout(Duration::from_secs(60), rpc.call(json!({"type": "abort"})))
        .await
        .expect("abort answers");
    assert_eq!(abort["success"], true);
    let settled = rpc
        .seen
        .iter()
        .find(|r| r["type"] == "agent_settled")
        .cloned()
        .expect("the run settled before abort answered");
    assert_eq!(settled["aborted"], true);
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(data(&state)["isStreaming"], false);
    // The agent takes a new prompt after the abort.
    rpc.call(json!({"type": "prompt", "message": "hello"}))
        .await;
    rpc.settled().await;
    let text = rpc.call(json!({"type": "get_last_assistant_text"})).await;
    assert_eq!(data(&text)["text"], "Echo: hello");
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn fork_clone_switch_and_new_session() {
    let d = dirs();
    let server = scripted_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));
    for prompt in ["first", "second"] {
        rpc.call(json!({"type": "prompt", "message": prompt})).await;
        rpc.settled().await;
    }
    let state = rpc.call(json!({"type": "get_state"})).await;
    let original = data(&state)["sessionFile"].as_str().unwrap().to_string();

    let forks = rpc.call(json!({"type": "get_fork_messages"})).await;
    let forks = data(&forks)["messages"].as_array().unwrap().clone();
    assert_eq!(forks.len(), 2);
    assert_eq!(forks[1]["text"], "second");
    let fork = rpc
        .call(json!({"type": "fork", "entryId": forks[1]["entryId"]}))
        .await;
    assert_eq!(data(&fork), &json!({"text": "second", "cancelled": false}));
    let messages = rpc.call(json!({"type": "get_messages"})).await;
    let messages = data(&messages)["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    let texts: Vec<String> = messages.iter().map(|m| m["content"].to_string()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant"],
        "the fork holds the system message (pi 1.6's transcript) and the turn before the forked prompt: {texts:?}"
    );
    assert!(texts[1].contains("first"));
    let state = rpc.call(json!({"type": "get_state"})).await;
    let forked = data(&state)["sessionFile"].as_str().unwrap().to_string();
    assert_ne!(forked, original);

    let bad = rpc.call(json!({"type": "fork", "entryId": "nope"})).await;
    assert_eq!(bad["error"], "Invalid entry ID for forking");

    let switched = rpc
        .call(json!({"type": "switch_session", "sessionPath": original}))
        .await;
    assert_eq!(data(&switched), &json!({"cancelled": false}));
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(data(&state)["sessionFile"], json!(original));
    // The reopened session's history holds its system message, as pi's: 1 + two turns.
    assert_eq!(data(&state)["messageCount"], 5);

    let entries = rpc.call(json!({"type": "get_entries"})).await;
    let entries = data(&entries).clone();
    let ids: Vec<Value> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(entries["leafId"], *ids.last().unwrap());
    let since = rpc
        .call(json!({"type": "get_entries", "since": ids[ids.len() - 2]}))
        .await;
    assert_eq!(data(&since)["entries"].as_array().unwrap().len(), 1);
    let tree = rpc.call(json!({"type": "get_tree"})).await;
    assert_eq!(data(&tree)["tree"].as_array().unwrap().len(), 1, "one root");

    let clone = rpc.call(json!({"type": "clone"})).await;
    assert_eq!(data(&clone), &json!({"cancelled": false}));
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(data(&state)["messageCount"], 5);
    assert_ne!(data(&state)["sessionFile"], json!(original));

    let name = rpc
        .call(json!({"type": "set_session_name", "name": "  work  "}))
        .await;
    assert_eq!(name["success"], true);
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(data(&state)["sessionName"], "work");
    let empty = rpc
        .call(json!({"type": "set_session_name", "name": " "}))
        .await;
    assert_eq!(empty["error"], "Session name cannot be empty");

    let new = rpc.call(json!({"type": "new_session"})).await;
    assert_eq!(data(&new), &json!({"cancelled": false}));
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(data(&state)["messageCount"], 0);
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn bash_runs_streams_is_aborted_and_reaches_the_next_prompt() {
    let d = dirs();
    let server = scripted_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));

    let ran = rpc
        .call(json!({"type": "bash", "command": "echo hello-bash; pwd"}))
        .await;
    let project = d.project.display().to_string();
    assert_eq!(
        ran,
        json!({"id": "req-1", "type": "response", "command": "bash", "success": true,
               "data": {"output": format!("hello-bash\n{project}\n"), "exitCode": 0,
                        "cancelled": false, "truncated": false}})
    );
    assert!(
        rpc.seen.iter().any(|r| r["type"] == "bash_execution_update"
            && r["id"] == "req-1"
            && r["delta"].as_str().unwrap_or("").contains("hello-bash")),
        "the output streamed: {:?}",
        rpc.seen
    );
    let failed = rpc
        .call(json!({"type": "bash", "command": "echo oops >&2; exit 3"}))
        .await;
    assert_eq!(
        data(&failed),
        &json!({"output": "oops\n", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    let hidden = rpc
        .call(json!({"type": "bash", "command": "echo secret-output", "excludeFromContext": true}))
        .await;
    assert_eq!(data(&hidden)["exitCode"], 0);

    // abort_bash, synchronised on the streamed output (the command would sleep 30 s).
    rpc.next += 1;
    let id = format!("req-{}", rpc.next);
    rpc.send_raw(
        &json!({"id": id, "type": "bash", "command": "echo started; sleep 30; echo never"})
            .to_string(),
    )
    .await;
    rpc.until(|r| {
        r["type"] == "bash_execution_update"
            && r["delta"].as_str().unwrap_or("").contains("started")
    })
    .await;
    let abort = rpc.call(json!({"type": "abort_bash"})).await;
    assert_eq!(abort["success"], true, "{abort}");
    let aborted = rpc
        .until(|r| r["type"] == "response" && r["id"] == json!(id))
        .await;
    assert_eq!(
        data(&aborted),
        &json!({"output": "started\n", "cancelled": true, "truncated": false})
    );

    let listed = rpc.call(json!({"type": "get_messages"})).await;
    let bash: Vec<&Value> = data(&listed)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "bashExecution")
        .collect();
    assert_eq!(
        bash.len(),
        4,
        "each run is a bashExecution message: {bash:?}"
    );
    assert_eq!(bash[0]["command"], "echo hello-bash; pwd");
    assert_eq!(bash[2]["excludeFromContext"], true);

    rpc.call(json!({"type": "prompt", "message": "what ran?"}))
        .await;
    rpc.settled().await;
    let request = server.requests().last().cloned().expect("a model request");
    let sent = serde_json::to_string(&messages(&request)).unwrap();
    assert!(sent.contains("Ran `echo hello-bash; pwd`"), "{sent}");
    assert!(sent.contains("hello-bash"), "{sent}");
    assert!(sent.contains("exit 3"), "{sent}");
    assert!(
        !sent.contains("secret-output"),
        "excluded from the context: {sent}"
    );
    assert_eq!(rpc.close().await, Some(0));
}

/// A model whose replies to `fill` prompts report a nearly full 128k window (so the next
/// request is over pi's compaction threshold); requests without tools are summary requests.
async fn filling_server() -> oxpi_testkit::TestServer {
    oxpi_testkit::TestServer::start_fn(|request| {
        let has_tools = request.json()["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty());
        if !has_tools {
            return text_reply("## Goal\nauto summary");
        }
        let prompt = last_user_text(request);
        if !prompt.starts_with("fill") {
            return text_reply("Echo");
        }
        let usage = json!({"id": "c1", "object": "chat.completion.chunk", "created": 1,
            "model": "m", "choices": [],
            "usage": {"prompt_tokens": 119_000, "completion_tokens": 1000, "total_tokens": 120_000}});
        oxpi_testkit::Reply::sse([
            chunk(json!({"role": "assistant", "content": "noted"}), None),
            chunk(json!({}), Some("stop")),
            format!("data: {usage}\n\n"),
            "data: [DONE]\n\n".to_string(),
        ])
    })
    .await
    .expect("start the filling server")
}

/// Two prompts of 100 KB (25,000 tokens by pi's estimate) after a reply that reported 120,000
/// tokens: with automatic compaction on, the second is preceded by a summary request and the
/// session holds a compaction; `set_auto_compaction false` turns that off.
async fn two_full_prompts(auto: bool) -> (Vec<oxpi_testkit::Recorded>, Vec<Value>, Value) {
    let d = dirs();
    let server = filling_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));
    let set = rpc
        .call(json!({"type": "set_auto_compaction", "enabled": auto}))
        .await;
    assert_eq!(set["success"], true, "{set}");
    let filler = "x ".repeat(50_000);
    for n in ["one", "two"] {
        rpc.call(json!({"type": "prompt", "message": format!("fill {n} {filler}")}))
            .await;
        rpc.settled().await;
    }
    let state = rpc.call(json!({"type": "get_state"})).await;
    let listed = rpc.call(json!({"type": "get_messages"})).await;
    let messages = data(&listed)["messages"].as_array().unwrap().clone();
    let state = data(&state).clone();
    assert_eq!(rpc.close().await, Some(0));
    (server.requests(), messages, state)
}

#[tokio::test(flavor = "multi_thread")]
async fn set_auto_compaction_turns_threshold_compaction_on_and_off() {
    let roles = |messages: &[Value]| -> Vec<String> {
        messages
            .iter()
            .map(|m| m["role"].as_str().unwrap_or("?").to_string())
            .collect()
    };
    let summaries = |requests: &[oxpi_testkit::Recorded]| {
        requests
            .iter()
            .filter(|r| r.json()["tools"].as_array().is_none_or(|t| t.is_empty()))
            .count()
    };

    let (requests, messages, state) = two_full_prompts(true).await;
    assert_eq!(state["autoCompactionEnabled"], true);
    assert_eq!(
        summaries(&requests),
        1,
        "one summary request before the second prompt"
    );
    assert_eq!(
        roles(&messages),
        ["system", "compactionSummary", "user", "assistant"],
        "the first exchange is summarized, the second prompt kept"
    );
    let last = requests.last().unwrap();
    let sent = serde_json::to_string(&messages_of(last)).unwrap();
    assert!(
        sent.contains("auto summary"),
        "the request after it carries the summary"
    );
    assert!(!sent.contains("fill one"), "and not the summarized prompt");

    let (requests, messages, state) = two_full_prompts(false).await;
    assert_eq!(state["autoCompactionEnabled"], false);
    assert_eq!(
        summaries(&requests),
        0,
        "no summary request when turned off"
    );
    assert_eq!(
        roles(&messages),
        ["system", "user", "assistant", "user", "assistant"]
    );
}

fn messages_of(request: &oxpi_testkit::Recorded) -> Vec<Value> {
    messages(request)
}

/// One prompt against a server whose first stream is cut after it began: with `auto_retry`
/// the turn is retried (pi's three retries from 2 s); `set_auto_retry false` leaves the failure.
async fn a_cut_stream_prompt(auto: bool) -> (usize, Vec<Value>, Vec<Value>) {
    let begun = format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "a partial answer ".repeat(8)}}]})
    );
    let server = oxpi_testkit::TestServer::start(vec![
        oxpi_testkit::Reply::sse_parts(vec![
            oxpi_testkit::Part::Bytes(begun.into_bytes()),
            oxpi_testkit::Part::Cut,
        ]),
        text_reply("whole answer"),
    ])
    .await
    .expect("start the server");
    let d = dirs();
    let mut rpc = Rpc::start(&d, &model_args(&server));
    let set = rpc
        .call(json!({"type": "set_auto_retry", "enabled": auto}))
        .await;
    assert_eq!(set["success"], true, "{set}");
    rpc.call(json!({"type": "prompt", "message": "hi"})).await;
    rpc.settled().await;
    let listed = rpc.call(json!({"type": "get_messages"})).await;
    let messages = data(&listed)["messages"].as_array().unwrap().clone();
    let retries: Vec<Value> = rpc
        .seen
        .iter()
        .filter(|r| r["type"] == "auto_retry_start" || r["type"] == "auto_retry_end")
        .cloned()
        .collect();
    assert_eq!(rpc.close().await, Some(0));
    (server.requests().len(), messages, retries)
}

#[tokio::test(flavor = "multi_thread")]
async fn set_auto_retry_turns_the_retry_of_a_failed_turn_on_and_off() {
    let assistant = |messages: &[Value]| {
        let last = messages.last().unwrap().clone();
        assert_eq!(last["role"], "assistant", "{messages:?}");
        last
    };
    let (requests, messages, retries) = a_cut_stream_prompt(true).await;
    assert_eq!(requests, 2, "the cut turn was asked again");
    let last = assistant(&messages);
    assert_eq!(
        (
            last["stopReason"].clone(),
            last["content"][0]["text"].clone()
        ),
        (json!("stop"), json!("whole answer"))
    );
    // The failed attempt stays in the session file, as pi keeps it there; `get_messages`
    // answers from the session's context, so it shows both (pi answers from the agent's state).
    let failed = &messages[messages.len() - 2];
    assert_eq!(
        (failed["role"].clone(), failed["stopReason"].clone()),
        (json!("assistant"), json!("error"))
    );
    let kinds: Vec<&Value> = retries.iter().map(|r| &r["type"]).collect();
    assert_eq!(kinds, ["auto_retry_start", "auto_retry_end"]);

    let (requests, messages, retries) = a_cut_stream_prompt(false).await;
    assert_eq!(requests, 1, "no retry once set_auto_retry is false");
    assert_eq!(assistant(&messages)["stopReason"], "error");
    assert_eq!(retries, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn get_commands_lists_prompt_templates_and_a_prompt_expands_them() {
    let d = dirs();
    let prompts = d.home.join(".pi/agent/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("fix.md"),
        "---\ndescription: Fix the tests\n---\nFix $1, then ${2:-stop}.",
    )
    .unwrap();
    let server = scripted_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));
    let response = rpc.call(json!({"type": "get_commands"})).await;
    assert_eq!(
        data(&response),
        &json!({"commands": [{"name": "fix", "description": "Fix the tests", "source": "prompt",
            "sourceInfo": {"path": prompts.join("fix.md"), "source": "local", "scope": "user",
                           "origin": "top-level"}}]})
    );
    rpc.call(json!({"type": "prompt", "message": "/fix \"the parser\""}))
        .await;
    rpc.settled().await;
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "Fix the parser, then stop."
    );
    assert_eq!(rpc.close().await, Some(0));
}

#[tokio::test]
async fn the_queue_modes_of_settings_json_are_the_agent_s() {
    let d = dirs();
    let agent_dir = d.home.join(".pi/agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(
        agent_dir.join("settings.json"),
        r#"{"steeringMode": "all", "followUpMode": "all"}"#,
    )
    .unwrap();
    let server = scripted_server().await;
    let mut rpc = Rpc::start(&d, &model_args(&server));
    let state = rpc.call(json!({"type": "get_state"})).await;
    assert_eq!(
        (&data(&state)["steeringMode"], &data(&state)["followUpMode"]),
        (&json!("all"), &json!("all"))
    );
    assert_eq!(rpc.close().await, Some(0));
}
