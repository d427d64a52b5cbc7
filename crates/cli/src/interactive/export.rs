//! `/export [file]`: the session as a self-contained HTML page (`.html`, the default) or a copy
//! of its JSONL file (`.jsonl`). The page is oxpi's own layout: each message of the current
//! path with its role, text, thinking, tool calls and results, HTML-escaped, no scripts.
//! [`export_file`] is `oxpi --export <session.jsonl> [out.html]`: the same page from a file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use oxpi_ai::{AssistantContent, Message};

use super::state::{result_text, user_text};

/// `text` with `&`, `<`, `>`, `"` and `'` escaped.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn block(out: &mut String, class: &str, title: &str, body: &str) {
    let _ = writeln!(
        out,
        "<section class=\"{class}\"><h2>{}</h2><pre>{}</pre></section>",
        escape(title),
        escape(body)
    );
}

/// The HTML page of `messages`, titled `title`.
pub(crate) fn html(title: &str, messages: &[Message]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>\
         body{{font-family:sans-serif;max-width:60rem;margin:2rem auto;background:#fafafa}}\
         section{{margin:1rem 0;padding:.5rem 1rem;border-left:4px solid #999;background:#fff}}\
         .user{{border-color:#36c}}.assistant{{border-color:#393}}.tool{{border-color:#c93}}\
         .thinking{{color:#777;font-style:italic}}.error{{border-color:#c33;color:#c33}}\
         pre{{white-space:pre-wrap;word-break:break-word}}h2{{font-size:.8rem;color:#555}}\
         </style></head><body><h1>{}</h1>\n",
        escape(title),
        escape(title)
    );
    for message in messages {
        match message {
            Message::User(_) => block(
                &mut out,
                "user",
                "User",
                &user_text(message).unwrap_or_default(),
            ),
            Message::Assistant(a) => {
                for b in &a.content {
                    match b {
                        AssistantContent::Text(t) => {
                            block(&mut out, "assistant", "Assistant", &t.text)
                        }
                        AssistantContent::Thinking(t) => {
                            block(&mut out, "assistant thinking", "Thinking", &t.thinking)
                        }
                        AssistantContent::ToolCall(c) => block(
                            &mut out,
                            "tool",
                            &format!("Tool call: {}", c.name),
                            &serde_json::Value::Object(c.arguments.clone()).to_string(),
                        ),
                    }
                }
                if let Some(e) = &a.error_message {
                    block(&mut out, "error", "Error", e);
                }
            }
            Message::ToolResult(r) => block(
                &mut out,
                if r.is_error { "tool error" } else { "tool" },
                &format!("Result: {}", r.tool_name),
                &result_text(&r.content),
            ),
            _ => {}
        }
    }
    out.push_str("</body></html>\n");
    out
}

/// Writes the export; returns the path written. `arg` is the file asked for (relative to
/// `cwd`); none: `<session file stem>.html` in `cwd`.
pub(crate) fn export(
    arg: &str,
    cwd: &Path,
    session_file: Option<&Path>,
    messages: &[Message],
) -> Result<PathBuf, String> {
    let stem = session_file
        .and_then(|f| f.file_stem())
        .map_or("session".to_string(), |s| s.to_string_lossy().into_owned());
    let path = if arg.is_empty() {
        cwd.join(format!("oxpi-session-{stem}.html"))
    } else {
        cwd.join(arg)
    };
    if path.extension().is_some_and(|e| e == "jsonl") {
        let source = session_file.ok_or("The session is not stored yet: nothing to copy")?;
        std::fs::copy(source, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    } else {
        std::fs::write(&path, html(&stem, messages))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(path)
}

/// `oxpi --export <input> [output]` (pi's): the page of the session file `input` (its current
/// path, read only: no lock taken), written to `output` or `oxpi-session-<input stem>.html`,
/// both relative to `cwd`. Returns the path written.
pub(crate) fn export_file(
    input: &Path,
    output: Option<&str>,
    cwd: &Path,
) -> Result<PathBuf, String> {
    let input = cwd.join(input);
    if !input.is_file() {
        return Err(format!("File not found: {}", input.display()));
    }
    let session = oxpi_session::SessionManager::open_read_only(&input)
        .map_err(|e| format!("{}: {e}", input.display()))?;
    let messages = oxpi_session::to_llm_messages(&session.build_session_context().messages)
        .map_err(|e| format!("{}: {e}", input.display()))?;
    let stem = input
        .file_stem()
        .map_or("session".to_string(), |s| s.to_string_lossy().into_owned());
    let path = match output.filter(|o| !o.is_empty()) {
        Some(out) => cwd.join(out),
        None => cwd.join(format!("oxpi-session-{stem}.html")),
    };
    std::fs::write(&path, html(&stem, &messages))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_what_the_conversation_says() {
        let messages = vec![crate::runtime::user_message(
            "<script>alert('x')</script> & more",
        )];
        let page = html("session", &messages);
        assert!(page.contains(
            "<section class=\"user\"><h2>User</h2><pre>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more</pre></section>"
        ));
        assert!(!page.contains("<script>"));
        let dir = tempfile::tempdir().unwrap();
        let written = export("out.html", dir.path(), None, &messages).unwrap();
        assert_eq!(std::fs::read_to_string(written).unwrap(), page);
        assert_eq!(
            export("out.jsonl", dir.path(), None, &messages),
            Err("The session is not stored yet: nothing to copy".into())
        );
    }
}
