//! Images in the prompt. A paste that is the path of an existing image file (`.png`, `.jpg`,
//! `.jpeg`, `.gif`, `.webp`; also a `file://` URI, a quoted path or one with backslash-escaped
//! spaces, as terminals paste a dropped file) puts the plain path in the editor, as pi's editor
//! shows it, and the file is attached as an image block of the message sent (while its path is
//! still in the text). `Ctrl+V` reads the clipboard as pi does on Linux: `wl-paste` in a
//! Wayland session, else `xclip`; an image is saved to a temporary file and pasted as its
//! path, text is pasted as text, and without either tool a notice says so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxpi_ai::UserContent;

use super::state::{App, PASTE_MARKER_LINES};

/// The extensions taken as images, as pi's clipboard and `read` take them.
const EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// `%XX` escapes of a URI path decoded (an invalid escape is kept as it is).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The image path a paste names, before looking at the disk: one line, a `file://` URI, a
/// quoted or backslash-escaped path; `~` is `home`, a relative path is under `cwd`.
pub(crate) fn candidate(pasted: &str, cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let text = pasted.trim();
    if text.is_empty() || text.contains('\n') {
        return None;
    }
    let text = if let Some(rest) = text.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        percent_decode(rest)
    } else if text.len() >= 2
        && ((text.starts_with('\'') && text.ends_with('\''))
            || (text.starts_with('"') && text.ends_with('"')))
    {
        text[1..text.len() - 1].to_string()
    } else {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.extend(chars.next()),
                c => out.push(c),
            }
        }
        out
    };
    let path = match (text.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(&text),
    };
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    EXTENSIONS.contains(&extension.as_str()).then_some(path)
}

/// The existing image file a paste names (see [`candidate`]).
pub(crate) fn pasted_path(pasted: &str) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    candidate(pasted, &cwd, home.as_deref()).filter(|p| p.is_file())
}

impl App {
    /// A paste: an image file's path is inserted and remembered; a long text becomes a
    /// `[paste #n +N lines]` marker; other text is inserted.
    pub(crate) fn paste(&mut self, pasted: String) {
        if let Some(path) = pasted_path(&pasted) {
            self.editor.insert_str(&path.display().to_string());
            self.images.push(path);
            return;
        }
        let lines = pasted.lines().count();
        if lines > PASTE_MARKER_LINES {
            let marker = format!("[paste #{} +{lines} lines]", self.pastes.len() + 1);
            self.editor.insert_str(&marker);
            self.pastes.push((marker, pasted));
        } else {
            self.editor.insert_str(&pasted);
        }
    }

    /// The pasted images whose paths are in `text`, read as image blocks (the list is
    /// emptied); a file that cannot be read or is not an image is an error shown instead.
    pub(crate) fn take_images(&mut self, text: &str) -> Vec<UserContent> {
        let mut blocks = Vec::new();
        for path in std::mem::take(&mut self.images) {
            if !text.contains(&path.display().to_string()) {
                continue;
            }
            match image_block(&path) {
                Ok(block) => blocks.push(block),
                Err(e) => self.pending.push(super::state::Item::Error(e)),
            }
        }
        blocks
    }
}

/// The image block of `path` (its type by its first bytes).
pub(crate) fn image_block(path: &Path) -> Result<UserContent, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mime = crate::file_args::image_mime(&bytes)
        .ok_or_else(|| format!("{} is not a PNG, JPEG, GIF or WebP image", path.display()))?;
    Ok(UserContent::image(crate::file_args::base64(&bytes), mime))
}

/// What `Ctrl+V` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Clipboard {
    /// An image, saved to this file.
    Image(PathBuf),
    /// Text.
    Text(String),
    /// Nothing to paste.
    Empty,
    /// Neither `wl-paste` nor `xclip` could run.
    NoTool,
}

/// The notice when no clipboard tool is found.
pub(crate) const NO_TOOL: &str =
    "Pasting from the clipboard needs wl-paste (Wayland) or xclip (X11); neither was found. \
     Paste or drop an image file's path instead.";

/// Runs `program args` for at most `limit`; `None` when it cannot start, fails or hangs.
fn run(program: &str, args: &[&str], limit: Duration) -> Result<Option<Vec<u8>>, ()> {
    let mut child = match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(_) => return Err(()),
    };
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut out);
        }
        out
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().unwrap_or_default();
    Ok(status.filter(|s| s.success()).map(|_| out))
}

/// The image type to ask for among `types` (pi's preference: PNG, JPEG, WebP, GIF).
fn preferred(types: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(types);
    let listed: Vec<&str> = text.lines().map(str::trim).collect();
    ["image/png", "image/jpeg", "image/webp", "image/gif"]
        .into_iter()
        .find(|t| listed.iter().any(|l| l.split(';').next() == Some(*t)))
        .map(str::to_string)
}

/// How a clipboard program is run: its output when it ran and succeeded, `Ok(None)` when it
/// failed, `Err` when it could not start.
type Runner<'a> = &'a dyn Fn(&str, &[&str], Duration) -> Result<Option<Vec<u8>>, ()>;

/// Reads the clipboard (blocking; run it off the loop). An image is written under `tmp`.
pub(crate) fn read_clipboard(wayland: bool, tmp: &Path) -> Clipboard {
    read_with(wayland, tmp, &run)
}

/// [`read_clipboard`] with the programs run by `run`.
fn read_with(wayland: bool, tmp: &Path, run: Runner<'_>) -> Clipboard {
    const LIST: Duration = Duration::from_secs(2);
    const DATA: Duration = Duration::from_secs(5);
    for program in ["wl-paste", "xclip"] {
        if program == "wl-paste" && !wayland {
            continue;
        }
        let wl = program == "wl-paste";
        let list_args: &[&str] = if wl {
            &["--list-types"]
        } else {
            &["-selection", "clipboard", "-t", "TARGETS", "-o"]
        };
        let text_args: &[&str] = if wl {
            &["--no-newline"]
        } else {
            &["-selection", "clipboard", "-o"]
        };
        let Ok(types) = run(program, list_args, LIST) else {
            continue;
        };
        if let Some(mime) = types.as_deref().and_then(preferred) {
            let data_args: Vec<&str> = if wl {
                vec!["--type", &mime, "--no-newline"]
            } else {
                vec!["-selection", "clipboard", "-t", &mime, "-o"]
            };
            if let Ok(Some(bytes)) = run(program, &data_args, DATA) {
                if crate::file_args::image_mime(&bytes).is_some() {
                    let ext = match mime.as_str() {
                        "image/jpeg" => "jpg",
                        "image/webp" => "webp",
                        "image/gif" => "gif",
                        _ => "png",
                    };
                    let file = tmp.join(format!(
                        "oxpi-clipboard-{}-{}.{ext}",
                        std::process::id(),
                        oxpi_ai::now_millis()
                    ));
                    if std::fs::write(&file, &bytes).is_ok() {
                        return Clipboard::Image(file);
                    }
                }
            }
        }
        if let Ok(Some(text)) = run(program, text_args, DATA) {
            let text = String::from_utf8_lossy(&text).into_owned();
            if !text.is_empty() {
                return Clipboard::Text(text);
            }
        }
        return Clipboard::Empty;
    }
    Clipboard::NoTool
}

/// `Ctrl+V`: reads the clipboard off the loop; what it holds comes back as a paste (an
/// image as its temporary file's path), or a notice.
pub(crate) fn paste_clipboard(tx: tokio::sync::mpsc::UnboundedSender<super::Msg>) {
    use super::state::Item;
    use super::Msg;
    use crossterm::event::Event;
    tokio::task::spawn_blocking(move || {
        let tmp = std::env::temp_dir();
        let msg = match read_clipboard(wayland(), &tmp) {
            Clipboard::Image(path) => Msg::Input(Event::Paste(path.display().to_string())),
            Clipboard::Text(text) => Msg::Input(Event::Paste(text)),
            Clipboard::Empty => {
                Msg::Show(Item::Info("The clipboard holds no image or text".into()))
            }
            Clipboard::NoTool => Msg::Show(Item::Error(NO_TOOL.into())),
        };
        let _ = tx.send(msg);
    });
}

/// Whether this is a Wayland session (pi's test: `WAYLAND_DISPLAY` or `XDG_SESSION_TYPE`).
pub(crate) fn wayland() -> bool {
    std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty())
        || std::env::var("XDG_SESSION_TYPE").is_ok_and(|v| v == "wayland")
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
