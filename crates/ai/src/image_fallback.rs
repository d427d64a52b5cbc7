//! Images for a model that does not take them (pi 1.6's `downgradeUnsupportedImages`, the first
//! step of its shared message transform, so every wire API sends the same): each run of images
//! in a user message or a tool result becomes one placeholder text, so the service gets a
//! request it accepts (Bedrock rejects image blocks for text-only models) and the model learns
//! that something was there.

use std::borrow::Cow;

use crate::types::content::UserContent;
use crate::types::message::{Message, UserMessageContent};
use crate::types::model::{InputKind, Model};

/// The text sent in place of images in a user message.
pub const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";

/// The text sent in place of images in a tool result.
pub const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";

/// `messages` as `model` can take them: unchanged (borrowed) when it takes images or there are
/// none, else with every run of images replaced by one placeholder (a placeholder text already
/// there counts as the start of the run, as pi).
pub fn downgrade_unsupported_images<'a>(
    messages: &'a [Message],
    model: &Model,
) -> Cow<'a, [Message]> {
    let has_images = |content: &[UserContent]| {
        content
            .iter()
            .any(|block| matches!(block, UserContent::Image(_)))
    };
    let any = messages.iter().any(|message| match message {
        Message::User(user) => match &user.content {
            UserMessageContent::Blocks(blocks) => has_images(blocks),
            UserMessageContent::Text(_) => false,
        },
        Message::ToolResult(result) => has_images(&result.content),
        _ => false,
    });
    if !any || model.input.contains(&InputKind::Image) {
        return Cow::Borrowed(messages);
    }
    Cow::Owned(
        messages
            .iter()
            .map(|message| match message {
                Message::User(user) => match &user.content {
                    UserMessageContent::Blocks(blocks) if has_images(blocks) => {
                        let mut user = user.clone();
                        user.content = UserMessageContent::Blocks(replace_images(
                            blocks,
                            USER_IMAGE_PLACEHOLDER,
                        ));
                        Message::User(user)
                    }
                    _ => message.clone(),
                },
                Message::ToolResult(result) if has_images(&result.content) => {
                    let mut result = result.clone();
                    result.content = replace_images(&result.content, TOOL_IMAGE_PLACEHOLDER);
                    Message::ToolResult(result)
                }
                _ => message.clone(),
            })
            .collect(),
    )
}

fn replace_images(content: &[UserContent], placeholder: &str) -> Vec<UserContent> {
    let mut out = Vec::with_capacity(content.len());
    let mut after_placeholder = false;
    for block in content {
        match block {
            UserContent::Image(_) => {
                if !after_placeholder {
                    out.push(UserContent::text(placeholder));
                }
                after_placeholder = true;
            }
            UserContent::Text(text) => {
                after_placeholder = text.text == placeholder;
                out.push(block.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::content::ImageContent;

    fn image() -> UserContent {
        UserContent::Image(ImageContent {
            data: "aGk=".into(),
            mime_type: "image/png".into(),
        })
    }

    #[test]
    fn a_run_of_images_becomes_one_placeholder() {
        let blocks = vec![
            image(),
            image(),
            UserContent::text("look"),
            image(),
            UserContent::text(USER_IMAGE_PLACEHOLDER),
            image(),
        ];
        let texts: Vec<String> = replace_images(&blocks, USER_IMAGE_PLACEHOLDER)
            .into_iter()
            .map(|b| match b {
                UserContent::Text(t) => t.text,
                UserContent::Image(_) => "image".into(),
            })
            .collect();
        assert_eq!(
            texts,
            [
                USER_IMAGE_PLACEHOLDER,
                "look",
                USER_IMAGE_PLACEHOLDER,
                USER_IMAGE_PLACEHOLDER
            ]
        );
    }
}
