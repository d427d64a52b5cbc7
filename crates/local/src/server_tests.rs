//! Tests of the health poll, process handling and model/command construction.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// A fake server: answers 200 on /health; exits on stdin EOF unless `ignore-stdin` is passed.
const FAKE_SERVER_PY: &str = r#"
import http.server, sys, threading, time
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}')
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("fake server up", flush=True)
if sys.argv[2:] == ["ignore-stdin"]:
    time.sleep(600)
sys.stdin.read()
"#;

fn installed(engine: Engine) -> Installed {
    Installed {
        engine,
        model_path: PathBuf::from("/m/model.gguf"),
        model_id: "qwen2.5-coder-1.5b-instruct".into(),
        model_name: "Qwen (local)".into(),
    }
}

fn has_python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("python3 not found; skipping");
    }
    ok
}

fn dummy_model() -> Model {
    Model::openai_compatible("http://127.0.0.1:1/v1", "m")
}

/// Serves `statuses` (one per connection, then 200 forever) on a random port.
async fn scripted_http(statuses: Vec<u16>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/health", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut statuses = statuses.into_iter();
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = socket.read(&mut buf).await;
            let code = statuses.next().unwrap_or(200);
            let body = if code == 200 {
                "{\"status\":\"ok\"}"
            } else {
                "{\"error\":\"loading\"}"
            };
            let reply = format!(
                "HTTP/1.1 {code} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    url
}

#[test]
fn model_is_local_openai_compatible_with_text_tool_calls() {
    let config = LocalModelConfig::new("/h");
    let model = local_model(
        &config,
        &installed(Engine::LlamaServer { path: "/s".into() }),
        4321,
    );
    assert_eq!(model.base_url, "http://127.0.0.1:4321/v1");
    assert_eq!(model.api, oxpi_ai::API_OPENAI_COMPLETIONS);
    assert_eq!(model.provider, "local");
    assert_eq!(model.id, "qwen2.5-coder-1.5b-instruct");
    assert_eq!(model.name, "Qwen (local)");
    assert_eq!((model.context_window, model.max_tokens), (4096, 1024));
    let compat = model.compat.unwrap();
    assert_eq!(compat["toolCallsInText"], true);
    assert_eq!(compat["toolChoiceAsJsonSchema"], true);
    assert_eq!(compat["supportsUsageInStreaming"], true);
}

#[test]
fn commands_carry_port_context_threads_and_jinja() {
    let config = LocalModelConfig::new("/h");
    let cmd = server_command(
        &config,
        &installed(Engine::LlamaServer {
            path: "/bin/llama-server".into(),
        }),
        5555,
    );
    assert_eq!(
        cmd::command_line(&cmd),
        "/bin/llama-server --model /m/model.gguf --host 127.0.0.1 --port 5555 --ctx-size 4096 \
         --threads 2 --parallel 1 --jinja --temp 0 --alias qwen2.5-coder-1.5b-instruct"
    );
    let cmd = server_command(
        &config,
        &installed(Engine::Xllamacpp {
            python: "/v/bin/python".into(),
        }),
        5555,
    );
    let args: Vec<String> = cmd
        .as_std()
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(cmd.as_std().get_program(), Path::new("/v/bin/python"));
    assert_eq!(args[..2], ["-u", "-c"]);
    assert!(args[2].contains("xllamacpp") && args[2].contains("use_jinja = True"));
    assert!(args[2].contains("params.sampling.temp = 0.0"));
    assert_eq!(
        args[3..],
        [
            "/m/model.gguf",
            "5555",
            "4096",
            "2",
            "qwen2.5-coder-1.5b-instruct"
        ]
    );
}

#[tokio::test]
async fn health_poll_waits_through_503_until_200() {
    let url = scripted_http(vec![503, 503]).await;
    let started = Instant::now();
    wait_healthy(&url, Duration::from_secs(10), || None)
        .await
        .unwrap();
    assert!(started.elapsed() >= POLL_EVERY * 2);
}

#[tokio::test]
async fn health_poll_times_out_on_refused_connections() {
    let port = free_port().unwrap();
    let url = format!("http://127.0.0.1:{port}/health");
    let err = wait_healthy(&url, Duration::from_millis(500), || None)
        .await
        .unwrap_err();
    assert!(matches!(err, HealthFailure::Timeout(waited) if waited >= Duration::from_millis(500)));
}

#[tokio::test]
async fn health_poll_stops_when_the_process_exits() {
    let url = scripted_http(vec![503; 100]).await;
    let mut polls = 0;
    let err = wait_healthy(&url, Duration::from_secs(10), || {
        polls += 1;
        (polls == 3).then(|| "exit code 1".to_string())
    })
    .await
    .unwrap_err();
    assert_eq!(err, HealthFailure::Exited("exit code 1".into()));
}

#[cfg(unix)]
#[tokio::test]
async fn early_exit_reports_status_and_output_tail() {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("echo loading model >&2; echo 'error: bad magic' >&2; exit 7");
    let err = launch(
        cmd,
        free_port().unwrap(),
        dummy_model(),
        Duration::from_secs(10),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LocalError::ServerExited { .. }), "{text}");
    assert!(
        text.contains("exit code 7") && text.contains("bad magic"),
        "{text}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn timeout_reports_url_and_output_tail() {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("echo still loading; sleep 30");
    let port = free_port().unwrap();
    let err = launch(cmd, port, dummy_model(), Duration::from_millis(600))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LocalError::StartTimeout { .. }), "{text}");
    assert!(
        text.contains(&format!("127.0.0.1:{port}/health")) && text.contains("still loading"),
        "{text}"
    );
}

#[tokio::test]
async fn starts_fake_server_and_shuts_it_down_via_stdin() {
    if !has_python() {
        return;
    }
    let port = free_port().unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(FAKE_SERVER_PY).arg(port.to_string());
    let server = launch(cmd, port, dummy_model(), Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(server.base_url(), format!("http://127.0.0.1:{port}"));
    assert_eq!(server.api_base_url(), format!("http://127.0.0.1:{port}/v1"));
    assert!(server.pid().is_some());
    assert!(server.log_tail(5).contains("fake server up"));
    assert_eq!(server.shutdown().await.unwrap(), "exit code 0");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn drop_kills_the_process() {
    if !has_python() {
        return;
    }
    let port = free_port().unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(FAKE_SERVER_PY)
        .arg(port.to_string())
        .arg("ignore-stdin");
    let server = launch(cmd, port, dummy_model(), Duration::from_secs(20))
        .await
        .unwrap();
    let pid = server.pid().unwrap();
    drop(server);
    let status = format!("/proc/{pid}/status");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = std::fs::read_to_string(&status).is_ok_and(|s| !s.contains("State:\tZ"));
        if !alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} still alive after drop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Really installs (if needed) and starts the default model, then asks it something.
/// Run with `cargo test -p oxpi-local -- --ignored` (uses OXPI_* like programs do).
#[tokio::test]
#[ignore = "downloads ~1.1 GB on first use and starts the real model"]
async fn real_model_answers() {
    let server = start(&LocalModelConfig::from_env()).await.unwrap();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let health = client
        .get(format!("{}/health", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let model = server.model();
    let started = Instant::now();
    let reply: serde_json::Value = client
        .post(format!("{}/chat/completions", model.base_url))
        .json(&serde_json::json!({
            "model": model.id,
            "messages": [{"role": "user", "content": "Reply with the single word: pong"}],
            "max_tokens": 16,
            "temperature": 0
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    eprintln!(
        "completion in {:.2}s: {text:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(!text.trim().is_empty(), "{reply}");
    server.shutdown().await.unwrap();
}

/// Issue 39, trap 7: `start(..).await?.model()` drops the server at once; the request that
/// follows must say so instead of a bare "Connection refused".
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_request_after_the_server_was_dropped_names_the_cause() {
    if !has_python() {
        return;
    }
    let port = free_port().unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(FAKE_SERVER_PY).arg(port.to_string());
    let model = local_model(
        &LocalModelConfig::new("/h"),
        &installed(Engine::LlamaServer {
            path: PathBuf::from("/bin/llama-server"),
        }),
        port,
    );
    let server = launch(cmd, port, model, Duration::from_secs(20))
        .await
        .unwrap();
    let model = server.model();
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "port {port} still open after drop"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let context = oxpi_ai::Context::new("").with_message(oxpi_ai::Message::user("hi"));
    let mut options = oxpi_ai::StreamOptions::default();
    options.max_retries = 0;
    let reply = oxpi_ai::complete(&model, &context, options).await;
    let text = reply.error_message.unwrap_or_default();
    assert!(text.starts_with("connection error: "), "{text}");
    assert!(
        text.ends_with(&format!(
            "(the embedded model's server at http://127.0.0.1:{port}/v1 is not running: it stops \
             when the LocalServer returned by oxpi_local::start is dropped, so keep that value \
             alive as long as its model is used, e.g. `let server = oxpi_local::start(..).await?; \
             let model = server.model();`)"
        )),
        "{text}"
    );
}
