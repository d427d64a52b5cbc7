//! pi's `@file` arguments (`processFileArguments`): each `@path` among the prompts is taken out;
//! a text file becomes `<file name="<absolute path>">\n<text>\n</file>\n`, an image (PNG, JPEG,
//! GIF, WebP by its first bytes) an image block with `<file name="…"></file>\n` in the text, an
//! empty file nothing. The text goes before the first prompt (pi's `buildInitialMessage`); a
//! missing or unreadable file is an error naming it.

use std::path::Path;

use oxpi_ai::UserContent;

/// What the `@file` arguments give.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FileArgs {
    /// The prompts without the `@path` arguments.
    pub messages: Vec<String>,
    /// The files' text, to go before the first prompt.
    pub text: String,
    /// The images, for the first prompt.
    pub images: Vec<UserContent>,
}

/// The image type of `head`, by its signature.
pub(crate) fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Standard base64 with padding.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Takes the `@path` arguments out of `messages` and reads them (paths relative to `cwd`,
/// `~` expanded).
pub(crate) fn collect(messages: &[String], cwd: &Path) -> Result<FileArgs, String> {
    let mut out = FileArgs::default();
    for message in messages {
        let Some(path) = message.strip_prefix('@') else {
            out.messages.push(message.clone());
            continue;
        };
        let path = cwd.join(crate::config::settings::expand_home(path));
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("Error: File not found: {}", path.display()),
            _ => format!("Error: Could not read file {}: {e}", path.display()),
        })?;
        if bytes.is_empty() {
            continue;
        }
        let name = path.display();
        if let Some(mime) = image_mime(&bytes) {
            out.images.push(UserContent::image(base64(&bytes), mime));
            out.text
                .push_str(&format!("<file name=\"{name}\"></file>\n"));
        } else {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            out.text
                .push_str(&format!("<file name=\"{name}\">\n{text}\n</file>\n"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_become_pi_s_blocks_and_images_image_blocks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "\u{feff}alpha").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        std::fs::write(dir.path().join("p.png"), b"\x89PNG\r\n\x1a\nxy").unwrap();
        let args: Vec<String> = ["@a.txt", "explain", "@empty.txt", "@p.png", "then"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let got = collect(&args, dir.path()).unwrap();
        let a = dir.path().join("a.txt");
        let p = dir.path().join("p.png");
        assert_eq!(
            got,
            FileArgs {
                messages: vec!["explain".into(), "then".into()],
                text: format!(
                    "<file name=\"{}\">\nalpha\n</file>\n<file name=\"{}\"></file>\n",
                    a.display(),
                    p.display()
                ),
                images: vec![UserContent::image("iVBORw0KGgp4eQ==", "image/png")],
            }
        );
        let missing = collect(&["@nope.md".to_string()], dir.path()).unwrap_err();
        assert_eq!(
            missing,
            format!(
                "Error: File not found: {}",
                dir.path().join("nope.md").display()
            )
        );
        assert_eq!(base64(b"Ma"), "TWE=");
        assert_eq!(base64(b"Man"), "TWFu");
        assert_eq!(base64(b""), "");
    }
}
