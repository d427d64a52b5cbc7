//! Lab 11: a tool from an MCP server. oxpi-mcp starts the Python reference server
//! `mcp-server-git` (PyPI, pinned, installed into a private venv on first use) on a temporary
//! repository this lab creates, and offers its `git_log` tool to the model; the newest commit's
//! message holds a fresh code, and the model must call `git_log` and answer with that code.
//!
//! Checks: `git_log` ran once, on the lab's repository; its result holds the newest commit's
//! message and reached the model (the second request carries it); the final answer holds the
//! code; the history is user → assistant → toolResult → assistant, the result answering the
//! call by id.
//!
//! ```text
//! cargo run -p lab-11                                   # the embedded default model
//! cargo run -p lab-11 -- --provider openai              # OPENAI_API_KEY
//! ```

use std::path::Path;
use std::process::{Command, ExitCode};

use oxpi_agent_core::{Agent, AgentEvent, AgentOptions};
use oxpi_ai::{Message, StreamOptions};
use oxpi_labkit::lab::{fresh_code, print_tool_event, provider_error, roles, run_lab, RequestLog};
use oxpi_labkit::LiveModel;
use oxpi_mcp::{McpClient, McpServer};

const SYSTEM_PROMPT: &str = "You are a helpful assistant that can use tools. To use a tool, reply with a tool call. \
When a tool result contains the answer, stop calling tools and reply with exactly the answer, nothing else.";

#[tokio::main]
async fn main() -> ExitCode {
    run_lab("11", "MCP tool passed", |live| async move {
        let outcome = run(&live).await;
        (live, outcome)
    })
    .await
}

/// Runs `git` in `dir` with a fixed author.
fn git(dir: &Path, args: &[&str]) -> Result<(), String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Lab Eleven")
        .env("GIT_AUTHOR_EMAIL", "lab11@example.com")
        .env("GIT_COMMITTER_NAME", "Lab Eleven")
        .env("GIT_COMMITTER_EMAIL", "lab11@example.com")
        .output()
        .map_err(|e| format!("could not run git: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A repository with two commits; the newest one's message holds `code`.
fn make_repository(dir: &Path, code: &str) -> Result<String, String> {
    git(dir, &["init", "-q"])?;
    std::fs::write(dir.join("README.md"), "demo\n").map_err(|e| e.to_string())?;
    git(dir, &["add", "README.md"])?;
    git(dir, &["commit", "-q", "-m", "Initial commit"])?;
    std::fs::write(dir.join("README.md"), "demo, released\n").map_err(|e| e.to_string())?;
    let message = format!("Release {code}");
    git(dir, &["commit", "-q", "-am", &message])?;
    Ok(message)
}

async fn run(live: &LiveModel) -> Result<(), String> {
    let dir =
        tempfile::tempdir().map_err(|e| format!("could not create a temporary directory: {e}"))?;
    let repo = dir
        .path()
        .canonicalize()
        .map_err(|e| format!("temporary directory: {e}"))?;
    let code = fresh_code().replace("read-", "rel-");
    let message = make_repository(&repo, &code)?;
    let repo_path = repo.display().to_string();

    let program = oxpi_testkit::mcp_servers::python_server("mcp-server-git")?;
    let git_server = McpClient::connect(
        McpServer::stdio("git", program.display().to_string())
            .args(["--repository", &repo_path])
            .target_api(live.model.api.clone()),
    )
    .await
    .map_err(|e| e.to_string())?;
    // The server has a dozen tools; this lab offers the one it is about.
    let git_log = git_server
        .tools()
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|tool| tool.name() == "git_log")
        .ok_or("mcp-server-git has no git_log tool")?;

    let requests = RequestLog::default();
    let mut stream_options = StreamOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(400);
    stream_options.api_key = live.api_key.clone();
    let mut options = AgentOptions::new(live.model.clone())
        .with_system_prompt(SYSTEM_PROMPT)
        .with_tool(git_log)
        .with_max_turns(4)
        .with_stream_options(stream_options);
    options.stream_fn = Some(requests.stream_fn());
    let agent = Agent::new(options);
    let _subscription = agent.subscribe(print_event);

    let arguments = serde_json::json!({"repo_path": repo_path, "max_count": 1});
    let prompt =
        format!("请调用 git_log，参数为 {arguments}。然后只回复最新提交信息中以 rel- 开头的代号。");
    println!("model: {}/{}", live.model.provider, live.model.id);
    println!("input: {prompt}");
    agent.prompt(prompt).await.map_err(|e| e.to_string())?;

    let history = agent.messages();
    let Some(Message::Assistant(final_answer)) = history.last() else {
        return Err("the history does not end with an assistant message".to_string());
    };
    if let Some(error) = provider_error(final_answer) {
        return Err(format!("the model request failed: {error}"));
    }
    println!("final answer: {}", final_answer.text().trim());
    println!("history roles: {}", roles(&history).join(" -> "));
    check(&history, &requests.requests(), &repo_path, &message, &code)?;
    final_answer_holds(&final_answer.text(), &code)
}

fn print_event(event: &AgentEvent) {
    match event {
        AgentEvent::MessageEnd {
            message: Message::Assistant(m),
        } => {
            let reason = serde_json::to_value(m.stop_reason).unwrap_or_default();
            println!(
                "assistant stopReason: {} text: {:?}",
                reason.as_str().unwrap_or("?"),
                m.text()
            );
        }
        other => print_tool_event(other),
    }
}

/// The call, its result, the requests and the history are what the lab says they are.
fn check(
    history: &[Message],
    requests: &[Vec<&'static str>],
    repo_path: &str,
    message: &str,
    code: &str,
) -> Result<(), String> {
    let expected_roles = ["user", "assistant", "toolResult", "assistant"];
    if roles(history) != expected_roles {
        return Err(format!(
            "the history is {}, expected {}",
            roles(history).join(" -> "),
            expected_roles.join(" -> ")
        ));
    }
    let (Message::Assistant(asked), Message::ToolResult(result)) = (&history[1], &history[2])
    else {
        return Err("the history's second and third messages are not a call and its result".into());
    };
    let calls: Vec<_> = asked.tool_calls().collect();
    if calls.len() != 1 || calls[0].name != "git_log" {
        return Err(format!(
            "the model called {:?}, expected git_log once",
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>()
        ));
    }
    let asked_path = calls[0]
        .arguments
        .get("repo_path")
        .and_then(|p| p.as_str())
        .unwrap_or_default();
    if asked_path.trim_end_matches('/') != repo_path {
        return Err(format!(
            "git_log ran on {asked_path:?}, expected the lab's repository {repo_path}"
        ));
    }
    if result.tool_call_id != calls[0].id {
        return Err("the tool result does not answer the call by id".into());
    }
    if result.is_error || !result.text_content().contains(message) {
        return Err(format!(
            "git_log returned {:?}, expected the commit {message:?}",
            result.text_content()
        ));
    }
    if requests.len() != 2 || requests[1] != ["user", "assistant", "toolResult"] {
        return Err(format!(
            "the model requests carried {requests:?}; the second must carry the git_log result"
        ));
    }
    if !code.starts_with("rel-") {
        return Err(format!("the lab's code {code} is malformed"));
    }
    Ok(())
}

fn final_answer_holds(answer: &str, code: &str) -> Result<(), String> {
    if answer.contains(code) {
        Ok(())
    } else {
        Err(format!(
            "the final answer {answer:?} does not contain {code}"
        ))
    }
}
