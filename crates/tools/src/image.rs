//! Images for `read`: recognized by content (png, jpeg, gif, webp) and returned as an image
//! block, up to [`Limits::max_image_bytes`](crate::Limits::max_image_bytes).

use std::fs::File;
use std::io::Read;

use base64::Engine as _;
use oxpi_agent_core::{AgentToolResult, ToolError};
use oxpi_ai::UserContent;

use crate::fsutil::format_size;
use crate::read_details::{to_json, ImageDetails, ReadDetails};
use crate::workspace::Workspace;

/// The image type of data starting with `head`, by magic number.
pub(crate) fn image_mime_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

pub(crate) fn read_image(
    workspace: &Workspace,
    file: &File,
    mut data: Vec<u8>,
    size: u64,
    mime_type: &str,
    shown: &str,
    relative: String,
) -> Result<AgentToolResult, ToolError> {
    let max = workspace.limits().max_image_bytes;
    let too_large = |size: u64| {
        ToolError::new(format!(
            "Cannot read {shown}: the image is {}, over the {} limit for images",
            format_size(size),
            format_size(max)
        ))
    };
    if size > max {
        return Err(too_large(size));
    }
    // Read at most one byte past the limit, in case the file grew since fstat.
    let rest = (max + 1).saturating_sub(data.len() as u64);
    file.take(rest)
        .read_to_end(&mut data)
        .map_err(|e| ToolError::new(format!("Cannot read {shown}: {e}")))?;
    let bytes = data.len() as u64;
    if bytes > max {
        return Err(too_large(bytes));
    }
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    let details = ReadDetails::Image(ImageDetails {
        path: relative,
        mime_type: mime_type.to_string(),
        bytes,
    });
    Ok(AgentToolResult::new(vec![
        UserContent::text(format!("Read image file [{mime_type}]")),
        UserContent::image(encoded, mime_type),
    ])
    .with_details(to_json(&details)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_images_by_content() {
        let webp = b"RIFF\x24\0\0\0WEBPVP8 ";
        let got: Vec<Option<&str>> = [
            &b"\x89PNG\r\n\x1a\n...."[..],
            &[0xFF, 0xD8, 0xFF, 0xE0][..],
            b"GIF89a..",
            b"GIF87a..",
            webp,
            b"RIFF\0\0\0\0WAVE....",
            b"plain text",
            b"",
        ]
        .into_iter()
        .map(image_mime_type)
        .collect();
        assert_eq!(
            got,
            [
                Some("image/png"),
                Some("image/jpeg"),
                Some("image/gif"),
                Some("image/gif"),
                Some("image/webp"),
                None,
                None,
                None
            ]
        );
    }
}
