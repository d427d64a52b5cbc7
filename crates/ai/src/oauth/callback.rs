//! The loopback server a browser login returns to (pi's `startOAuthCallbackServer`): it listens
//! on `127.0.0.1`, answers `GET <path>?code=…&state=…` when the state is the login's, and hands
//! the code over once. Other paths get 404, a wrong state 400, a second callback 409.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A running callback server.
pub(crate) struct CallbackServer {
    /// The port it listens on.
    pub(crate) port: u16,
    codes: mpsc::Receiver<Result<String, String>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CallbackServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl CallbackServer {
    /// Listens on `127.0.0.1:port` (0: any free port) for `path` with `state`.
    pub(crate) async fn start(
        port: u16,
        path: String,
        state: String,
        provider: &'static str,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let (sender, codes) = mpsc::channel(1);
        let task = tokio::spawn(async move {
            let mut claimed = false;
            while let Ok((stream, _)) = listener.accept().await {
                if let Some(outcome) = answer(stream, &path, &state, claimed, provider).await {
                    claimed = true;
                    let _ = sender.send(outcome).await;
                }
            }
        });
        Ok(Self { port, codes, task })
    }

    /// The code the browser brought back (or the error the issuer sent instead).
    pub(crate) async fn wait(&mut self) -> Result<String, String> {
        self.codes
            .recv()
            .await
            .unwrap_or_else(|| Err("the callback server stopped".to_string()))
    }
}

/// Answers one connection; `Some` when it carried the login's code or the issuer's error.
async fn answer(
    mut stream: TcpStream,
    path: &str,
    state: &str,
    claimed: bool,
    provider: &str,
) -> Option<Result<String, String>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buf))
            .await
            .ok()?
            .ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buf[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (
        words.next().unwrap_or_default(),
        words.next().unwrap_or("/"),
    );
    let url = reqwest::Url::parse(&format!("http://localhost{target}")).ok();
    let query = |name: &str| {
        url.as_ref().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        })
    };
    let (status, text, outcome) = if method != "GET" || url.as_ref().map(|u| u.path()) != Some(path)
    {
        (404, "Callback route not found.".to_string(), None)
    } else if query("state").as_deref() != Some(state) {
        (400, "State mismatch.".to_string(), None)
    } else if claimed {
        (
            409,
            "This sign-in has already been handled.".to_string(),
            None,
        )
    } else if let Some(error) = query("error") {
        let description = query("error_description").unwrap_or(error);
        (
            400,
            format!("{provider} authorization failed."),
            Some(Err(format!(
                "{provider} authorization failed: {description}"
            ))),
        )
    } else if let Some(code) = query("code").filter(|c| !c.is_empty()) {
        (
            200,
            format!("Signed in to {provider}. You may now close this page."),
            Some(Ok(code)),
        )
    } else {
        (400, "Missing authorization code.".to_string(), None)
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>oxpi</title></head><body><p>{text}</p></body></html>"
    );
    let reply = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: text/html; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
    outcome
}
