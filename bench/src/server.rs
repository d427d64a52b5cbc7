//! The stream server: HTTP/1.1 on 127.0.0.1, one thread per connection, answering any
//! `POST /<kind>/<size>/…` with the pre-rendered event stream of [`crate::payload`], and
//! `GET /<kind>/<size>/expected` with the content that stream carries.
//!
//! Bodies are rendered once and kept in memory, so serving costs the same for every client:
//! the server writes the body with `Content-Length` in slices of `write_bytes` (one write of
//! the whole body when 0) and closes the connection.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use crate::payload::{self, Kind};

type Bodies = Arc<Mutex<HashMap<(Kind, usize), Arc<Vec<u8>>>>>;

/// A running server.
#[derive(Debug)]
pub struct Server {
    origin: String,
}

impl Server {
    /// Binds a free port and serves in background threads. `prerender` bodies are rendered
    /// before this returns; others on first request.
    pub fn start(prerender: &[(Kind, usize)], write_bytes: usize) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let origin = format!("http://{}", listener.local_addr()?);
        let bodies: Bodies = Arc::default();
        for &(kind, size) in prerender {
            body(&bodies, kind, size);
        }
        std::thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let bodies = bodies.clone();
                std::thread::spawn(move || {
                    let _ = serve(socket, &bodies, write_bytes);
                });
            }
        });
        Ok(Self { origin })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

fn body(bodies: &Bodies, kind: Kind, size: usize) -> Arc<Vec<u8>> {
    let mut map = bodies.lock().unwrap_or_else(|p| p.into_inner());
    map.entry((kind, size))
        .or_insert_with(|| Arc::new(payload::render(kind, size)))
        .clone()
}

fn serve(socket: TcpStream, bodies: &Bodies, write_bytes: usize) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let mut reader = BufReader::new(socket.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    // Read the whole request body, so closing never resets the connection under the client.
    if chunked {
        loop {
            let mut size_line = String::new();
            if reader.read_line(&mut size_line)? == 0 {
                break;
            }
            let size = usize::from_str_radix(size_line.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
        }
    } else {
        io::copy(&mut (&mut reader).take(length as u64), &mut io::sink())?;
    }
    let mut socket = socket;
    let Some((kind, size)) = payload::route(&path) else {
        let text = format!("{{\"error\":{{\"message\":\"bench server: no stream at {path}\"}}}}");
        let head = format!(
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            text.len()
        );
        socket.write_all(head.as_bytes())?;
        socket.write_all(text.as_bytes())?;
        return Ok(());
    };
    if path.ends_with("/expected") {
        // The content the stream carries, for clients that check their result (the Node driver).
        let text = match kind {
            Kind::OpenAiText => payload::text_content(size),
            Kind::TuiText => payload::tui_text(size),
            Kind::OpenAiTool | Kind::AnthropicTool => payload::tool_arguments(size),
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            text.len()
        );
        socket.write_all(head.as_bytes())?;
        socket.write_all(text.as_bytes())?;
        return Ok(());
    }
    let body = body(bodies, kind, size);
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes())?;
    if write_bytes == 0 {
        socket.write_all(&body)?;
    } else {
        for slice in body.chunks(write_bytes) {
            socket.write_all(slice)?;
        }
    }
    socket.flush()?;
    socket.shutdown(std::net::Shutdown::Write)?;
    // Wait for the client to close, so its last read never meets a reset.
    let _ = io::copy(&mut reader, &mut io::sink());
    Ok(())
}
