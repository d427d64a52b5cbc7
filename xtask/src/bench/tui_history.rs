//! The session the interactive rows resume (`--session`): 5,000 earlier transcript lines in
//! pi's session format (version 3), which both `oxpi` and pi open.

use std::path::Path;

use serde_json::json;

/// A pi session file (version 3) in `cwd` whose transcript is `lines` lines: turns of one user
/// line and an assistant reply of a 99-item Markdown list.
pub(crate) fn write_history(file: &Path, cwd: &Path, lines: usize) -> Result<(), String> {
    let stamp = "2026-01-01T00:00:00.000Z";
    let mut out =
        json!({"type": "session", "version": 3, "id": "0190a000-0000-7000-8000-000000000001",
        "timestamp": stamp, "cwd": cwd.display().to_string()})
        .to_string();
    out.push('\n');
    let usage = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let mut parent: Option<String> = None;
    let mut written = 0;
    let mut turn = 0;
    while written < lines {
        turn += 1;
        let items = (lines - written - 1).min(99);
        let reply: Vec<String> = (1..=items)
            .map(|i| format!("- item {i} of earlier reply {turn}"))
            .collect();
        for (role, message) in [
            (
                "u",
                json!({"role": "user", "content": [{"type": "text", "text": format!("earlier question {turn}")}],
                    "timestamp": 1}),
            ),
            (
                "a",
                json!({"role": "assistant", "content": [{"type": "text", "text": reply.join("\n")}],
                    "api": "openai-completions", "provider": "bench", "model": "bench-model",
                    "usage": usage, "stopReason": "stop", "timestamp": 1}),
            ),
        ] {
            let id = format!("{role}{turn:07}");
            let entry = json!({"type": "message", "id": id, "parentId": parent,
                "timestamp": stamp, "message": message});
            out.push_str(&entry.to_string());
            out.push('\n');
            parent = Some(id);
        }
        written += items + 1;
    }
    std::fs::write(file, out).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_file_holds_the_lines_in_one_chain() {
        let dir = std::env::temp_dir().join(format!("oxpi-tui-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("h.jsonl");
        write_history(&file, &dir, 5000).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let entries: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let shown: usize = entries[1..]
            .iter()
            .map(|e| {
                e["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .lines()
                    .count()
            })
            .sum();
        assert_eq!(shown, 5000);
        assert_eq!(entries[2]["parentId"], entries[1]["id"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
