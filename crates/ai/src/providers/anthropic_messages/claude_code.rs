//! pi's Claude Code identity for an Anthropic OAuth token (a key containing `sk-ant-oat`, from a
//! Claude Pro/Max login or `ANTHROPIC_OAUTH_TOKEN`; never for GitHub Copilot's Anthropic
//! models), as pi 1.6's `anthropic-messages` sends it:
//!
//! - `authorization: Bearer <token>` instead of `x-api-key`; `accept: application/json`,
//!   `user-agent: claude-cli/2.1.322` and `x-app: cli` instead of oxpi's identity headers
//!   (the model's and the options' headers still win);
//! - `anthropic-beta` starting with `claude-code-20250219,oauth-2025-04-20`;
//! - the system prompt led by the block "You are Claude Code, Anthropic's official CLI for
//!   Claude." (with the same cache marker);
//! - tool names in Claude Code's casing (`read` → `Read`) in the tools and the tool calls
//!   replayed, and mapped back to the context's names in the reply.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::wire::request::{CacheControl, ContentBlock, MessageContent, MessagesRequest};
use crate::options::{ApiKey, StreamOptions};
use crate::types::model::Model;

/// The Claude Code version pi presents.
pub(crate) const CLAUDE_CODE_VERSION: &str = "2.1.322";

/// The system block every OAuth request starts with.
pub(crate) const SYSTEM_PREFIX: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// The betas an OAuth request names first.
pub(crate) const OAUTH_BETAS: [&str; 2] = ["claude-code-20250219", "oauth-2025-04-20"];

/// Claude Code 2.x tool names in their canonical casing.
const TOOLS: [&str; 17] = [
    "Read",
    "Write",
    "Edit",
    "Bash",
    "Grep",
    "Glob",
    "AskUserQuestion",
    "EnterPlanMode",
    "ExitPlanMode",
    "KillShell",
    "NotebookEdit",
    "Skill",
    "Task",
    "TaskOutput",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
];

/// Whether requests with `key` take the Claude Code identity (pi's `isOAuthToken`).
pub(crate) fn is_oauth(model: &Model, key: Option<&ApiKey>) -> bool {
    model.provider != "github-copilot" && key.is_some_and(|k| k.expose().contains("sk-ant-oat"))
}

/// A tool name in Claude Code's casing when it is one of its tools (case-insensitively).
pub(crate) fn to_claude_code_name(name: &str) -> String {
    TOOLS
        .iter()
        .find(|tool| tool.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_string(), |tool| (*tool).to_string())
}

/// A tool name of the reply as the context's tool of that name (case-insensitively).
pub(crate) fn from_claude_code_name(name: &str, tools: &[String]) -> String {
    tools
        .iter()
        .find(|tool| tool.eq_ignore_ascii_case(name))
        .cloned()
        .unwrap_or_else(|| name.to_string())
}

/// The request body with the identity: the system prefix and Claude Code's tool names.
pub(crate) fn apply_to_request(request: &mut MessagesRequest, cache: Option<CacheControl>) {
    let mut system = vec![ContentBlock::Text {
        text: SYSTEM_PREFIX.to_string(),
        cache_control: cache,
    }];
    system.extend(request.system.take().unwrap_or_default());
    request.system = Some(system);
    for tool in &mut request.tools {
        tool.name = to_claude_code_name(&tool.name);
    }
    for message in &mut request.messages {
        if let MessageContent::Blocks(blocks) = &mut message.content {
            for block in blocks {
                if let ContentBlock::ToolUse { name, .. } = block {
                    *name = to_claude_code_name(name);
                }
            }
        }
    }
}

/// The headers with the identity: bearer auth, Claude Code's headers in place of oxpi's
/// identity headers, unless the model's or the options' headers name them.
pub(crate) fn apply_headers(
    headers: &mut HeaderMap,
    model: &Model,
    options: &StreamOptions,
    key: &ApiKey,
) -> Result<(), String> {
    let configured = |name: &str| {
        model
            .headers
            .keys()
            .chain(options.headers.keys())
            .any(|n| n.eq_ignore_ascii_case(name))
    };
    let identity = options
        .identity
        .clone()
        .unwrap_or_default()
        .headers(&model.provider, &model.base_url);
    for (name, _) in identity {
        if !configured(&name) {
            headers.remove(name.as_str());
        }
    }
    headers.remove("x-api-key");
    let mut bearer = HeaderValue::try_from(format!("Bearer {}", key.expose()))
        .map_err(|_| "the API key contains characters not allowed in a header".to_string())?;
    bearer.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, bearer);
    let user_agent = format!("claude-cli/{CLAUDE_CODE_VERSION}");
    for (name, value) in [
        ("accept", "application/json"),
        ("user-agent", user_agent.as_str()),
        ("x-app", "cli"),
    ] {
        if !configured(name) {
            let value = HeaderValue::try_from(value).map_err(|e| e.to_string())?;
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_take_claude_codes_casing_and_come_back_as_the_contexts() {
        assert_eq!(to_claude_code_name("read"), "Read");
        assert_eq!(to_claude_code_name("todowrite"), "TodoWrite");
        assert_eq!(to_claude_code_name("my_tool"), "my_tool");
        let tools = vec!["read".to_string(), "bash".to_string()];
        assert_eq!(from_claude_code_name("Read", &tools), "read");
        assert_eq!(from_claude_code_name("Other", &tools), "Other");
    }
}
