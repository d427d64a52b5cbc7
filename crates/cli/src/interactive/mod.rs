//! `oxpi`'s interactive mode (pi's terminal UI): an editor, the conversation streamed into the
//! terminal's scrollback, steering and follow-ups while the agent works, `Esc` to abort, model
//! and thinking switches and pi's slash commands. A view over the agent's events: prompts go
//! through the same [`Runtime`] as `-p` and RPC (session, compaction, retry, tools).
//!
//! `state` holds the view's state and is pure; `view` draws it; `terminal` sets the terminal
//! up and restores it; this file is the loop that joins keys, agent events and the terminal.

mod branches;
mod commands;
mod complete;
mod editor;
mod export;
mod header;
mod images;
mod keys;
mod login;
mod markdown;
mod selector;
mod sessions;
mod settings;
mod shell;
mod state;
mod terminal;
mod tree;
mod view;
mod wrap;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::Event;
use oxpi_agent_core::AgentEvent;
use tokio::sync::mpsc;

use crate::runtime::Runtime;
pub(crate) use export::export_file;
use state::{Action, App, Footer, Item, QueueKind};

/// What reaches the loop.
pub(crate) enum Msg {
    /// An agent event.
    Agent(Box<AgentEvent>),
    /// A terminal event.
    Input(Event),
    /// A prompt (or command) ended; with its error text.
    Done(Option<String>),
    /// Something to show.
    Show(Item),
    /// A `/login` (its id) ended: what it says, or its error.
    LoginEnded(u64, Result<String, String>),
}

/// The footer's facts from the runtime.
fn footer(runtime: &Runtime) -> Footer {
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let home = std::env::var("HOME").unwrap_or_default();
    let cwd = match cwd.strip_prefix(&home) {
        Some(rest) if !home.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
            format!("~{rest}")
        }
        _ => cwd,
    };
    let model = runtime.agent.model();
    Footer {
        cwd,
        session_name: runtime
            .with_session(|s| s.session_name().map(str::to_string))
            .flatten(),
        model: format!("{}/{}", model.provider, model.id),
        thinking: runtime.thinking_level().as_str().to_string(),
        context_window: model.context_window,
        ..Footer::default()
    }
}

/// Reads terminal events on a thread of its own until `stop` is set; reads nothing while
/// `paused` (the external editor has the terminal).
fn spawn_input(
    tx: mpsc::UnboundedSender<Msg>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    paused: Arc<std::sync::atomic::AtomicBool>,
) {
    std::thread::spawn(move || {
        use std::sync::atomic::Ordering;
        while !stop.load(Ordering::SeqCst) {
            if paused.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            match crossterm::event::poll(Duration::from_millis(50)) {
                Ok(true) => match crossterm::event::read() {
                    Ok(event) => {
                        if tx.send(Msg::Input(event)).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                },
                Ok(false) => {}
                Err(_) => return,
            }
        }
    });
}

/// Runs the interactive mode until the user quits; returns the exit code.
/// `first` is the prompt given on the command line; `base_url` is `--base-url`; `verbose`
/// shows the whole startup header whatever `quietStartup` says.
pub(crate) async fn run(
    runtime: Arc<Runtime>,
    first: Option<String>,
    base_url: Option<String>,
    verbose: bool,
) -> i32 {
    let mut tui = match terminal::Tui::enter() {
        Ok(tui) => tui,
        Err(e) => {
            eprintln!("oxpi: the terminal could not be set up: {e}");
            return 1;
        }
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let events = tx.clone();
    let _subscription = runtime.agent.subscribe(move |event| {
        let _ = events.send(Msg::Agent(Box::new(event.clone())));
    });
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    spawn_input(tx.clone(), stop.clone(), paused.clone());

    let mut app = App::new(footer(&runtime));
    app.pending
        .extend(header::startup(&runtime, verbose).map(Item::Startup));
    app.replay(&runtime.agent.messages());
    let mut ctx = commands::Ctx {
        runtime: runtime.clone(),
        tx: tx.clone(),
        base_url: base_url.map(|url| (runtime.agent.model().provider, url)),
        cancel: tokio_util::sync::CancellationToken::new(),
        login: None,
        logins: 0,
    };
    if let Some(first) = first {
        ctx.act(&mut app, Action::Submit(first), Instant::now());
    }

    let mut term_signal = signal(tokio::signal::unix::SignalKind::terminate());
    let mut hup_signal = signal(tokio::signal::unix::SignalKind::hangup());
    let mut tick = tokio::time::interval(Duration::from_millis(80));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut code = 0;
    let mut last_draw = Instant::now() - Duration::from_secs(1);
    let mut dirty = true;
    loop {
        if dirty && last_draw.elapsed() >= Duration::from_millis(16) {
            if app.working.is_some() {
                app.live = runtime.agent.streaming_message();
            }
            let width = tui.terminal.size().map(|s| s.width).unwrap_or(80);
            let items = std::mem::take(&mut app.pending);
            let lines: Vec<_> = items
                .iter()
                .flat_map(|i| {
                    view::transcript::item_lines(i, width, app.expand_tools, app.show_thinking)
                })
                .collect();
            let now = Instant::now();
            let drawn = tui
                .print(lines)
                .and_then(|_| tui.terminal.draw(|f| view::draw(f, &app, now)).map(|_| ()));
            if let Err(e) = drawn {
                drop(tui);
                eprintln!("oxpi: the terminal failed: {e}");
                return 1;
            }
            last_draw = now;
            dirty = false;
        }
        if app.quit {
            break;
        }
        tokio::select! {
            msg = rx.recv() => {
                let Some(msg) = msg else { break };
                ctx.handle(&mut app, msg);
                while let Ok(msg) = rx.try_recv() {
                    ctx.handle(&mut app, msg);
                }
                if std::mem::take(&mut app.external_editor) {
                    external_editor(&mut tui, &mut app, &paused).await;
                }
                dirty = true;
            }
            _ = tick.tick() => {
                if app.working.is_some() {
                    dirty = true;
                }
            }
            _ = recv(&mut term_signal) => { code = 143; break; }
            _ = recv(&mut hup_signal) => { code = 129; break; }
        }
        if dirty && last_draw.elapsed() < Duration::from_millis(16) {
            // Deltas arriving faster than a frame are drawn together.
            tokio::time::sleep(Duration::from_millis(16)).await;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    if runtime.agent.is_streaming() {
        runtime.agent.abort();
        let _ = tokio::time::timeout(Duration::from_secs(5), runtime.agent.wait_for_idle()).await;
    }
    // What is left is written before the terminal is given back.
    let width = tui.terminal.size().map(|s| s.width).unwrap_or(80);
    let lines: Vec<_> = std::mem::take(&mut app.pending)
        .iter()
        .flat_map(|i| view::transcript::item_lines(i, width, app.expand_tools, app.show_thinking))
        .collect();
    let _ = tui.print(lines);
    drop(tui);
    code
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).ok()
}

async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Queues `text` (with the pasted `images`) for the agent.
fn queue(runtime: &Runtime, kind: QueueKind, text: &str, images: &[oxpi_ai::UserContent]) {
    let message = crate::runtime::user_message_with(text, images);
    match kind {
        QueueKind::Steer => runtime.agent.steer(message),
        QueueKind::FollowUp => runtime.agent.follow_up(message),
    }
}

/// pi's rule: interactive when there is no `-p` and no `--mode`, and stdin and stdout are
/// terminals.
pub(crate) fn wanted(args: &crate::args::Args) -> bool {
    use std::io::IsTerminal;
    !args.print
        && args.mode.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
}

/// `Ctrl+G`: the editor's text in `$VISUAL`, `$EDITOR` or `nano`; what is saved comes back.
async fn external_editor(
    tui: &mut terminal::Tui,
    app: &mut App,
    paused: &Arc<std::sync::atomic::AtomicBool>,
) {
    use std::sync::atomic::Ordering;
    paused.store(true, Ordering::SeqCst);
    // Let the input thread finish its current poll.
    tokio::time::sleep(Duration::from_millis(80)).await;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "nano".into());
    let result = (|| -> std::io::Result<String> {
        let file = tempfile_path();
        std::fs::write(&file, app.editor.text())?;
        terminal::restore();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(&file)
            .status();
        let text = std::fs::read_to_string(&file);
        let _ = std::fs::remove_file(&file);
        if !status?.success() {
            return Err(std::io::Error::other(format!("{editor} failed")));
        }
        text
    })();
    let _ = crossterm::terminal::enable_raw_mode();
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
    let _ = tui.terminal.clear();
    paused.store(false, Ordering::SeqCst);
    match result {
        Ok(text) => app.editor.set_text(text.trim_end_matches('\n')),
        Err(e) => app
            .pending
            .push(Item::Error(format!("External editor: {e}"))),
    }
}

/// A fresh file name under the temporary directory for the external editor.
fn tempfile_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "oxpi-prompt-{}-{}.md",
        std::process::id(),
        oxpi_ai::now_millis()
    ))
}
