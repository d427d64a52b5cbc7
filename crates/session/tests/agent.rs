//! An agent bound to a session: every message it ends is in the file when `prompt` returns,
//! and a session opened again gives a new agent the same history.

mod common;

use oxpi_agent_core::{
    Agent, AgentOptions, AgentTool, AgentToolHandle, AgentToolResult, ToolError, ToolUpdateFn,
};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::ProviderRegistry;
use oxpi_session::{bind_agent, to_llm_messages, NewSessionOptions, SessionManager};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

struct Echo;

impl AgentTool for Echo {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Say the text back"
    }
    async fn execute(
        &self,
        _id: &str,
        args: EchoArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text(format!("echo: {}", args.text)))
    }
}

fn agent(faux: &FauxProvider) -> Agent {
    let mut registry = ProviderRegistry::new();
    registry.register(faux.clone());
    let agent = Agent::new(AgentOptions::new(faux.model()).with_registry(registry));
    agent.set_tools(vec![AgentToolHandle::new(Echo).expect("schema")]);
    agent
}

fn call(id: &str, text: &str) -> FauxReply {
    FauxReply::new().with_raw_tool_call(Some(id.into()), "echo", json!({"text": text}).to_string())
}

/// The agent's history as JSON.
fn history(agent: &Agent) -> Value {
    serde_json::to_value(agent.messages().as_ref()).expect("json")
}

/// The messages of the file's `message` entries, in file order.
fn file_messages(path: &std::path::Path) -> Vec<Value> {
    common::lines(path)
        .into_iter()
        .filter(|l| l["type"] == "message")
        .map(|l| l["message"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_of_a_run_is_in_the_file_and_a_resumed_agent_has_the_same_history() {
    let d = common::dirs();
    let faux = FauxProvider::new();
    faux.push(call("c1", "hi"));
    faux.push(FauxReply::text("done one"));
    let first = agent(&faux);
    let session =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    let binding = bind_agent(&first, session).expect("bind");
    first.prompt("go").await.expect("prompt");
    let file = binding.with_session(|s| s.session_file().expect("file").to_path_buf());
    assert_eq!(binding.take_errors().0.len(), 0);

    let written = file_messages(&file);
    let roles: Vec<&str> = written
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
    assert_eq!(
        Value::Array(written.clone()),
        history(&first),
        "the file holds the agent's history"
    );
    drop(binding);

    // A new agent on the same session continues where the first left off.
    let again = SessionManager::continue_recent(&d.cwd, &d.sessions).expect("continue");
    assert_eq!(again.session_file(), Some(file.as_path()));
    let second = agent(&faux);
    let binding = bind_agent(&second, again).expect("bind again");
    assert_eq!(history(&second), Value::Array(written.clone()));
    faux.push(FauxReply::text("done two"));
    second.prompt("more").await.expect("prompt");
    let session = binding.into_session();
    let written = file_messages(&file);
    assert_eq!(written.len(), 6);
    assert_eq!(Value::Array(written), history(&second));
    let context = to_llm_messages(&session.build_session_context().messages).expect("llm");
    assert_eq!(
        serde_json::to_value(&context).expect("json"),
        history(&second)
    );
    let chain: Vec<&str> = session
        .branch_path(None)
        .iter()
        .filter_map(|e| e.id())
        .collect();
    assert_eq!(chain.len(), 6, "one unbroken chain across the two agents");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_session_reports_each_failed_append_and_the_run_goes_on() {
    let d = common::dirs();
    let mut writer =
        SessionManager::create(&d.cwd, &d.sessions, NewSessionOptions::new()).expect("create");
    writer
        .append_message(&oxpi_ai::Message::user("earlier"))
        .expect("append");
    let path = writer.session_file().expect("file").to_path_buf();
    drop(writer);
    let faux = FauxProvider::new();
    faux.push(FauxReply::text("hello"));
    let a = agent(&faux);
    let binding = bind_agent(
        &a,
        SessionManager::open_read_only(&path).expect("read-only"),
    )
    .expect("bind");
    a.prompt("go").await.expect("the run goes on");
    let (errors, dropped) = binding.take_errors();
    assert_eq!((errors.len(), dropped), (2, 0), "{errors:?}");
    assert!(errors[0].to_string().contains("read-only"), "{}", errors[0]);
    assert_eq!(file_messages(&path).len(), 1, "nothing was written");
}
