//! What the loop does with keys, agent events and actions: prompts and queues through the
//! agent, pi's slash commands (`/model`, `/thinking`, `/new`, `/resume`, `/name`, `/session`,
//! `/compact`, `/copy`, `/hotkeys`, `/settings`, `/login`, `/logout`, `/quit`), prompt templates and
//! skills sent expanded, and `!cmd` / `!!cmd`.

use std::sync::Arc;
use std::time::Instant;

use crossterm::event::Event;
use oxpi_ai::{Model, ThinkingLevel};
use tokio::sync::mpsc;

use super::selector::{Choice, Selector};
use super::state::{Action, App, Footer, Item, SelectorKind};
use super::{keys, Msg};
use crate::runtime::Runtime;

/// The notice while `/compact` runs.
const COMPACTING: &str = "Compacting…";

/// What the commands act on.
pub(crate) struct Ctx {
    /// The run.
    pub runtime: Arc<Runtime>,
    /// The loop's inbox (for results of spawned work).
    pub tx: mpsc::UnboundedSender<Msg>,
    /// `--base-url` and the provider it was given for: that provider's models are served there
    /// for the whole run, so a switch keeps the server.
    pub base_url: Option<(String, String)>,
    /// Cancels the view's own work (`!cmd`, `/compact`) on `Esc`; replaced after each use.
    pub cancel: tokio_util::sync::CancellationToken,
    /// The `/login` or `/logout` in progress (the editor's text goes to it).
    pub login: Option<super::login::LoginRun>,
    /// Logins started so far (each one's id).
    pub logins: u64,
}

/// The models one may switch to: the current one, then every model with a key
/// (`models.json`'s included); models of the `--base-url` provider (`base_url`) are served
/// there.
pub(crate) fn available_models(
    runtime: &Runtime,
    base_url: Option<&(String, String)>,
) -> Vec<Model> {
    crate::model_scope::current_first(runtime, base_url)
}

fn key_of(model: &Model) -> String {
    format!("{}/{}", model.provider, model.id)
}

impl Ctx {
    /// Handles one message of the loop.
    pub(crate) fn handle(&mut self, app: &mut App, msg: Msg) {
        let now = Instant::now();
        match msg {
            Msg::Agent(event) => app.on_event(&event, now),
            Msg::Input(Event::Key(key)) => {
                if let Some(key) = keys::from_event(key) {
                    if let Some(action) = app.on_key(key, now) {
                        self.act(app, action, now);
                    }
                }
            }
            Msg::Input(Event::Paste(text)) => {
                if let Some(action) = app.on_key(keys::Key::Paste(text), now) {
                    self.act(app, action, now);
                }
            }
            Msg::Input(_) => {}
            Msg::Done(error) => {
                // A late `Done` of an aborted run must not stop the spinner of a `!` command
                // started since (its tool view is still running): `Esc` would not reach it.
                let running = app.tools.iter().any(|t| t.result.is_none());
                if !self.runtime.agent.is_streaming() && !running {
                    app.working = None;
                    if app.notice.as_deref() == Some(COMPACTING) {
                        app.notice = None;
                    }
                }
                if let Some(e) = error {
                    app.pending.push(Item::Error(e));
                }
            }
            Msg::Show(item) => app.pending.push(item),
            Msg::LoginEnded(id, result) => {
                if self.login.as_ref().is_some_and(|l| l.id == id) {
                    self.login = None;
                    app.login = false;
                }
                app.pending.push(match result {
                    Ok(text) => Item::Info(text),
                    Err(e) => Item::Error(e),
                });
            }
        }
    }

    /// Carries out `action`.
    pub(crate) fn act(&mut self, app: &mut App, action: Action, now: Instant) {
        let agent = &self.runtime.agent;
        match action {
            Action::Submit(text) => self.submit(app, text, now),
            Action::Queue(kind, text) => {
                let images = app.take_images(&text);
                super::queue(&self.runtime, kind, &text, &images);
            }
            Action::Setting(id, value) => {
                let dir = oxpi_session::default_agent_dir();
                match super::settings::apply(&self.runtime, dir.as_deref(), id, &value) {
                    Ok(notice) => app.notice = Some(notice),
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            Action::PasteImage => super::images::paste_clipboard(self.tx.clone()),
            Action::Abort => {
                if let Some(login) = self.login.take() {
                    login.cancel();
                    app.login = false;
                    app.pending.push(Item::Error("Login cancelled".into()));
                    return;
                }
                agent.clear_all_queues();
                agent.abort();
                std::mem::take(&mut self.cancel).cancel();
                app.dequeue_to_editor();
            }
            Action::Dequeue => {
                agent.clear_all_queues();
                app.dequeue_to_editor();
            }
            Action::Quit => app.quit = true,
            Action::Copy => self.command(app, "copy", "", now),
            Action::SelectModel => self.open_model_selector(app, ""),
            Action::CycleModel(forward) => {
                let cycled = crate::model_scope::cycle_runtime(
                    &self.runtime,
                    forward,
                    self.base_url.as_ref(),
                );
                let Some((model, level, _)) = cycled else {
                    app.notice = Some(if self.runtime.scope.is_empty() {
                        "Only one model available".into()
                    } else {
                        "Only one model in scope".into()
                    });
                    return;
                };
                app.footer.model = key_of(&model);
                app.footer.context_window = model.context_window;
                app.footer.thinking = level.as_str().to_string();
                let thinking = if model.reasoning && level != ThinkingLevel::Off {
                    format!(" (thinking: {})", level.as_str())
                } else {
                    String::new()
                };
                let name = if model.name.is_empty() {
                    &model.id
                } else {
                    &model.name
                };
                app.notice = Some(format!("Switched to {name}{thinking}"));
            }
            Action::CycleThinking => {
                let levels = oxpi_ai::supported_thinking_levels(&agent.model());
                if levels.len() < 2 {
                    app.notice = Some("This model has no thinking levels".into());
                    return;
                }
                let now_level = self.runtime.thinking_level();
                let next = levels
                    .iter()
                    .position(|l| *l == now_level)
                    .map_or(levels[0], |i| levels[(i + 1) % levels.len()]);
                self.set_thinking(app, next);
            }
            Action::Chosen(SelectorKind::Model, key) => {
                if let Some(model) = available_models(&self.runtime, self.base_url.as_ref())
                    .into_iter()
                    .find(|m| key_of(m) == key)
                {
                    self.set_model(app, model);
                }
            }
            Action::Chosen(SelectorKind::Thinking, name) => {
                if let Some(level) = ThinkingLevel::parse(&name) {
                    self.set_thinking(app, level);
                }
            }
            Action::Chosen(SelectorKind::Session, path) => self.resume(app, &path),
            Action::Chosen(SelectorKind::Tree, id) => {
                match super::branches::navigate(&self.runtime, &id) {
                    Ok(text) => {
                        if let Some(text) = text {
                            app.editor.set_text(&text);
                        }
                        app.pending
                            .push(Item::Info("Moved in the session tree".into()));
                    }
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            Action::Chosen(SelectorKind::Fork, id) => {
                match super::branches::fork(&self.runtime, &id) {
                    Ok(text) => {
                        app.editor.set_text(&text);
                        app.footer = super::footer(&self.runtime);
                        let file = self.runtime.session_file().map(|p| p.display().to_string());
                        app.pending.push(Item::Info(format!(
                            "Forked to a new session{}",
                            file.map(|f| format!(": {f}")).unwrap_or_default()
                        )));
                    }
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            Action::Chosen(SelectorKind::File, path) => app.editor.insert_str(&format!("{path} ")),
            Action::TreeRefresh => self.refresh_tree(app),
            Action::TreeEditLabel(id) => {
                let current = super::tree::label_of(&self.runtime, &id).unwrap_or_default();
                app.tree.label_edit = Some((id, current));
            }
            Action::TreeLabel(id, text) => {
                if let Err(e) = super::tree::set_label(&self.runtime, &id, &text) {
                    app.pending.push(Item::Error(e));
                }
                self.refresh_tree(app);
            }
            Action::FileSearch => {
                let root = self.runtime.workspace.root().to_path_buf();
                let choices = super::complete::workspace_files(&root)
                    .into_iter()
                    .map(|f| Choice {
                        key: f.clone(),
                        label: f,
                        detail: String::new(),
                    })
                    .collect();
                app.selector = Some((
                    SelectorKind::File,
                    Selector::new("Insert a file", choices, None),
                ));
            }
            Action::Complete(word) => {
                let first_word = app.editor.text().trim_start() == word;
                let candidates: Vec<String> = if first_word && word.starts_with('/') {
                    // The view's commands, then the prompt templates and skills.
                    let own = super::complete::COMMANDS.iter().map(|c| format!("/{c}"));
                    let configured = self
                        .runtime
                        .commands()
                        .into_iter()
                        .filter_map(|c| c["name"].as_str().map(|name| format!("/{name}")));
                    own.chain(configured).collect()
                } else {
                    let root = self.runtime.workspace.root().to_path_buf();
                    super::complete::path_candidates(&root, &word)
                };
                let (completed, all) = super::complete::complete_word(&word, &candidates);
                if let Some(mut completed) = completed {
                    if all.is_empty() && !completed.ends_with('/') {
                        completed.push(' ');
                    }
                    app.editor.replace_word_before_cursor(&completed);
                }
                if !all.is_empty() {
                    let shown: Vec<&str> = all.iter().take(12).map(String::as_str).collect();
                    app.notice = Some(shown.join("  "));
                }
            }
        }
    }

    fn set_model(&self, app: &mut App, model: Model) {
        self.runtime.agent.set_model(model.clone());
        let _ = self
            .runtime
            .with_session(|s| s.append_model_change(&model.provider, &model.id));
        let level = self
            .runtime
            .set_thinking_level(self.runtime.thinking_level());
        app.footer.model = key_of(&model);
        app.footer.context_window = model.context_window;
        app.footer.thinking = level.as_str().to_string();
        app.notice = Some(format!("Model: {}", key_of(&model)));
    }

    fn set_thinking(&self, app: &mut App, level: ThinkingLevel) {
        let set = self.runtime.set_thinking_level(level);
        app.footer.thinking = set.as_str().to_string();
        app.notice = Some(format!("Thinking level: {}", set.as_str()));
    }

    /// Lists the open tree again under its filter, the same entry selected and query kept.
    fn refresh_tree(&self, app: &mut App) {
        let Some((SelectorKind::Tree, old)) = &app.selector else {
            return;
        };
        let (query, chosen) = (old.query.clone(), old.chosen().map(str::to_string));
        match super::tree::tree_picker(&self.runtime, app.tree.filter, chosen.as_deref()) {
            Ok(mut selector) => {
                for c in query.chars() {
                    selector.push(c);
                }
                app.selector = Some((SelectorKind::Tree, selector));
            }
            Err(e) => {
                app.selector = None;
                app.pending.push(Item::Error(e));
            }
        }
    }

    fn open_model_selector(&self, app: &mut App, query: &str) {
        let current = key_of(&self.runtime.agent.model());
        let choices = available_models(&self.runtime, self.base_url.as_ref())
            .iter()
            .map(|m| Choice {
                key: key_of(m),
                label: key_of(m),
                detail: m.name.clone(),
            })
            .collect();
        let mut selector = Selector::new("Select a model", choices, Some(&current));
        for c in query.chars() {
            selector.push(c);
        }
        app.selector = Some((SelectorKind::Model, selector));
    }

    fn submit(&mut self, app: &mut App, text: String, now: Instant) {
        if let Some(login) = &self.login {
            // Not shown and not sent to the model: it may be a code or a redirect URL.
            if login.input.send(text.trim().to_string()).is_ok() {
                return;
            }
            self.login = None;
            app.login = false;
        }
        let trimmed = text.trim();
        if let Some(command) = trimmed.strip_prefix('/') {
            let (name, arg) = command
                .split_once(char::is_whitespace)
                .map_or((command, ""), |(n, a)| (n, a.trim()));
            let expanded = self.runtime.expand_prompt(trimmed);
            if super::complete::COMMANDS.contains(&name) || expanded == trimmed {
                self.command(app, name, arg, now);
                return;
            }
            // A prompt template or `/skill:name`: sent as its expanded text, as in `-p` and RPC.
            return self.send(app, expanded, now);
        }
        if let Some(rest) = trimmed.strip_prefix('!') {
            let (exclude, command) = match rest.strip_prefix('!') {
                Some(c) => (true, c.trim()),
                None => (false, rest.trim()),
            };
            if !command.is_empty() {
                super::shell::run(self, app, command.to_string(), exclude, now);
            }
            return;
        }
        self.send(app, text, now);
    }

    /// Sends `text` as the user's prompt.
    fn send(&mut self, app: &mut App, text: String, now: Instant) {
        let images = app.take_images(&text);
        app.working = Some(now);
        let runtime = self.runtime.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            // A run that is just ending (its `agent_end` seen) still holds the agent.
            runtime.agent.wait_for_idle().await;
            let user = crate::runtime::user_message_with(&text, &images);
            let messages = runtime.prompt_messages(user);
            // The same path as `-p` and RPC: the session's overflow recovery included.
            // A conversation that could not be saved is an error on screen, as in `-p` and RPC.
            let error = match runtime.prompt(messages).await {
                Err(e) => Some(e.to_string()),
                Ok(()) => runtime.take_session_errors(),
            };
            let _ = tx.send(Msg::Done(error));
        });
    }

    fn busy(&self, app: &mut App, name: &str) -> bool {
        if app.working.is_some() {
            app.pending.push(Item::Error(format!(
                "/{name} waits until the agent is idle (Esc aborts)"
            )));
            return true;
        }
        false
    }

    fn command(&mut self, app: &mut App, name: &str, arg: &str, now: Instant) {
        match name {
            "quit" | "exit" => app.quit = true,
            "hotkeys" => app.pending.push(Item::Info(keys::HOTKEYS.into())),
            "model" => self.open_model_selector(app, arg),
            "settings" => {
                let dir = oxpi_session::default_agent_dir();
                let values = super::settings::values(&self.runtime, dir.as_deref());
                app.settings = Some(super::settings::SettingsList::new(&values));
            }
            "thinking" => {
                let levels = oxpi_ai::supported_thinking_levels(&self.runtime.agent.model());
                if let Some(level) = (!arg.is_empty()).then(|| ThinkingLevel::parse(arg)) {
                    match level {
                        Some(l) if levels.contains(&l) => self.set_thinking(app, l),
                        _ => app.pending.push(Item::Error(format!(
                            "Invalid thinking level: {arg} (this model takes {})",
                            levels
                                .iter()
                                .map(|l| l.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))),
                    }
                    return;
                }
                let choices = levels
                    .iter()
                    .map(|l| Choice {
                        key: l.as_str().into(),
                        label: l.as_str().into(),
                        detail: String::new(),
                    })
                    .collect();
                let current = self.runtime.thinking_level();
                app.selector = Some((
                    SelectorKind::Thinking,
                    Selector::new("Thinking level", choices, Some(current.as_str())),
                ));
            }
            "new" => {
                if self.busy(app, name) {
                    return;
                }
                match super::sessions::new_session(&self.runtime) {
                    Ok(()) => {
                        app.footer = super::footer(&self.runtime);
                        app.pending.push(Item::Info("New session started".into()));
                    }
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            "resume" => {
                if self.busy(app, name) {
                    return;
                }
                match super::sessions::picker(&self.runtime) {
                    Ok(selector) => app.selector = Some((SelectorKind::Session, selector)),
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            "name" => {
                if arg.is_empty() {
                    let text = match &app.footer.session_name {
                        Some(n) => format!("Session name: {n}"),
                        None => "The session has no name (/name <name> sets one)".into(),
                    };
                    app.pending.push(Item::Info(text));
                    return;
                }
                let set = self
                    .runtime
                    .with_session(|s| s.append_session_info(arg).map_err(|e| e.to_string()));
                match set {
                    Some(Ok(_)) => {
                        app.footer.session_name = Some(arg.to_string());
                        app.pending.push(Item::Info(format!("Session name: {arg}")));
                    }
                    Some(Err(e)) => app.pending.push(Item::Error(e)),
                    None => app.pending.push(Item::Error("No session is open".into())),
                }
            }
            "tree" | "fork" => {
                if self.busy(app, name) {
                    return;
                }
                let (kind, picker) = if name == "tree" {
                    app.tree = Default::default();
                    (
                        SelectorKind::Tree,
                        super::tree::tree_picker(&self.runtime, app.tree.filter, None),
                    )
                } else {
                    (
                        SelectorKind::Fork,
                        super::branches::fork_picker(&self.runtime),
                    )
                };
                match picker {
                    Ok(selector) => app.selector = Some((kind, selector)),
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            "clone" => {
                if self.busy(app, name) {
                    return;
                }
                match super::branches::clone_session(&self.runtime) {
                    Ok(()) => {
                        let file = self.runtime.session_file().map(|p| p.display().to_string());
                        app.pending.push(Item::Info(format!(
                            "Cloned to a new session{}",
                            file.map(|f| format!(": {f}")).unwrap_or_default()
                        )));
                    }
                    Err(e) => app.pending.push(Item::Error(e)),
                }
            }
            "export" => {
                let cwd = self.runtime.workspace.root().to_path_buf();
                let file = self.runtime.session_file();
                let messages = self.runtime.agent.messages();
                match super::export::export(arg, &cwd, file.as_deref(), &messages) {
                    Ok(path) => app
                        .pending
                        .push(Item::Info(format!("Exported to {}", path.display()))),
                    Err(e) => app.pending.push(Item::Error(format!("Export failed: {e}"))),
                }
            }
            "session" => app.pending.push(Item::Info(super::sessions::info(
                &self.runtime,
                &app.footer,
            ))),
            "compact" => {
                if self.busy(app, name) {
                    return;
                }
                app.working = Some(now);
                app.notice = Some(COMPACTING.into());
                let runtime = self.runtime.clone();
                let tx = self.tx.clone();
                let custom = (!arg.is_empty()).then(|| arg.to_string());
                let cancel = self.cancel.child_token();
                tokio::spawn(async move {
                    match crate::compact::compact(&runtime, custom.as_deref(), cancel).await {
                        Ok(result) => {
                            let before = result["tokensBefore"].as_u64().unwrap_or(0);
                            let _ = tx.send(Msg::Show(Item::Info(format!(
                                "Compacted: {before} tokens before"
                            ))));
                            let _ = tx.send(Msg::Done(None));
                        }
                        Err(e) => {
                            let _ = tx.send(Msg::Done(Some(e.to_string())));
                        }
                    }
                });
            }
            "login" | "logout" => {
                if self.busy(app, name) {
                    return;
                }
                let provider = (!arg.is_empty()).then(|| arg.to_string());
                let logout = name == "logout";
                self.logins += 1;
                let (id, tx) = (self.logins, self.tx.clone());
                self.login = Some(super::login::start(id, provider, logout, tx));
                app.login = true;
            }
            "copy" => match super::shell::last_reply_text(&self.runtime) {
                Some(text) => {
                    super::shell::osc52(&text);
                    app.notice = Some("Copied the last reply".into());
                }
                None => app.pending.push(Item::Error("No reply to copy yet".into())),
            },
            _ => app.pending.push(Item::Error(format!(
                "Unknown command: /{name} (/hotkeys lists the keys)"
            ))),
        }
    }

    fn resume(&mut self, app: &mut App, path: &str) {
        match super::sessions::switch(&self.runtime, path) {
            Ok(()) => {
                app.footer = super::footer(&self.runtime);
                app.pending.push(Item::Info(format!("Resumed {path}")));
                let messages = self.runtime.agent.messages();
                let mut fresh = App::new(Footer::default());
                fresh.replay(&messages);
                app.footer.input = fresh.footer.input;
                app.footer.output = fresh.footer.output;
                app.footer.cache = fresh.footer.cache;
                app.footer.cost = fresh.footer.cost;
                app.footer.context_tokens = fresh.footer.context_tokens;
                app.pending.extend(fresh.pending);
            }
            Err(e) => app.pending.push(Item::Error(e)),
        }
    }
}
