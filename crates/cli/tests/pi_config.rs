//! pi's configuration read by `oxpi`: with no model flags, `settings.json` and `models.json` in
//! the agent directory choose the model (a custom provider), `defaultTools` the tools; broken
//! files give warnings naming file, line and field, never a failure. Then pi-coding-agent 1.6
//! and `oxpi` on the same agent directory and project: their first requests to the same
//! scripted server are compared (endpoint, model, key, tools with a `direct` MCP server's, the
//! user message, the start model of a `--models` / `enabledModels` scope). The comparisons
//! skip with a line saying so when Node is missing. Also: MCP exposure and the tool flags,
//! `--sandbox none`, and RPC `cycle_model` over a scope.

#![allow(clippy::unwrap_used)]

mod common;

use common::pi;
use common::*;
use oxpi_testkit::Recorded;
use serde_json::{json, Value};

/// `<home>/.pi/agent` with pi's `models.json` for the scripted server and `settings`.
fn configure(d: &Dirs, server: &oxpi_testkit::TestServer, settings: &Value) {
    pi::configure(&d.home, server.base_url());
    let agent = d.home.join(".pi/agent");
    std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    std::fs::write(agent.join("SYSTEM.md"), "You are the configured assistant.").unwrap();
    std::fs::write(agent.join("APPEND_SYSTEM.md"), "Always be brief.").unwrap();
    for (name, front) in [
        ("lint", "description: Lint the code & report"),
        (
            "secret",
            "description: By command only\ndisable-model-invocation: true",
        ),
    ] {
        let dir = agent.join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\n{front}\n---\nSteps of {name}.\n"),
        )
        .unwrap();
    }
    std::fs::create_dir_all(agent.join("prompts")).unwrap();
    std::fs::write(
        agent.join("prompts/greet.md"),
        "---\ndescription: Greet\n---\nSay hello to ${1:-nobody} ($@; ${@:2:1}; $3).",
    )
    .unwrap();
}

/// What is compared of a first request.
fn summary(request: &Recorded) -> Value {
    let body = request.json();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    json!({
        "path": request.path,
        "authorization": request.header("authorization"),
        "model": body["model"],
        "tools": tools,
        "user": last_user_text(request),
    })
}

/// The `<available_skills>` block of a system prompt, its paths made relative to the home.
fn skills_listing(system: &str) -> String {
    let start = system.find("The following skills").unwrap_or(0);
    let end = system
        .find("</available_skills>")
        .map_or(0, |i| i + "</available_skills>".len());
    let block = system.get(start..end).unwrap_or("").to_string();
    match (block.find("<location>"), block.find("/.pi/agent/")) {
        (Some(_), Some(_)) => block
            .split("<location>")
            .map(|part| match part.find("/.pi/agent/") {
                Some(i) => part[i..].to_string(),
                None => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join("<location>"),
        _ => block,
    }
}

/// The request's system prompt (its first message's text).
fn system_text(request: &Recorded) -> String {
    let first = &messages(request)[0];
    match &first["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn pi_settings() -> Value {
    json!({
        "defaultProvider": "scripted",
        "defaultModel": "scripted-1",
        "defaultTools": ["read", "ls", "+grep", "-ls"],
        "someKeyPiDoesNotKnow": {"x": 1},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_and_models_json_choose_the_model_and_tools() {
    let d = dirs();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    let mut command = oxpi(&d);
    command.args(["-p", "hello"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Echo: hello\n");
    assert_eq!(out.stderr, "", "an unknown key is no warning");
    let requests = server.requests();
    assert_eq!(
        summary(&requests[0]),
        json!({"path": "/v1/chat/completions", "authorization": "Bearer scripted-key",
               "model": "scripted-1", "tools": ["read", "grep"], "user": "hello"})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_outside_the_project_can_be_read_and_run_by_command() {
    let d = dirs();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    let skill = d.home.join(".pi/agent/skills/lint/SKILL.md");
    let mut command = oxpi(&d);
    command.args(["-p", &format!("read {}", skill.display())]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "Done: ---\n", "the skill folder is readable");
    // Writing there stays refused; a path beside it is not readable.
    let mut command = oxpi(&d);
    command.args([
        "-p",
        &format!("read {}", d.home.join(".pi/agent/settings.json").display()),
    ]);
    let out = run(command).await;
    assert_eq!(
        out.stdout,
        format!(
            "Done: Path \"{}\" is outside the workspace\n",
            d.home.join(".pi/agent/settings.json").display()
        )
    );
    // `/skill:name` works for a skill the model may not invoke.
    let mut command = oxpi(&d);
    command.args(["-p", "/skill:secret go"]);
    let out = run(command).await;
    let secret = d.home.join(".pi/agent/skills/secret");
    assert_eq!(
        out.stdout,
        format!(
            "Echo: <skill name=\"secret\" location=\"{}\">\nReferences are relative to {}.\n\nSteps of secret.\n</skill>\n\ngo\n",
            secret.join("SKILL.md").display(),
            secret.display()
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn broken_settings_are_warnings_naming_file_line_and_field() {
    let d = dirs();
    let server = scripted_server().await;
    let mut settings = pi_settings();
    settings["compaction"] = json!({"enabled": "yes"});
    configure(&d, &server, &settings);
    std::fs::create_dir_all(d.project.join(".pi")).unwrap();
    let project = d.project.join(".pi/settings.json");
    std::fs::write(&project, "{\n  \"defaultModel\": \"x\",\n}").unwrap();
    let global = d.home.join(".pi/agent/settings.json");

    // Untrusted (no trust.json, defaultProjectTrust "ask"): the project file is not read.
    let mut command = oxpi(&d);
    command.args(["-p", "hello"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stderr,
        format!(
            "Warning: Invalid settings file {}: compaction.enabled must be a boolean, found a \
             string (\"yes\"); the default is used\n",
            global.display()
        )
    );

    // Trusted for this run: the broken project file is a warning; the global one still counts.
    let mut command = oxpi(&d);
    command.args(["--approve", "-p", "hello"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!(
            "Warning: Invalid settings file {}:3:1: invalid JSON: trailing comma; its settings \
             are ignored",
            project.display()
        )
    );
    assert_eq!(summary(&server.requests()[1])["model"], "scripted-1");
}

/// An `mcp.json` with one local server, its `echo` tool `direct` (declared by pi too).
fn direct_mcp(d: &Dirs) {
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/fake_server.py");
    let mcp = json!({"mcpServers": {"fake": {"command": "python3", "args": [fake],
        "exposure": "hidden", "toolExposure": {"echo": "direct"}}}});
    std::fs::write(d.home.join(".pi/agent/mcp.json"), mcp.to_string()).unwrap();
}

/// pi 1.6 run as `pi` in the project of `d`, with the home of `d`.
fn pi_command(prefix: &std::path::Path, d: &Dirs) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(pi::node(prefix));
    command
        .arg(pi::cli(prefix))
        .current_dir(&d.project)
        .env("HOME", &d.home)
        .env("PI_OFFLINE", "1")
        .env_remove("PI_CODING_AGENT_DIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn pi_first_request(prefix: &std::path::Path, args: &[&str]) -> Value {
    let d = dirs();
    std::fs::write(d.project.join("notes.md"), "\u{feff}first line\nsecond\n").unwrap();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    direct_mcp(&d);
    let mut command = pi_command(prefix, &d);
    command.arg("-p").args(args);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "pi failed: {}", out.stderr);
    let first = &server.requests()[0];
    let system = system_text(first);
    for part in ["You are the configured assistant.", "Always be brief."] {
        assert!(system.contains(part), "{part:?} not in {system:?}");
    }
    let mut out = summary(first);
    // The project directory differs between the two runs: name the file relative to it.
    let user = out["user"].as_str().unwrap_or_default().to_string();
    out["user"] = json!(user.replace(&d.project.display().to_string(), "<project>"));
    out["skills"] = json!(skills_listing(&system));
    out
}

async fn oxpi_first_request(args: &[&str]) -> Value {
    let d = dirs();
    std::fs::write(d.project.join("notes.md"), "\u{feff}first line\nsecond\n").unwrap();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    direct_mcp(&d);
    let mut command = oxpi(&d);
    command.arg("-p").args(args);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "oxpi failed: {}", out.stderr);
    let first = &server.requests()[0];
    let system = system_text(first);
    for part in ["You are the configured assistant.", "Always be brief."] {
        assert!(system.contains(part), "{part:?} not in {system:?}");
    }
    let mut out = summary(first);
    // The project directory differs between the two runs: name the file relative to it.
    let user = out["user"].as_str().unwrap_or_default().to_string();
    out["user"] = json!(user.replace(&d.project.display().to_string(), "<project>"));
    out["skills"] = json!(skills_listing(&system));
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn pi_and_oxpi_send_the_same_first_request_from_the_same_configuration() {
    let Some(prefix) =
        pi::pi("pi_and_oxpi_send_the_same_first_request_from_the_same_configuration")
    else {
        return;
    };
    // A template, expanded the same.
    let prompt = r#"/greet "big world" two three"#;
    let theirs = pi_first_request(&prefix, &[prompt]).await;
    let ours = oxpi_first_request(&[prompt]).await;
    assert_eq!(
        ours["user"], "Say hello to big world (big world two three; two; three).",
        "the template is expanded"
    );
    assert_eq!(ours["tools"], json!(["read", "grep", "mcp__fake__echo"]));
    assert_eq!(ours, theirs);
    // An @file argument, inlined before the prompt the same.
    let theirs = pi_first_request(&prefix, &["@notes.md", "summarize"]).await;
    let ours = oxpi_first_request(&["@notes.md", "summarize"]).await;
    assert_eq!(
        ours["user"],
        "<file name=\"<project>/notes.md\">\nfirst line\nsecond\n\n</file>\nsummarize"
    );
    assert!(
        ours["skills"]
            .as_str()
            .unwrap()
            .contains("<name>lint</name>"),
        "{}",
        ours["skills"]
    );
    assert_eq!(ours, theirs);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_models_prints_pi_s_table() {
    let d = dirs();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    let mut command = oxpi(&d);
    command.args(["--list-models", "scripted/scripted-1"]);
    let ours = run(command).await;
    assert_eq!(ours.code, Some(0), "stderr: {}", ours.stderr);
    assert_eq!(
        ours.stdout,
        "provider  model       context  max-out  thinking  images\n\
         scripted  scripted-1  128K     16.4K    no        no    \n"
    );
    let Some(prefix) = pi::pi("list_models_prints_pi_s_table") else {
        return;
    };
    let mut command = pi_command(&prefix, &d);
    command.args(["--list-models", "scripted/scripted-1"]);
    let theirs = run(command).await;
    assert_eq!(theirs.code, Some(0), "pi failed: {}", theirs.stderr);
    assert_eq!(ours.stdout, theirs.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_json_servers_are_offered_under_pi_s_names() {
    let d = dirs();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    let fake = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/fake_server.py");
    let mcp = json!({"mcpServers": {
        "fake-one": {"command": "python3", "args": [fake], "exposure": "hidden",
                     "toolExposure": {"echo": "direct", "b*": "direct", "big": "hidden"}},
        "off": {"command": "python3", "args": [fake], "exposure": "direct", "enabled": false},
        "all-hidden": {"command": "python3", "args": [fake], "exposure": "hidden"},
        "codemode-only": {"command": "python3", "args": [fake],
                          "toolExposure": {"crash": "hidden", "n*": "hidden", "deaf": "hidden"}}
    }});
    std::fs::write(d.home.join(".pi/agent/mcp.json"), mcp.to_string()).unwrap();
    let tools_of = |n: usize| summary(&server.requests()[n])["tools"].clone();
    let cases = [
        // pi's default exposure (`codemode`) is offered directly: no codemode in oxpi.
        (
            vec![],
            json!([
                "read",
                "grep",
                "mcp__codemode_only__echo",
                "mcp__codemode_only__big",
                "mcp__fake_one__echo"
            ]),
        ),
        (vec!["--no-mcp"], json!(["read", "grep"])),
        (vec!["--no-tools"], json!([])),
        // `--tools` keeps MCP tools unless an entry starts with `mcp__`.
        (
            vec!["--tools", "read"],
            json!([
                "read",
                "mcp__codemode_only__echo",
                "mcp__codemode_only__big",
                "mcp__fake_one__echo"
            ]),
        ),
        (
            vec!["-t", "ls,mcp__fake*"],
            json!(["ls", "mcp__fake_one__echo"]),
        ),
        (
            vec!["-nbt", "-xt", "*big,mcp__fake_one__*"],
            json!(["mcp__codemode_only__echo"]),
        ),
    ];
    for (run_index, (args, tools)) in cases.into_iter().enumerate() {
        let mut command = oxpi(&d);
        command.args(&args).args(["-p", "hello"]);
        let out = run(command).await;
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
        assert_eq!(tools_of(run_index), tools, "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn models_scope_picks_the_start_model_as_pi_does() {
    let prefix = pi::pi("models_scope_picks_the_start_model_as_pi_does");
    for (settings, args, expected) in [
        // The saved default is in the scope: it starts.
        (
            pi_settings(),
            vec!["--models", "*-2:high,scripted-1"],
            "scripted-1",
        ),
        // `enabledModels` without `--models`, no saved default: the first, with its level.
        (
            json!({"enabledModels": ["scripted/*2:high", "scripted-1"]}),
            vec![],
            "scripted-2",
        ),
    ] {
        let mut requests = Vec::new();
        for program in ["oxpi", "pi"] {
            let d = dirs();
            let server = scripted_server().await;
            configure(&d, &server, &settings);
            let agent = d.home.join(".pi/agent");
            let models = json!({"providers": {"scripted": {
                "baseUrl": format!("{}/v1", server.base_url()),
                "api": "openai-completions",
                "apiKey": "scripted-key",
                "models": [{"id": "scripted-1"}, {"id": "scripted-2", "reasoning": true}],
            }}});
            std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
            let mut command = match (program, &prefix) {
                ("oxpi", _) => oxpi(&d),
                (_, Some(prefix)) => pi_command(prefix, &d),
                _ => continue,
            };
            command.args(&args).args(["-p", "hello"]);
            let out = run(command).await;
            assert_eq!(out.code, Some(0), "{program}: {}", out.stderr);
            let body = server.requests()[0].json();
            requests.push(json!({"model": body["model"],
                                 "reasoning_effort": body["reasoning_effort"]}));
        }
        assert_eq!(requests[0]["model"], expected, "{args:?}");
        if expected == "scripted-2" {
            assert_eq!(requests[0]["reasoning_effort"], "high");
        }
        if let [ours, theirs] = &requests[..] {
            assert_eq!(ours, theirs, "{args:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_none_gives_every_tool_any_path() {
    let d = dirs();
    let server = scripted_server().await;
    configure(&d, &server, &pi_settings());
    let outside = d.home.join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("a.txt"), "outside text\n").unwrap();
    let shown = outside.display().to_string();
    let file = outside.join("a.txt").display().to_string();
    let ask = |args: Vec<String>| {
        let mut command = oxpi(&d);
        command.args(args);
        run(command)
    };
    let args = |extra: &[&str], prompt: String| {
        let mut list: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        list.extend(["-t".into(), "read,ls".into(), "-p".into(), prompt]);
        list
    };
    // The default (`workspace`): both refused.
    let out = ask(args(&[], format!("list-dir {shown}"))).await;
    assert_eq!(
        out.stdout,
        format!("Done: Path {shown:?} is outside the workspace\n")
    );
    let out = ask(args(&[], format!("read {file}"))).await;
    assert_eq!(
        out.stdout,
        format!("Done: Path {file:?} is outside the workspace\n")
    );
    // `--sandbox none`, or the setting: pi's tools, any path.
    let out = ask(args(&["--sandbox", "none"], format!("list-dir {shown}"))).await;
    assert_eq!(out.stdout, "Done: a.txt\n", "stderr: {}", out.stderr);
    let mut settings = pi_settings();
    settings["oxpi"] = json!({"sandbox": "none"});
    configure(&d, &server, &settings);
    let out = ask(args(&[], format!("read {file}"))).await;
    assert_eq!(out.stdout, "Done: outside text\n", "stderr: {}", out.stderr);
}

/// The responses of `oxpi --mode rpc` (with `args`) to `commands`, sent at once, stdin then
/// closed.
async fn rpc_answers(d: &Dirs, args: &[&str], commands: &[Value]) -> Vec<Value> {
    use tokio::io::AsyncWriteExt;
    let mut command = oxpi(d);
    command
        .args(["--mode", "rpc"])
        .args(args)
        .stdin(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for c in commands {
        stdin.write_all(format!("{c}\n").as_bytes()).await.unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("oxpi exits when stdin closes")
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "response")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn models_scope_picks_the_start_model_and_cycles_over_rpc() {
    let d = dirs();
    let server = scripted_server().await;
    pi::configure(&d.home, server.base_url());
    let models = json!({"providers": {"scripted": {
        "baseUrl": format!("{}/v1", server.base_url()),
        "api": "openai-completions",
        "apiKey": "scripted-key",
        "models": [{"id": "scripted-1"}, {"id": "scripted-2", "reasoning": true},
                   {"id": "scripted-3"}],
    }}});
    std::fs::write(d.home.join(".pi/agent/models.json"), models.to_string()).unwrap();
    let answers = rpc_answers(
        &d,
        &["--models", "*-2:high, scripted-3"],
        &[
            json!({"type": "get_state"}),
            json!({"type": "cycle_model"}),
            json!({"type": "cycle_model"}),
            json!({"type": "get_available_models"}),
            json!({"type": "set_model", "provider": "scripted", "modelId": "scripted-1"}),
            json!({"type": "get_state", "id": 5}),
        ],
    )
    .await;
    let model_of = |r: &Value| {
        let d = &r["data"];
        (
            d["model"]["id"].clone(),
            d["thinkingLevel"].clone(),
            d["isScoped"].clone(),
        )
    };
    assert_eq!(
        answers[0]["data"]["model"]["id"], "scripted-2",
        "the scope's first"
    );
    assert_eq!(answers[0]["data"]["thinkingLevel"], "high");
    // No level in its pattern: the session's level, clamped to a model without reasoning.
    assert_eq!(
        model_of(&answers[1]),
        (json!("scripted-3"), json!("off"), json!(true))
    );
    assert_eq!(
        model_of(&answers[2]),
        (json!("scripted-2"), json!("high"), json!(true))
    );
    // models.json's models are available and can be set.
    let ids: Vec<&str> = answers[3]["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["provider"] == "scripted")
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, ["scripted-2", "scripted-1", "scripted-3"]);
    assert_eq!(answers[4]["data"]["id"], "scripted-1");
    // The state polled again tells the model set since the first poll.
    assert_eq!(
        (&answers[5]["id"], &answers[5]["data"]["model"]["id"]),
        (&json!(5), &json!("scripted-1"))
    );
    // Without a scope: every model with a key, in order.
    let answers = rpc_answers(
        &d,
        &["--model", "scripted/scripted-1"],
        &[json!({"type": "cycle_model"})],
    )
    .await;
    assert_eq!(model_of(&answers[0]).0, "scripted-2");
    assert_eq!(model_of(&answers[0]).2, false);
}
