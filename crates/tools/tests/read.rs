//! The `read` tool: limits and notices, offsets, errors, special files, images and binary data.

// A test crate: helpers outside #[test] functions may unwrap too (clippy.toml allows it in tests).
#![allow(clippy::unwrap_used)]

mod common;

use std::fs;
use std::time::Duration;

use base64::Engine as _;
use common::{call, read, text, Fixture};
use oxpi_agent_core::{AgentTool, AgentToolResult};
use oxpi_ai::UserContent;
use oxpi_tools::{
    read_tool, ImageDetails, Limits, ReadArgs, ReadDetails, ReadTool, TextDetails, TruncatedBy,
    Workspace,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn details(result: &AgentToolResult) -> ReadDetails {
    serde_json::from_value(result.details.clone().unwrap()).unwrap()
}

fn text_details(result: &AgentToolResult) -> TextDetails {
    match details(result) {
        ReadDetails::Text(d) => d,
        other => panic!("expected text details, got {other:?}"),
    }
}

fn lines(from: usize, to: usize) -> String {
    (from..=to)
        .map(|i| format!("line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn small_file_comes_back_as_is() {
    let fx = Fixture::new();
    fs::write(fx.root.join("a.txt"), "a\nb\n").unwrap();
    let got = read(&fx.ws, json!({ "path": "a.txt" })).await.unwrap();
    assert_eq!(text(&got), "a\nb\n");
    assert_eq!(
        details(&got),
        ReadDetails::Text(TextDetails {
            path: "a.txt".into(),
            start_line: 1,
            lines: 2,
            total_lines: Some(2),
            truncated_by: None,
            next_offset: None,
            bytes_read: 4,
            invalid_utf8: false,
        })
    );
}

#[tokio::test]
async fn stops_at_the_line_limit_and_says_how_to_continue() {
    let fx = Fixture::new();
    fs::write(fx.root.join("big.txt"), numbered(2500)).unwrap();
    let got = read(&fx.ws, json!({ "path": "big.txt" })).await.unwrap();
    assert_eq!(
        text(&got),
        format!(
            "{}\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]",
            lines(1, 2000)
        )
    );
    let d = text_details(&got);
    assert_eq!(
        (d.lines, d.total_lines, d.truncated_by, d.next_offset),
        (2000, Some(2500), Some(TruncatedBy::Lines), Some(2001))
    );
    let rest = read(&fx.ws, json!({ "path": "big.txt", "offset": 2001 }))
        .await
        .unwrap();
    assert_eq!(text(&rest), format!("{}\n", lines(2001, 2500)));
}

#[tokio::test]
async fn stops_at_the_byte_limit() {
    let fx = Fixture::new();
    // 1000 lines of 100 bytes: 512 of them are exactly 50 KB.
    let line = format!("{}\n", "x".repeat(99));
    fs::write(fx.root.join("wide.txt"), line.repeat(1000)).unwrap();
    let got = read(&fx.ws, json!({ "path": "wide.txt" })).await.unwrap();
    let body = line.repeat(512);
    assert_eq!(
        text(&got),
        format!(
            "{}\n\n[Showing lines 1-512 of 1000 (50KB limit). Use offset=513 to continue.]",
            body.trim_end()
        )
    );
    assert_eq!(text_details(&got).truncated_by, Some(TruncatedBy::Bytes));
}

#[tokio::test]
async fn offset_and_limit() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), numbered(100)).unwrap();
    let cases = [
        (
            json!({ "offset": 21, "limit": 40 }),
            format!(
                "{}\n\n[40 more lines in file. Use offset=61 to continue.]",
                lines(21, 60)
            ),
        ),
        (
            json!({ "offset": 91, "limit": 10 }),
            format!("{}\n", lines(91, 100)),
        ),
        (
            json!({ "offset": 91, "limit": 50 }),
            format!("{}\n", lines(91, 100)),
        ),
        (json!({ "offset": 100 }), "line 100\n".to_string()),
        (
            json!({ "limit": 1 }),
            "line 1\n\n[99 more lines in file. Use offset=2 to continue.]".to_string(),
        ),
    ];
    for (mut args, expected) in cases {
        args["path"] = json!("f.txt");
        let got = read(&fx.ws, args.clone()).await.unwrap();
        assert_eq!(text(&got), expected, "{args}");
    }
}

#[tokio::test]
async fn limits_are_configurable_and_the_smallest_wins() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), numbered(20)).unwrap();
    let ws = fx
        .ws
        .clone()
        .with_limits(Limits::default().with_max_lines(5).with_max_bytes(1024));
    let got = read(&ws, json!({ "path": "f.txt", "limit": 8 }))
        .await
        .unwrap();
    assert_eq!(
        text(&got),
        format!(
            "{}\n\n[Showing lines 1-5 of 20. Use offset=6 to continue.]",
            lines(1, 5)
        )
    );
    let got = read(&ws, json!({ "path": "f.txt", "limit": 3 }))
        .await
        .unwrap();
    assert_eq!(
        text(&got),
        format!(
            "{}\n\n[17 more lines in file. Use offset=4 to continue.]",
            lines(1, 3)
        )
    );
    let ws = fx
        .ws
        .clone()
        .with_limits(Limits::default().with_max_bytes(20));
    let got = read(&ws, json!({ "path": "f.txt" })).await.unwrap();
    assert_eq!(
        text(&got),
        // Each line counts with its newline: a third would make 21 bytes.
        "line 1\nline 2\n\n[Showing lines 1-2 of 20 (20B limit). Use offset=3 to continue.]"
    );
}

#[tokio::test]
async fn offset_beyond_the_end() {
    let fx = Fixture::new();
    fs::write(fx.root.join("f.txt"), numbered(12)).unwrap();
    for offset in [13, 30, u64::MAX] {
        assert_eq!(
            read(&fx.ws, json!({ "path": "f.txt", "offset": offset })).await,
            Err(format!(
                "Offset {offset} is beyond end of file (12 lines total)"
            ))
        );
    }
}

#[tokio::test]
async fn zero_offset_and_unknown_arguments_fail_validation() {
    let fx = Fixture::new();
    for args in [
        json!({ "path": "notes.txt", "offset": 0 }),
        json!({ "path": "notes.txt", "limit": 0 }),
        json!({ "path": "notes.txt", "lines": 3 }),
        json!({ "offset": 1 }),
    ] {
        let err = read(&fx.ws, args.clone()).await.unwrap_err();
        assert!(
            err.starts_with("Validation failed for tool \"read\""),
            "{args}: {err}"
        );
    }
}

#[tokio::test]
async fn missing_files_and_directories() {
    let fx = Fixture::new();
    let cases = [
        ("notes2.txt", "File not found: notes2.txt"),
        ("nodir/notes.txt", "File not found: nodir/notes.txt"),
        (
            "notes.txt/x",
            r#"Path "notes.txt/x" cannot be resolved: "notes.txt" is not a directory"#,
        ),
        ("sub", "Cannot read sub: it is a directory"),
        (".", "Cannot read .: it is a directory"),
    ];
    for (path, expected) in cases {
        assert_eq!(
            read(&fx.ws, json!({ "path": path })).await,
            Err(expected.to_string()),
            "{path}"
        );
    }
}

#[tokio::test]
async fn fifo_socket_and_device_are_refused_without_hanging() {
    let fx = Fixture::new();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let _socket = std::os::unix::net::UnixListener::bind(fx.root.join("sock")).unwrap();
    let cases = [
        (
            "pipe",
            "Cannot read pipe: it is a FIFO (named pipe), not a regular file",
        ),
        (
            "sock",
            "Cannot read sock: it is a socket, not a regular file",
        ),
    ];
    for (path, expected) in cases {
        let got = tokio::time::timeout(
            Duration::from_secs(10),
            read(&fx.ws, json!({ "path": path })),
        )
        .await
        .expect("read must not hang");
        assert_eq!(got, Err(expected.to_string()));
    }
    let dev = Workspace::new("/dev").unwrap();
    let got = tokio::time::timeout(
        Duration::from_secs(10),
        read(&dev, json!({ "path": "zero" })),
    )
    .await
    .expect("read must not hang");
    assert_eq!(
        got,
        Err("Cannot read zero: it is a character device, not a regular file".to_string())
    );
}

#[tokio::test]
async fn images_come_back_as_image_blocks() {
    let fx = Fixture::new();
    let png: Vec<u8> = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01"
        .iter()
        .copied()
        .chain(std::iter::repeat_n(0u8, 64))
        .collect();
    // The name says text; the content decides.
    fs::write(fx.root.join("picture.txt"), &png).unwrap();
    let got = read(&fx.ws, json!({ "path": "picture.txt" }))
        .await
        .unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&png);
    assert_eq!(
        got.content,
        vec![
            UserContent::text("Read image file [image/png]"),
            UserContent::image(encoded, "image/png"),
        ]
    );
    assert_eq!(
        details(&got),
        ReadDetails::Image(ImageDetails {
            path: "picture.txt".into(),
            mime_type: "image/png".into(),
            bytes: png.len() as u64,
        })
    );
    let small = fx
        .ws
        .clone()
        .with_limits(Limits::default().with_max_image_bytes(16));
    assert_eq!(
        read(&small, json!({ "path": "picture.txt" })).await,
        Err("Cannot read picture.txt: the image is 84B, over the 16B limit for images".into())
    );
}

#[tokio::test]
async fn binary_data_is_refused() {
    let fx = Fixture::new();
    fs::write(fx.root.join("data.bin"), b"ELF\x01\x02\0\0\0junk").unwrap();
    // A NUL byte far from the start is caught in the text returned.
    let mut late = numbered(3000).into_bytes();
    late.extend_from_slice(b"\0\0\0");
    fs::write(fx.root.join("late.log"), late).unwrap();
    for path in ["data.bin", "late.log"] {
        let args = json!({ "path": path, "offset": 2001 });
        assert_eq!(
            read(&fx.ws, args).await,
            Err(format!(
                "Cannot read {path}: it is a binary file (only text and png, jpeg, gif or webp \
                 images can be read)"
            ))
        );
    }
}

#[tokio::test]
async fn invalid_utf8_is_replaced_and_noted() {
    let fx = Fixture::new();
    fs::write(fx.root.join("latin1.txt"), b"caf\xe9\nok\n").unwrap();
    let got = read(&fx.ws, json!({ "path": "latin1.txt" })).await.unwrap();
    assert_eq!(
        text(&got),
        "caf\u{fffd}\nok\n\n[Invalid UTF-8 in the file was replaced with U+FFFD.]"
    );
    assert!(text_details(&got).invalid_utf8);
}

#[tokio::test]
async fn a_first_line_over_the_byte_limit_is_cut() {
    let fx = Fixture::new();
    let long = "x".repeat(100 * 1024);
    fs::write(fx.root.join("min.js"), format!("{long}\nshort\n")).unwrap();
    let got = read(&fx.ws, json!({ "path": "min.js" })).await.unwrap();
    assert_eq!(
        text(&got),
        format!(
            "{}\n\n[Line 1 is 100KB, over the 50KB limit; showing only its first 50KB. Use \
             offset=2 for the next line.]",
            "x".repeat(50 * 1024)
        )
    );
    let d = text_details(&got);
    assert_eq!(
        (d.lines, d.total_lines, d.truncated_by, d.next_offset),
        (0, Some(2), Some(TruncatedBy::LongLine), Some(2))
    );
    let next = read(&fx.ws, json!({ "path": "min.js", "offset": 2 }))
        .await
        .unwrap();
    assert_eq!(text(&next), "short\n");
}

#[tokio::test]
async fn empty_file() {
    let fx = Fixture::new();
    fs::write(fx.root.join("empty.txt"), "").unwrap();
    let got = read(&fx.ws, json!({ "path": "empty.txt" })).await.unwrap();
    assert_eq!(text(&got), "[Empty file]");
    assert_eq!(
        read(&fx.ws, json!({ "path": "empty.txt", "offset": 2 })).await,
        Err("Offset 2 is beyond end of file (0 lines total)".to_string())
    );
}

/// A 1 GiB file (sparse past its first 2,500 lines): the first 2,000 lines come back after
/// reading a few kilobytes, and the total is left unknown rather than scanning the rest.
#[tokio::test]
async fn big_file_is_streamed_not_read_whole() {
    let fx = Fixture::new();
    let path = fx.root.join("huge.log");
    fs::write(&path, numbered(2500)).unwrap();
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(1 << 30).unwrap();
    drop(file);
    let got = read(&fx.ws, json!({ "path": "huge.log" })).await.unwrap();
    assert_eq!(
        text(&got),
        format!(
            "{}\n\n[Showing lines 1-2000. Use offset=2001 to continue.]",
            lines(1, 2000)
        )
    );
    let d = text_details(&got);
    assert_eq!((d.total_lines, d.next_offset), (None, Some(2001)));
    assert!(d.bytes_read < 200 * 1024, "read {} bytes", d.bytes_read);

    // With a limit, the notice cannot count what is left either.
    let got = read(&fx.ws, json!({ "path": "huge.log", "limit": 3 }))
        .await
        .unwrap();
    assert_eq!(
        text(&got),
        "line 1\nline 2\nline 3\n\n[More lines in file. Use offset=4 to continue.]"
    );
    assert!(text_details(&got).bytes_read < 200 * 1024);
}

/// Below the scan budget the rest is counted, and exactly the file is read.
#[tokio::test]
async fn counting_the_rest_stays_within_the_scan_budget() {
    let fx = Fixture::new();
    let content = numbered(100_000); // 988,895 bytes
    fs::write(fx.root.join("mid.log"), &content).unwrap();
    let got = read(&fx.ws, json!({ "path": "mid.log", "limit": 1 }))
        .await
        .unwrap();
    assert_eq!(
        text(&got),
        "line 1\n\n[99999 more lines in file. Use offset=2 to continue.]"
    );
    assert_eq!(text_details(&got).bytes_read, content.len() as u64);

    let ws = fx
        .ws
        .clone()
        .with_limits(Limits::default().with_max_scan_bytes(64 * 1024));
    let got = read(&ws, json!({ "path": "mid.log", "limit": 1 }))
        .await
        .unwrap();
    assert_eq!(
        text(&got),
        "line 1\n\n[More lines in file. Use offset=2 to continue.]"
    );
    assert!(text_details(&got).bytes_read <= 64 * 1024 + 8 * 1024);
}

#[tokio::test]
async fn a_cancelled_read_stops() {
    let fx = Fixture::new();
    let tool = ReadTool::new(fx.ws.clone());
    let cancel = CancellationToken::new();
    cancel.cancel();
    let got = tool
        .execute("id", ReadArgs::new("notes.txt"), cancel, common::noop())
        .await;
    assert_eq!(got.unwrap_err().message, "Operation aborted");
}

#[tokio::test]
async fn absolute_paths_inside_the_root_are_read() {
    let fx = Fixture::new();
    let path = fx.root.join("notes.txt").display().to_string();
    let got = call(&read_tool(fx.ws.clone()).unwrap(), json!({ "path": path }))
        .await
        .unwrap();
    assert_eq!(text(&got), "hello\n");
    assert_eq!(text_details(&got).path, "notes.txt");
}

#[tokio::test]
async fn listing_directories_lists_a_directory_as_ls_does_and_still_refuses_outside_ones() {
    let fx = Fixture::new();
    fs::write(fx.root.join("sub/b.py"), "").unwrap();
    fs::write(fx.root.join("sub/A.txt"), "").unwrap();
    let tool =
        oxpi_agent_core::AgentToolHandle::new(ReadTool::new(fx.ws.clone()).listing_directories())
            .unwrap();
    let ls = oxpi_tools::ls_tool(fx.ws.clone()).unwrap();
    for path in ["sub", ".", "sub/"] {
        let listed = call(&tool, json!({ "path": path })).await.unwrap();
        let expected = call(&ls, json!({ "path": path })).await.unwrap();
        assert_eq!(listed, expected, "{path}");
    }
    assert_eq!(
        text(&call(&tool, json!({ "path": "sub" })).await.unwrap()),
        "A.txt\nb.py\nup"
    );
    // `limit` is the listing's entry limit, as `ls`'s notice tells the model to use it.
    let limited = call(&tool, json!({ "path": "sub", "limit": 2 }))
        .await
        .unwrap();
    assert_eq!(
        limited,
        call(&ls, json!({ "path": "sub", "limit": 2 }))
            .await
            .unwrap()
    );
    assert_eq!(
        text(&limited),
        "A.txt\nb.py\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    // Files read as before; what is outside, missing or not a directory fails as before.
    for path in [
        "notes.txt",
        "link_out",
        "link_out/",
        "missing",
        "sub/up",
        "sub/up/outside",
    ] {
        assert_eq!(
            call(&tool, json!({ "path": path })).await,
            read(&fx.ws, json!({ "path": path })).await,
            "{path}"
        );
    }
}
