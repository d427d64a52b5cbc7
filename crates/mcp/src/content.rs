//! An MCP tool result in oxpi's terms: text and images become the result's content, resources
//! are described in text, `isError` becomes an error result, structured content goes to
//! `details`, and text beyond the size cap is cut with a notice.

use oxpi_agent_core::{AgentToolResult, ToolError};
use oxpi_ai::UserContent;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{json, Map, Value};

use crate::stdio::CUT_META_KEY;

/// `result` of the tool `tool` as the agent's result, with at most `max_text_bytes` of text.
pub(crate) fn to_agent_result(
    tool: &str,
    result: CallToolResult,
    max_text_bytes: usize,
) -> Result<AgentToolResult, ToolError> {
    let mut content = Vec::with_capacity(result.content.len());
    let mut budget = Budget::new(max_text_bytes);
    // Text already cut when the answer was read (a line too long to read whole).
    let cut_on_reading = result
        .meta
        .as_ref()
        .and_then(|meta| meta.0.get(CUT_META_KEY))
        .and_then(Value::as_u64)
        .and_then(|bytes| usize::try_from(bytes).ok())
        .unwrap_or(0);
    budget.total += cut_on_reading;
    budget.cut += cut_on_reading;
    for block in result.content {
        match block {
            ContentBlock::Text(text) => {
                if let Some(kept) = budget.take(&text.text) {
                    content.push(UserContent::text(kept));
                }
            }
            ContentBlock::Image(image) => content.push(UserContent::Image(oxpi_ai::ImageContent {
                data: image.data,
                mime_type: image.mime_type,
            })),
            other => {
                if let Some(kept) = budget.take(&describe(other)) {
                    content.push(UserContent::text(kept));
                }
            }
        }
    }
    let mut details = Map::new();
    if let Some(structured) = result.structured_content {
        details.insert("structuredContent".into(), structured);
    }
    if budget.cut > 0 {
        content.push(UserContent::text(format!(
            "\n\n[Output truncated: {} of {} bytes shown]",
            budget.total - budget.cut,
            budget.total
        )));
        details.insert(
            "truncation".into(),
            json!({"totalBytes": budget.total, "shownBytes": budget.total - budget.cut}),
        );
    }
    if content.is_empty() {
        if let Some(structured) = details.get("structuredContent") {
            content.push(UserContent::text(structured.to_string()));
        }
    }
    if result.is_error == Some(true) {
        let text = content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text(t) => Some(t.text.as_str()),
                UserContent::Image(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let text = if text.trim().is_empty() {
            format!("MCP tool {tool} reported an error without a message")
        } else {
            text
        };
        return Err(ToolError::new(text));
    }
    let result = AgentToolResult::new(content);
    Ok(if details.is_empty() {
        result
    } else {
        result.with_details(Value::Object(details))
    })
}

/// A content block that is neither text nor an image, in words the model can use.
fn describe(block: ContentBlock) -> String {
    match block {
        ContentBlock::ResourceLink(link) => {
            let mut text = format!("[Resource link] {} <{}>", link.name, link.uri);
            if let Some(mime) = &link.mime_type {
                text.push_str(&format!(" ({mime})"));
            }
            if let Some(description) = &link.description {
                text.push_str(&format!(": {description}"));
            }
            text
        }
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[Resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[Resource {uri} ({}): {} bytes of binary data, not shown]",
                mime_type.as_deref().unwrap_or("unknown type"),
                blob.len() / 4 * 3
            ),
            other => format!("[Resource of a kind oxpi does not know: {other:?}]"),
        },
        ContentBlock::Audio(audio) => format!("[Audio ({}), not shown]", audio.mime_type),
        ContentBlock::Text(text) => text.text,
        ContentBlock::Image(image) => format!("[Image ({})]", image.mime_type),
        other => format!("[Content of a kind oxpi does not know: {other:?}]"),
    }
}

/// The text bytes left to send; counts what it cuts.
struct Budget {
    left: usize,
    total: usize,
    cut: usize,
}

impl Budget {
    fn new(max: usize) -> Self {
        Self {
            left: max,
            total: 0,
            cut: 0,
        }
    }

    /// As much of `text` as fits (cut at a character boundary), or `None` if nothing does.
    fn take(&mut self, text: &str) -> Option<String> {
        self.total += text.len();
        if text.len() <= self.left {
            self.left -= text.len();
            return Some(text.to_string());
        }
        let mut end = self.left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.cut += text.len() - end;
        self.left = 0;
        (end > 0).then(|| text[..end].to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_character_boundary_and_counted() {
        let mut budget = Budget::new(5);
        assert_eq!(budget.take("abc"), Some("abc".to_string()));
        assert_eq!(budget.take("déf"), Some("d".to_string()));
        assert_eq!(budget.take("xyz"), None);
        assert_eq!((budget.total, budget.cut), (10, 6));
    }
}
