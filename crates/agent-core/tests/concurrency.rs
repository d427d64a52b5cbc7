//! Many agents on one runtime against one local server over real HTTP: each with its own tool
//! and history; all finish, and no history holds another agent's messages.

use std::sync::Arc;

use oxpi_agent_core::{
    Agent, AgentOptions, AgentTool, AgentToolHandle, AgentToolResult, ToolError, ToolUpdateFn,
};
use oxpi_ai::{Message, Model, StopReason, StreamOptions};
use oxpi_testkit::{Recorded, Reply, TestServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const AGENTS: usize = 200;

#[derive(Deserialize, JsonSchema)]
struct TagArgs {
    /// Text to tag.
    text: String,
}

/// Each agent's own tool: tags text with the agent's secret.
struct Tag {
    secret: String,
}

impl AgentTool for Tag {
    type Args = TagArgs;
    fn name(&self) -> &str {
        "tag"
    }
    fn description(&self) -> &str {
        "Tag a text"
    }
    async fn execute(
        &self,
        _id: &str,
        args: TagArgs,
        _cancel: CancellationToken,
        _update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolError> {
        tokio::task::yield_now().await;
        Ok(AgentToolResult::text(format!(
            "{}:{}",
            args.text, self.secret
        )))
    }
}

fn sse(chunks: &[Value]) -> Reply {
    let mut body: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push("data: [DONE]\n\n".into());
    Reply::sse(body)
}

/// First request of an agent: a tool call carrying its name; second: a text echoing the result.
fn respond(request: &Recorded) -> Reply {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let name = messages[0]["content"].as_str().unwrap_or("").to_string();
    let last = messages.last().cloned().unwrap_or_default();
    if last["role"] == "tool" {
        let text = format!(
            "done {name} with {}",
            last["content"].as_str().unwrap_or("")
        );
        sse(&[
            json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ])
    } else {
        let call = json!({"index": 0, "id": format!("call_{name}"), "function": {"name": "tag", "arguments": json!({"text": name}).to_string()}});
        sse(&[
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_agents_keep_their_own_histories() {
    let server = Arc::new(TestServer::start_fn(respond).await.unwrap());
    let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "m");
    let mut runs = Vec::new();
    for i in 0..AGENTS {
        let name = format!("agent-{i}");
        let secret = format!("secret-{i}");
        let tool = AgentToolHandle::new(Tag {
            secret: secret.clone(),
        })
        .unwrap();
        let agent = Agent::new(
            AgentOptions::new(model.clone())
                .with_system_prompt(name.clone())
                .with_tool(tool)
                .with_stream_options(StreamOptions::default().with_max_retries(0)),
        );
        runs.push(tokio::spawn(async move {
            agent.prompt(format!("go {name}")).await.unwrap();
            (name, secret, agent.messages())
        }));
    }
    for run in runs {
        let (name, secret, history) = run.await.unwrap();
        let roles: Vec<&str> = history.iter().map(Message::role).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "toolResult", "assistant"],
            "{name}"
        );
        let Message::Assistant(last) = &history[3] else {
            panic!("{name}")
        };
        assert_eq!(
            last.stop_reason,
            StopReason::Stop,
            "{name}: {:?}",
            last.error_message
        );
        assert_eq!(last.text(), format!("done {name} with {name}:{secret}"));
        let json = serde_json::to_string(&*history).unwrap();
        for other in 0..AGENTS {
            let other_name = format!("agent-{other}\"");
            if format!("{name}\"") != other_name {
                assert!(
                    !json.contains(&other_name),
                    "{name}'s history mentions {other_name}"
                );
            }
        }
    }
    assert_eq!(server.requests().len(), AGENTS * 2);
}
