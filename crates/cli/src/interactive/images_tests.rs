//! Pasted image paths as terminals paste them, and the blocks they become.

use super::*;
use crate::interactive::state::{Footer, Item};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

#[test]
fn uris_quotes_and_escapes_are_the_same_path() {
    let (cwd, home) = (Path::new("/w"), Some(Path::new("/h")));
    let want = Some(PathBuf::from("/tmp/my shot.png"));
    for pasted in [
        "/tmp/my shot.png",
        "  /tmp/my shot.png\n",
        "file:///tmp/my%20shot.png",
        "file://localhost/tmp/my%20shot.png",
        "'/tmp/my shot.png'",
        "\"/tmp/my shot.png\"",
        "/tmp/my\\ shot.png",
    ] {
        assert_eq!(candidate(pasted, cwd, home), want, "{pasted:?}");
    }
    assert_eq!(
        candidate("~/a.JPG", cwd, home),
        Some(PathBuf::from("/h/a.JPG"))
    );
    assert_eq!(
        candidate("shots/b.webp", cwd, home),
        Some(PathBuf::from("/w/shots/b.webp"))
    );
    // Not an image name, two lines, nothing.
    assert_eq!(candidate("/tmp/notes.txt", cwd, home), None);
    assert_eq!(candidate("/tmp/a.png\n/tmp/b.png", cwd, home), None);
    assert_eq!(candidate("   ", cwd, home), None);
    assert_eq!(candidate("/tmp/png", cwd, home), None);
}

#[test]
fn a_pasted_image_is_its_path_in_the_editor_and_a_block_when_sent() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("shot one.png");
    std::fs::write(&image, PNG).unwrap();
    let shown = image.display().to_string();
    let mut app = App::new(Footer::default());
    app.editor.insert_str("see ");
    app.paste(format!("file://{}", shown.replace(' ', "%20")));
    assert_eq!(app.editor.text(), format!("see {shown}"));
    assert_eq!(app.images, std::slice::from_ref(&image));
    let blocks = app.take_images(&app.editor.text());
    assert_eq!(
        blocks,
        [UserContent::image(
            crate::file_args::base64(PNG),
            "image/png"
        )]
    );
    assert!(app.images.is_empty());

    // A path taken out of the text before sending attaches nothing.
    app.paste(shown.clone());
    assert_eq!(app.take_images("no path here"), []);

    // A missing image file is pasted as text, not attached.
    let missing = dir.path().join("gone.png").display().to_string();
    let mut app = App::new(Footer::default());
    app.paste(missing.clone());
    assert_eq!(app.editor.text(), missing);
    assert!(app.images.is_empty());
}

#[test]
fn a_file_named_png_that_is_not_an_image_is_an_error_not_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake.png");
    std::fs::write(&fake, "text").unwrap();
    let mut app = App::new(Footer::default());
    app.paste(fake.display().to_string());
    assert_eq!(app.take_images(&app.editor.text()), []);
    assert_eq!(
        app.pending,
        [Item::Error(format!(
            "{} is not a PNG, JPEG, GIF or WebP image",
            fake.display()
        ))]
    );
}

#[test]
fn clipboard_types_prefer_png_then_jpeg_webp_gif() {
    assert_eq!(
        preferred(b"TARGETS\nimage/gif\nimage/jpeg\n").as_deref(),
        Some("image/jpeg")
    );
    assert_eq!(
        preferred(b"image/webp\nimage/png;charset=binary\n").as_deref(),
        Some("image/png")
    );
    assert_eq!(preferred(b"UTF8_STRING\ntext/plain\n"), None);
}

#[test]
fn ctrl_v_asks_xclip_for_the_image_then_text_and_without_tools_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let calls = std::cell::RefCell::new(Vec::new());
    let xclip_image = |program: &str, args: &[&str], _: Duration| {
        calls
            .borrow_mut()
            .push(format!("{program} {}", args.join(" ")));
        match (program, args) {
            ("xclip", [.., "TARGETS", "-o"]) => Ok(Some(b"TARGETS\nimage/png\n".to_vec())),
            ("xclip", [.., "image/png", "-o"]) => Ok(Some(PNG.to_vec())),
            _ => Err(()),
        }
    };
    // Not Wayland: xclip only.
    let Clipboard::Image(file) = read_with(false, dir.path(), &xclip_image) else {
        panic!("an image");
    };
    assert_eq!(std::fs::read(&file).unwrap(), PNG);
    assert_eq!(file.extension().unwrap(), "png");
    assert_eq!(
        *calls.borrow(),
        [
            "xclip -selection clipboard -t TARGETS -o",
            "xclip -selection clipboard -t image/png -o"
        ]
    );
    // Wayland: wl-paste, and text when no image is offered.
    let wl_text = |program: &str, args: &[&str], _: Duration| match (program, args) {
        ("wl-paste", ["--list-types"]) => Ok(Some(b"text/plain\n".to_vec())),
        ("wl-paste", ["--no-newline"]) => Ok(Some(b"hello".to_vec())),
        _ => Err(()),
    };
    assert_eq!(
        read_with(true, dir.path(), &wl_text),
        Clipboard::Text("hello".into())
    );
    let none = |_: &str, _: &[&str], _: Duration| Err(());
    assert_eq!(read_with(true, dir.path(), &none), Clipboard::NoTool);
    let empty = |_: &str, _: &[&str], _: Duration| Ok(None);
    assert_eq!(read_with(false, dir.path(), &empty), Clipboard::Empty);
}
