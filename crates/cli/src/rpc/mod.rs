//! `--mode rpc`: pi's RPC protocol (`docs/rpc.md`, `docs/rpc-commands.md`). JSON commands
//! arrive on stdin, one per LF-terminated line (a CR before the LF is dropped); responses
//! (`{"id", "type": "response", "command", "success", "data" | "error"}`) and session events go
//! to stdout, one record per line. Commands are handled in the order they arrive; a `prompt`
//! is answered when accepted and runs on, its events streaming while later commands are read.
//! Closing stdin ends the process once the running prompt is aborted.
//!
//! stdin is read, and each command handled and answered, on one dedicated thread (`oxpi-rpc`)
//! that drives the handler with the runtime's handle: a command that needs nothing from another
//! task (`get_state`, `get_messages`, …) is read, answered and flushed without a thread hand-off.
//! `get_state`, which clients poll, does not enter the runtime at all, and its data is
//! serialized again only when it changed (`state.rs`).
//! The running prompt's events are written from the runtime's workers, each record one locked,
//! flushed write.

mod bash_cmd;
mod commands;
mod session_cmds;
mod state;

pub(crate) use bash_cmd::bash_result;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use oxpi_agent_core::{AgentEvent, Subscription};
use oxpi_ai::Message;
use serde_json::{json, Value};
use std::io::BufRead;
use tokio::task::JoinHandle;

use crate::json_event::{ended_aborted, settled, JsonEvents, RecordWriter};
use crate::runtime::Runtime;

/// The longest command line read (images arrive base64-encoded inside `prompt`).
pub(crate) const MAX_COMMAND_BYTES: usize = 64 * 1024 * 1024;

/// The texts queued by `steer` and `follow_up` (pi's `queue_update` lists).
#[derive(Debug, Default)]
pub(crate) struct Queues {
    steering: VecDeque<String>,
    follow_up: VecDeque<String>,
}

/// The RPC session: the runtime, stdout, the running prompt.
pub(crate) struct Rpc {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) out: RecordWriter,
    run: Mutex<Option<JoinHandle<()>>>,
    /// Cancelled by `abort`: drops the running prompt's recovery (its summary, its retry).
    run_stop: Mutex<tokio_util::sync::CancellationToken>,
    /// The manual compaction in flight (`compact` answers when it ends) and its token.
    compaction: Mutex<Option<(JoinHandle<()>, tokio_util::sync::CancellationToken)>>,
    busy: AtomicBool,
    pub(crate) queues: Mutex<Queues>,
    pub(crate) auto_retry: AtomicBool,
    /// The parent of the running `bash` commands' tokens (`abort_bash` cancels it).
    bash_cancel: Mutex<tokio_util::sync::CancellationToken>,
    /// `bashExecution` messages that came while a prompt ran, recorded when it ends.
    pending_bash: Mutex<Vec<Value>>,
    /// The last `get_state` answer's data and its JSON.
    state_cache: state::StateCache,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A success response; `data` left out when `None`.
pub(crate) fn success(id: &Option<Value>, command: &str, data: Option<Value>) -> Value {
    let mut record = json!({"type": "response", "command": command, "success": true});
    if let Some(id) = id {
        record["id"] = id.clone();
    }
    if let Some(data) = data {
        record["data"] = data;
    }
    record
}

/// A failure response with pi's shape; `command` left out when the command had no type.
pub(crate) fn failure(id: &Option<Value>, command: Option<&str>, error: &str) -> Value {
    let mut record = json!({"type": "response", "success": false, "error": error});
    if let Some(id) = id {
        record["id"] = id.clone();
    }
    if let Some(command) = command {
        record["command"] = json!(command);
    }
    record
}

/// The text of a user message (its text blocks joined).
pub(crate) fn user_text(message: &Message) -> Option<String> {
    match message {
        Message::User(m) => Some(m.text_content()),
        _ => None,
    }
}

impl Rpc {
    /// True while a prompt runs.
    pub(crate) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// Starts a run of `message` (with pi's recovery from a context overflow); its end writes
    /// `agent_settled`.
    pub(crate) fn start_run(self: &Arc<Self>, message: Message) {
        self.busy.store(true, Ordering::SeqCst);
        let stop = tokio_util::sync::CancellationToken::new();
        *lock(&self.run_stop) = stop.clone();
        let rpc = self.clone();
        let handle = tokio::spawn(async move {
            let messages = rpc.runtime.prompt_messages(message);
            let result = tokio::select! {
                biased;
                _ = stop.cancelled() => {
                    // Aborted: the recovery is dropped (nothing half-appended: a summary is
                    // appended whole or not at all); the agent's own run ends aborted.
                    rpc.runtime.agent.abort();
                    rpc.runtime.agent.wait_for_idle().await;
                    rpc.runtime.sync_history().map_err(|e| {
                        eprintln!("oxpi: the agent keeps its history: {e}");
                    }).ok();
                    Ok(())
                }
                result = rpc.runtime.prompt(messages) => result,
            };
            // A failed run is in the history and the events, as in pi.
            if let Err(e) = result.or_else(|e| if e.is_run_failure() { Ok(()) } else { Err(e) }) {
                eprintln!("oxpi: the prompt could not run: {e}");
            }
            if let Some(error) = rpc.runtime.take_session_errors() {
                rpc.out.write(&failure(&None, Some("prompt"), &error));
            }
            rpc.busy.store(false, Ordering::SeqCst);
            rpc.flush_pending_bash();
            rpc.out
                .write(&settled(ended_aborted(&rpc.runtime.agent.messages())));
        });
        *lock(&self.run) = Some(handle);
    }

    /// Aborts the running prompt (if any) with its recovery, and a manual compaction (pi's
    /// `abort`), and waits until they have settled.
    pub(crate) async fn abort_and_wait(&self) {
        lock(&self.run_stop).cancel();
        let compaction = lock(&self.compaction).take();
        if let Some((_, cancel)) = &compaction {
            cancel.cancel();
        }
        self.runtime.agent.abort();
        let handle = lock(&self.run).take();
        if let Some(handle) = handle {
            let _ = handle.await;
        }
        if let Some((handle, _)) = compaction {
            let _ = handle.await;
        }
        // A retry that started as the recovery was dropped ends aborted too.
        self.runtime.agent.abort();
        self.runtime.agent.wait_for_idle().await;
    }

    /// Waits for the manual compaction in flight, if any (a prompt starts after it).
    pub(crate) async fn wait_for_compaction(&self) {
        let compaction = lock(&self.compaction).take();
        if let Some((handle, _)) = compaction {
            let _ = handle.await;
        }
    }

    /// Starts a manual compaction (pi's `compact`, after `abort`): `compaction_start`, then
    /// `compaction_end` and the response when it ends; `abort` cancels it.
    pub(crate) fn start_compaction(self: &Arc<Self>, id: Option<Value>, custom: Option<String>) {
        let cancel = tokio_util::sync::CancellationToken::new();
        let rpc = self.clone();
        let token = cancel.clone();
        self.out
            .write(&json!({"type": "compaction_start", "reason": "manual"}));
        let handle = tokio::spawn(async move {
            let result =
                crate::compact::compact(&rpc.runtime, custom.as_deref(), token.clone()).await;
            let (end, response) = match result {
                Ok(result) => (
                    json!({"type": "compaction_end", "reason": "manual", "result": result,
                        "aborted": false, "willRetry": false}),
                    success(&id, "compact", Some(result)),
                ),
                Err(e) if token.is_cancelled() => (
                    json!({"type": "compaction_end", "reason": "manual", "aborted": true,
                        "willRetry": false}),
                    failure(&id, Some("compact"), &e.to_string()),
                ),
                Err(e) => (
                    json!({"type": "compaction_end", "reason": "manual", "aborted": false,
                        "willRetry": false, "errorMessage": e.to_string()}),
                    failure(&id, Some("compact"), &e.to_string()),
                ),
            };
            rpc.out.write(&end);
            rpc.out.write(&response);
        });
        *lock(&self.compaction) = Some((handle, cancel));
    }

    /// Writes pi's `queue_update` with the queues as they are.
    pub(crate) fn queue_update(&self) {
        let record = {
            let queues = lock(&self.queues);
            json!({
                "type": "queue_update",
                "steering": queues.steering.iter().collect::<Vec<_>>(),
                "followUp": queues.follow_up.iter().collect::<Vec<_>>(),
            })
        };
        self.out.write(&record);
    }

    /// Queues `text` for steering (`steer`) or after the run (`follow_up`).
    pub(crate) fn enqueue(&self, message: Message, steer: bool) {
        let text = user_text(&message).unwrap_or_default();
        {
            let mut queues = lock(&self.queues);
            if steer {
                queues.steering.push_back(text);
                self.runtime.agent.steer(message);
            } else {
                queues.follow_up.push_back(text);
                self.runtime.agent.follow_up(message);
            }
        }
        self.queue_update();
    }

    /// Empties both queues; returns their texts.
    pub(crate) fn clear_queues(&self) -> (Vec<String>, Vec<String>) {
        self.runtime.agent.clear_all_queues();
        let mut queues = lock(&self.queues);
        (
            queues.steering.drain(..).collect(),
            queues.follow_up.drain(..).collect(),
        )
    }

    /// A queued message entered the conversation: it leaves its queue.
    fn dequeued(&self, text: &str) -> bool {
        let mut guard = lock(&self.queues);
        let queues = &mut *guard;
        for queue in [&mut queues.steering, &mut queues.follow_up] {
            if queue.front().map(String::as_str) == Some(text) {
                queue.pop_front();
                return true;
            }
        }
        false
    }

    fn subscribe(self: &Arc<Self>) -> Subscription {
        let rpc = Arc::downgrade(self);
        let events = Mutex::new(JsonEvents::default());
        self.runtime.agent.subscribe(move |event| {
            let Some(rpc) = rpc.upgrade() else { return };
            if let AgentEvent::MessageStart { message } = event {
                if let Some(text) = user_text(message) {
                    if rpc.dequeued(&text) {
                        rpc.queue_update();
                    }
                }
            }
            if let Some(record) = lock(&events).record(event) {
                rpc.out.write(&record);
            }
        })
    }
}

/// Reads one line of at most [`MAX_COMMAND_BYTES`]; `Ok(None)` at the end of input. A longer
/// line is skipped to its end and given as `Err(len)`.
fn read_line<R: BufRead>(reader: &mut R) -> std::io::Result<Option<Result<Vec<u8>, usize>>> {
    let mut line = Vec::new();
    let mut too_long = 0usize;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if line.is_empty() && too_long == 0 {
                return Ok(None);
            }
            break;
        }
        let (chunk, done) = match memchr_lf(buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if too_long > 0 || line.len() + chunk.len() > MAX_COMMAND_BYTES {
            too_long += line.len() + chunk.len();
            line.clear();
        } else {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long > 0 {
        return Ok(Some(Err(too_long)));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(Ok(line)))
}

fn memchr_lf(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|b| *b == b'\n')
}

/// Serves RPC on stdin/stdout until stdin closes; returns the exit code.
pub(crate) async fn run(runtime: Arc<Runtime>) -> i32 {
    let auto_retry = runtime.config.retry.is_some();
    let rpc = Arc::new(Rpc {
        runtime,
        out: RecordWriter::default(),
        run: Mutex::new(None),
        run_stop: Mutex::default(),
        compaction: Mutex::new(None),
        busy: AtomicBool::new(false),
        queues: Mutex::new(Queues::default()),
        auto_retry: AtomicBool::new(auto_retry),
        bash_cancel: Mutex::default(),
        pending_bash: Mutex::default(),
        state_cache: state::StateCache::default(),
    });
    let _subscription = rpc.subscribe();
    let handle = tokio::runtime::Handle::current();
    let (done, finished) = tokio::sync::oneshot::channel::<()>();
    let serving = rpc.clone();
    let spawned = std::thread::Builder::new()
        .name("oxpi-rpc".into())
        .spawn(move || {
            serve(&serving, &handle, &mut std::io::stdin().lock());
            let _ = done.send(());
        });
    let code = match spawned {
        // An error here means the thread ended without a word (a panic, already reported).
        Ok(_) => i32::from(finished.await.is_err()),
        Err(e) => {
            eprintln!("oxpi: the RPC reader thread could not start: {e}");
            1
        }
    };
    rpc.abort_bash();
    rpc.abort_and_wait().await;
    code
}

/// Reads commands from `input` until it ends, handling each in order on this thread with the
/// runtime's `handle` and writing its response.
fn serve<R: BufRead>(rpc: &Arc<Rpc>, handle: &tokio::runtime::Handle, input: &mut R) {
    loop {
        let line = match read_line(input) {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                eprintln!("oxpi: stdin could not be read: {e}");
                break;
            }
        };
        let line = match line {
            Ok(line) => line,
            Err(len) => {
                let text = format!(
                    "Failed to parse command: the line of {len} bytes is longer than {MAX_COMMAND_BYTES}"
                );
                rpc.out.write(&failure(&None, Some("parse"), &text));
                continue;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // The state is answered from memory, without entering the runtime: clients poll it.
        if let Some(id) = state::get_state_id(&line) {
            state::write_state(rpc, id);
            continue;
        }
        let command: Value = match serde_json::from_slice(&line) {
            Ok(v) => v,
            Err(e) => {
                let text = format!("Failed to parse command: {e}");
                rpc.out.write(&failure(&None, Some("parse"), &text));
                continue;
            }
        };
        if let Some(response) = handle.block_on(commands::handle(rpc, &command)) {
            rpc.out.write(&response);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_on_lf_only_and_long_lines_are_refused() {
        let mut reader = "{\"a\":\"x\u{2028}y\"}\r\n\n{\"b\":1}".as_bytes();
        let first = read_line(&mut reader).unwrap().unwrap().unwrap();
        assert_eq!(first, "{\"a\":\"x\u{2028}y\"}".as_bytes());
        assert_eq!(read_line(&mut reader).unwrap().unwrap().unwrap(), b"");
        assert_eq!(
            read_line(&mut reader).unwrap().unwrap().unwrap(),
            b"{\"b\":1}"
        );
        assert!(read_line(&mut reader).unwrap().is_none());

        let mut long = vec![b'x'; MAX_COMMAND_BYTES + 10];
        long.extend_from_slice(b"\n{}\n");
        let mut reader = long.as_slice();
        assert_eq!(
            read_line(&mut reader).unwrap().unwrap(),
            Err(MAX_COMMAND_BYTES + 10)
        );
        assert_eq!(read_line(&mut reader).unwrap().unwrap().unwrap(), b"{}");
    }

    #[test]
    fn responses_have_pi_s_shape() {
        let id = Some(json!("r1"));
        assert_eq!(
            success(&id, "abort", None),
            json!({"id": "r1", "type": "response", "command": "abort", "success": true})
        );
        assert_eq!(
            failure(&None, Some("parse"), "bad"),
            json!({"type": "response", "command": "parse", "success": false, "error": "bad"})
        );
    }
}
