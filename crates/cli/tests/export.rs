//! `oxpi --export <session.jsonl> [out.html]` (pi-coding-agent 1.6's `--export`): the session
//! file as a self-contained HTML page, `Exported to: <path>` on stdout; the default name is
//! `oxpi-session-<file name>.html` in the working directory; a missing file is exit 1 with
//! `Error: File not found: …`.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn export_writes_the_session_as_a_page_and_names_it_as_pi_does() {
    let d = dirs();
    std::fs::write(d.project.join("notes.txt"), "the <answer> is 42\n").unwrap();
    let server = scripted_server().await;
    let mut command = oxpi(&d);
    command
        .args(model_args(&server))
        .args(["-p", "please read notes.txt"]);
    assert_eq!(run(command).await.code, Some(0));
    let files = session_files(&d.home);
    assert_eq!(files.len(), 1, "{files:?}");
    let session = &files[0];
    let stem = session.file_stem().unwrap().to_string_lossy().into_owned();

    // No output named: `oxpi-session-<stem>.html` in the working directory.
    let mut command = oxpi(&d);
    command.arg("--export").arg(session);
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let default = d.project.join(format!("oxpi-session-{stem}.html"));
    assert_eq!(out.stdout, format!("Exported to: {}\n", default.display()));
    let page = std::fs::read_to_string(&default).unwrap();
    assert!(page.starts_with("<!doctype html>"), "{page}");
    assert!(page.contains("<pre>please read notes.txt</pre>"), "{page}");
    assert!(page.contains("Tool call: read"), "{page}");
    assert!(page.contains("the &lt;answer&gt; is 42"), "{page}");
    assert!(
        page.contains("<pre>Done: the &lt;answer&gt; is 42</pre>"),
        "{page}"
    );
    assert!(!page.contains("<script"), "{page}");

    // An output named (relative to the working directory); nothing is run, no session added.
    let mut command = oxpi(&d);
    command.arg("--export").arg(session).arg("page.html");
    let out = run(command).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let named = d.project.join("page.html");
    assert_eq!(out.stdout, format!("Exported to: {}\n", named.display()));
    assert_eq!(std::fs::read_to_string(&named).unwrap(), page);
    assert_eq!(
        server.requests().len(),
        2,
        "exporting asks the model nothing"
    );
    assert_eq!(session_files(&d.home).len(), 1);

    // A missing file: exit 1 and pi's message.
    let mut command = oxpi(&d);
    command.args(["--export", "missing.jsonl"]);
    let out = run(command).await;
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.stderr,
        format!(
            "Error: File not found: {}\n",
            d.project.join("missing.jsonl").display()
        )
    );
    assert_eq!(out.stdout, "");
}
