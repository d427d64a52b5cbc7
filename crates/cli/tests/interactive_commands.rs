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
