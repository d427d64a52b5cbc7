//! The interactive mode's commands of pi's configuration, in a real terminal (tmux): a prompt
//! template and a skill sent as their expanded text, `/logout` removing a stored login with the
//! other entries kept, and `/login` asking in the view, its answer taken from the editor and
//! `Esc` cancelling it; a conversation that cannot be saved shown as an error. Without tmux each
//! test prints why it is skipped.

#![allow(clippy::unwrap_used)]

mod common;

use common::tmux::{server, tmux_missing, Tmux};
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_template_and_a_skill_are_sent_expanded() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let agent = d.home.join(".pi/agent");
    std::fs::create_dir_all(agent.join("prompts")).unwrap();
    std::fs::write(
        agent.join("prompts/greet.md"),
        "---\ndescription: Greets\n---\nSay hello to $1 twice",
    )
    .unwrap();
    std::fs::create_dir_all(agent.join("skills/tidy")).unwrap();
    std::fs::write(
        agent.join("skills/tidy/SKILL.md"),
        "---\nname: tidy\ndescription: Tidies a file\n---\nTidy steps here.\n",
    )
    .unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 30);
    tmux.wait_text("scripted-1").await;
    tmux.submit("/greet Bob");
    tmux.wait_text("Echo: Say hello to Bob twice").await;
    tmux.submit("/skill:tidy notes.txt");
    tmux.wait_for("the second reply", |s| {
        s.matches("Echo:").count() >= 2 && !s.contains("Working…")
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(last_user_text(&requests[0]), "Say hello to Bob twice");
    let skill = last_user_text(&requests[1]);
    assert!(
        skill.contains("Tidy steps here.") && skill.contains("notes.txt"),
        "{skill}"
    );
    // An unknown command is still refused, not sent.
    tmux.submit("/nosuch");
    tmux.wait_text("Unknown command: /nosuch").await;
    assert_eq!(server.requests().len(), 2);
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn logout_removes_the_login_and_login_asks_in_the_view_until_esc() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let agent = d.home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    let kept = "{\"type\":\"api_key\", \"key\": \"gsk-kept\"}";
    std::fs::write(
        agent.join("auth.json"),
        format!(
            "{{\n  \"groq\": {kept},\n  \"openai-codex\": {{\"type\": \"oauth\", \"access\": \"a\", \"refresh\": \"r\", \"expires\": 1}}\n}}"
        ),
    )
    .unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 30);
    tmux.wait_text("scripted-1").await;
    tmux.submit("/logout openai-codex");
    tmux.wait_text("Logged out of openai-codex").await;
    let auth = std::fs::read_to_string(agent.join("auth.json")).unwrap();
    assert!(!auth.contains("openai-codex"), "{auth}");
    assert!(
        auth.contains(kept),
        "the other entry is kept as written: {auth}"
    );

    tmux.submit("/login");
    tmux.wait_text("2) OpenAI (ChatGPT Plus/Pro)").await;
    // The answer goes to the login, not to the model: an unknown choice ends it.
    tmux.submit("nosuch-provider");
    tmux.wait_text("oxpi has no login for \"nosuch-provider\"")
        .await;
    assert_eq!(server.requests().len(), 0);

    tmux.submit("/login");
    tmux.wait_for("the second provider list", |s| {
        s.matches("1) Anthropic").count() >= 2
    })
    .await;
    tmux.keys(&["Escape"]);
    tmux.wait_text("Login cancelled").await;
    // After the login, the editor's text is a prompt again.
    tmux.submit("hello again");
    tmux.wait_text("Echo: hello again").await;
    assert_eq!(server.requests().len(), 1);
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conversation_that_cannot_be_saved_is_an_error_on_screen() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    // A file-size limit of 512 bytes: the session file's first write fails (as on a full disk).
    let tmux = Tmux::start_after(
        &d,
        "trap '' XFSZ; ulimit -f 1;",
        &model_args(&server),
        100,
        30,
    );
    tmux.wait_text("scripted-1").await;
    tmux.submit("hello there");
    tmux.wait_text("Echo: hello there").await;
    let screen = tmux.wait_text("not saved").await;
    assert!(screen.contains("File too large"), "{screen}");
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn name_session_new_and_a_kept_command_work_as_pi_s() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 40);
    tmux.wait_text("scripted-1").await;
    tmux.submit("first question");
    tmux.wait_text("Echo: first question").await;
    tmux.submit("/name demo run");
    tmux.submit("/session");
    let screen = tmux.wait_text("Name: demo run").await;
    assert!(
        screen.contains("Messages: 1 user, 1 assistant, 0 tool results"),
        "{screen}"
    );
    // `!!` runs a command and keeps it from the model.
    tmux.submit("!!echo kept-out");
    tmux.wait_text("(not sent to the model)").await;
    tmux.submit("/new");
    tmux.submit("second question");
    tmux.wait_text("Echo: second question").await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The new session's request holds only its own prompt; the command output never went out.
    let users: Vec<String> = messages(&requests[1])
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(users.len(), 1, "{users:?}");
    assert!(users[0].contains("second question"), "{users:?}");
    let files = session_files(&d.home);
    assert_eq!(files.len(), 2, "{files:?}");
    let named = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .filter(|text| text.contains("\"session_info\"") && text.contains("demo run"))
        .count();
    assert_eq!(named, 1, "the name is an entry of the first session's file");
}

#[tokio::test(flavor = "multi_thread")]
async fn clone_keeps_the_path_and_fork_starts_from_an_earlier_prompt() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 40);
    tmux.wait_text("scripted-1").await;
    for prompt in ["alpha question", "bravo question"] {
        tmux.submit(prompt);
        tmux.wait_text(&format!("Echo: {prompt}")).await;
    }
    tmux.submit("/clone");
    tmux.wait_text("Cloned to a new session").await;
    tmux.submit("charlie question");
    tmux.wait_text("Echo: charlie question").await;
    tmux.submit("/fork");
    tmux.wait_text("Fork from a message").await;
    tmux.submit("bravo");
    tmux.wait_text("Forked to a new session").await;
    // The chosen prompt is back in the editor; sent again, it follows only what came before it.
    tmux.keys(&["Enter"]);
    tmux.wait_for("the fork's reply", |s| {
        s.matches("Echo: bravo question").count() >= 2
    })
    .await;
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
    let users = |request: &oxpi_testkit::Recorded| -> Vec<String> {
        messages(request)
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| match &m["content"] {
                serde_json::Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<String>(),
                other => other.as_str().unwrap_or_default().to_string(),
            })
            .collect()
    };
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        users(&requests[2]),
        ["alpha question", "bravo question", "charlie question"],
        "the clone kept the whole path"
    );
    assert_eq!(
        users(&requests[3]),
        ["alpha question", "bravo question"],
        "the fork starts before the chosen prompt"
    );
    assert_eq!(session_files(&d.home).len(), 3, "original, clone, fork");
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_turns_skill_commands_off_saves_it_and_the_header_lists_resources() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let agent = d.home.join(".pi/agent");
    std::fs::create_dir_all(agent.join("skills/tidy")).unwrap();
    std::fs::write(
        agent.join("skills/tidy/SKILL.md"),
        "---\nname: tidy\ndescription: Tidies a file\n---\nTidy steps here.\n",
    )
    .unwrap();
    std::fs::create_dir_all(agent.join("prompts")).unwrap();
    std::fs::write(agent.join("prompts/greet.md"), "Say hello to $1").unwrap();
    std::fs::write(d.project.join("AGENTS.md"), "Be brief.").unwrap();
    std::fs::write(
        agent.join("settings.json"),
        "{\"theme\": \"dark\", \"compaction\": {\"reserveTokens\": 9000}}",
    )
    .unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 40);
    let screen = tmux.wait_text("scripted-1").await;
    // pi's startup header: the name and version, then the loaded resources.
    for shown in [
        "oxpi v",
        "[Context]",
        "  AGENTS.md",
        "[Skills]",
        "  tidy",
        "[Prompts]",
        "  /greet",
    ] {
        assert!(screen.contains(shown), "{shown} in:\n{screen}");
    }
    tmux.submit("/skill:tidy a.txt");
    tmux.wait_text("Tidy steps here.").await;
    tmux.wait_text("Echo:").await;

    tmux.submit("/settings");
    tmux.wait_text("Type to search · Enter/Space to change · Esc to cancel")
        .await;
    tmux.type_text("skill");
    tmux.wait_for("only the skill row", |s| {
        s.contains("→ Skill commands") && !s.contains("Auto-compact")
    })
    .await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("→ Skill commands         false").await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(agent.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        saved,
        serde_json::json!({"theme": "dark", "compaction": {"reserveTokens": 9000},
            "enableSkillCommands": false})
    );
    tmux.keys(&["Escape"]);
    tmux.wait_for("the list closed", |s| !s.contains("Type to search"))
        .await;
    // Skill commands are off in this session now: the command is unknown and nothing is sent.
    tmux.submit("/skill:tidy b.txt");
    tmux.wait_text("Unknown command: /skill:tidy").await;
    assert_eq!(server.requests().len(), 1);
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn quiet_startup_true_prints_no_header() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let agent = d.home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(d.project.join("AGENTS.md"), "Be brief.").unwrap();
    std::fs::write(agent.join("settings.json"), "{\"quietStartup\": true}").unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &model_args(&server), 100, 30);
    tmux.wait_text("scripted-1").await;
    tmux.submit("hello");
    let screen = tmux.wait_text("Echo: hello").await;
    assert!(
        !screen.contains("oxpi v") && !screen.contains("[Context]"),
        "{screen}"
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

/// A PNG signature and header start, and its base64 (computed apart, with Python's base64).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUg==";

/// `models.json` with the scripted server's model taking images.
fn image_model(d: &Dirs, server: &oxpi_testkit::TestServer) -> Vec<String> {
    let agent = d.home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = serde_json::json!({"providers": {"scripted": {
        "baseUrl": format!("{}/v1", server.base_url()),
        "api": "openai-completions",
        "apiKey": "scripted-key",
        "models": [{"id": "scripted-1", "input": ["text", "image"]}],
    }}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    ["--provider", "scripted", "--model", "scripted-1"]
        .map(String::from)
        .to_vec()
}

/// The image URLs of the request's last user message.
fn image_urls(request: &oxpi_testkit::Recorded) -> Vec<String> {
    let user = messages(request)
        .into_iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap_or_default();
    user["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["image_url"]["url"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pasted_image_path_is_sent_as_an_image() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let image = d.project.join("my shot.png");
    std::fs::write(&image, PNG).unwrap();
    let server = server().await;
    let tmux = Tmux::start(&d, &image_model(&d, &server), 120, 30);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("describe ");
    // As a terminal pastes a dropped file: quoted, in a bracketed paste.
    let quoted = format!("'{}'", image.display());
    assert!(tmux
        .cmd()
        .args(["set-buffer", "-b", "img", &quoted])
        .status()
        .unwrap()
        .success());
    assert!(tmux
        .cmd()
        .args(["paste-buffer", "-p", "-d", "-b", "img", "-t", "t"])
        .status()
        .unwrap()
        .success());
    let shown = format!("describe {}", image.display());
    tmux.wait_text(&shown).await;
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: describe").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(last_user_text(&requests[0]), shown);
    assert_eq!(
        image_urls(&requests[0]),
        [format!("data:image/png;base64,{PNG_BASE64}")]
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_v_pastes_the_clipboard_image_through_xclip() {
    if tmux_missing() {
        return;
    }
    let d = dirs();
    let image = d.project.join("clip.png");
    std::fs::write(&image, PNG).unwrap();
    // A stand-in `xclip` that offers a PNG, as X11's clipboard does with a screenshot.
    let bin = d.home.parent().unwrap().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let xclip = bin.join("xclip");
    std::fs::write(
        &xclip,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *TARGETS*) printf 'TARGETS\\nimage/png\\n' ;;\n  *image/png*) cat '{}' ;;\n  *) exit 1 ;;\nesac\n",
            image.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = server().await;
    let setup = format!(
        "unset WAYLAND_DISPLAY XDG_SESSION_TYPE; export PATH='{}':\"$PATH\";",
        bin.display()
    );
    let tmux = Tmux::start_after(&d, &setup, &image_model(&d, &server), 140, 30);
    tmux.wait_text("scripted-1").await;
    tmux.type_text("what is this ");
    tmux.keys(&["C-v"]);
    tmux.wait_text("what is this /").await;
    let screen = tmux.wait_text(".png").await;
    assert!(screen.contains("oxpi-clipboard-"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Echo: what is this").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        image_urls(&requests[0]),
        [format!("data:image/png;base64,{PNG_BASE64}")]
    );
    tmux.keys(&["C-d"]);
    tmux.wait_text("oxpi exited: 0").await;
}
