//! `--prompt-profile small` as a process against a scripted Chat Completions server: what the
//! profile's pieces put in the requests (the preamble, the project's files, the tools' short
//! descriptions, the forced first call as a JSON schema, temperature 0), and `read` of a
//! directory answered with its listing.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::Value;

/// Whether the request's system prompt opens with the `small` profile's preamble.
fn has_small_preamble(request: &Value) -> bool {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .starts_with(
            "You are a coding assistant working in the user's project directory. You cannot see \
             any file until you read it with a tool",
        )
}

/// The description the request gives `tool`.
fn description<'a>(request: &'a Value, tool: &str) -> &'a str {
    request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == tool)
        .and_then(|t| t["function"]["description"].as_str())
        .unwrap_or_else(|| panic!("no {tool} in {request}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_small_profile_shapes_the_requests_and_read_lists_a_directory() {
    let d = dirs();
    std::fs::create_dir_all(d.project.join("src")).unwrap();
    std::fs::write(d.project.join("src/a.py"), "print(1)\n").unwrap();
    std::fs::write(d.project.join("src/b.py"), "print(2)\n").unwrap();
    std::fs::write(d.project.join("setup.py"), "").unwrap();
    let server = scripted_server().await;
    let mut command = oxpi(&d);
    command
        .args(model_args(&server))
        .args(["--no-session", "--prompt-profile", "small"])
        .args(["-p", "please read src"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    // The scripted model answers with the tool result's first line: the listing's.
    assert_eq!(out.stdout, "Done: a.py\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    let system = first["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(has_small_preamble(&first), "{system}");
    assert!(
        system.contains("Files in the working directory:\nsetup.py\nsrc/a.py\nsrc/b.py\n"),
        "{system}"
    );
    assert!(
        description(&first, "read").starts_with("Read a file of the project"),
        "{first}"
    );
    assert!(
        description(&first, "bash").contains("sed -i 's/OLD/NEW/g' FILE"),
        "{first}"
    );
    // The first reply to the message is forced to be a call, asked as a JSON schema (which
    // llama.cpp decodes under), greedily.
    assert_eq!(first["response_format"]["type"], "json_schema", "{first}");
    assert_eq!(first.get("tool_choice"), None, "{first}");
    assert_eq!(first["temperature"], 0.0, "{first}");
    // After the tool result, the model chooses: no schema, no forced call.
    let second = requests[1].json();
    assert_eq!(second.get("response_format"), None, "{second}");
    let result = messages(&requests[1])
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("a.py\nb.py"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_profile_sends_pi_s_prompt_and_refuses_a_directory() {
    let d = dirs();
    std::fs::create_dir_all(d.project.join("src")).unwrap();
    std::fs::write(d.project.join("src/a.py"), "print(1)\n").unwrap();
    let server = scripted_server().await;
    let mut command = oxpi(&d);
    command
        .args(model_args(&server))
        .args(["--no-session", "-p", "please read src"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Done: Cannot read src: it is a directory\n");
    let first = server.requests()[0].json();
    let system = first["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        !system.contains("Files in the working directory"),
        "{system}"
    );
    assert!(
        !description(&first, "read").starts_with("Read a file of the project"),
        "{first}"
    );
    assert_eq!(first.get("response_format"), None, "{first}");
}

/// `oxpi.promptProfile` in settings.json chooses the profile when the flag does not; the flag
/// wins over it.
#[tokio::test(flavor = "multi_thread")]
async fn the_setting_chooses_the_profile_and_the_flag_wins() {
    let d = dirs();
    let agent_dir = d.home.join(".pi/agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(
        agent_dir.join("settings.json"),
        r#"{"oxpi": {"promptProfile": "small"}}"#,
    )
    .unwrap();
    let server = scripted_server().await;
    for (flag, small) in [(None, true), (Some("default"), false)] {
        let mut command = oxpi(&d);
        command.args(model_args(&server)).arg("--no-session");
        if let Some(flag) = flag {
            command.args(["--prompt-profile", flag]);
        }
        command.args(["-p", "hello"]);
        let out = run(command).await;
        assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
        assert_eq!(out.stdout, "Echo: hello\n", "small: {small}");
    }
    let requests = server.requests();
    let systems: Vec<bool> = requests
        .iter()
        .map(|r| has_small_preamble(&r.json()))
        .collect();
    assert_eq!(systems, [true, false]);
}
