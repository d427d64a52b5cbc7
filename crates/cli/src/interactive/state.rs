//! The interactive view's state and how it changes: agent events become transcript items
//! (finished ones wait in `pending` for the scrollback), keys become [`Action`]s for the loop
//! to carry out. Pure: no terminal, no agent; time is passed in.

use std::time::{Duration, Instant};

use oxpi_agent_core::AgentEvent;
use oxpi_ai::{AssistantContent, AssistantMessage, Message, StopReason, UserContent};
use serde_json::{Map, Value};

use super::editor::Editor;
use super::selector::Selector;

/// How long a first `Ctrl+C` waits for a second one to quit.
pub(crate) const CTRL_C_WINDOW: Duration = Duration::from_secs(2);

/// A tool call on screen: its arguments, and its result once it has one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolView {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Map<String, Value>,
    /// Output so far (`bash` streams it).
    pub partial: Option<String>,
    /// The result text and whether it is an error.
    pub result: Option<(String, bool)>,
}

/// One piece of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    /// A prompt (or a steering / follow-up message as it reaches the model).
    User(String),
    /// A reply: its thinking and text blocks in order, and why it failed, if it did.
    Assistant {
        /// `(is_thinking, text)` blocks.
        blocks: Vec<(bool, String)>,
        /// The error or abort text.
        error: Option<String>,
    },
    /// A tool call and its result.
    Tool(ToolView),
    /// A notice (command output, retries).
    Info(String),
    /// An error.
    Error(String),
    /// The startup header (pi's), printed first.
    Startup(super::header::Startup),
}

/// Which queue a message waits in while the agent works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueKind {
    /// Delivered after the current tool calls (`Enter`).
    Steer,
    /// Delivered when the agent would stop (`Alt+Enter`).
    FollowUp,
}

/// What the loop must do after a key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Send a prompt (idle) — slash commands and `!` are parsed by the loop.
    Submit(String),
    /// Queue a message while the agent works.
    Queue(QueueKind, String),
    /// Abort the run (`Esc`); queued messages come back to the editor.
    Abort,
    /// Leave.
    Quit,
    /// Open the model selector (`Ctrl+L`).
    SelectModel,
    /// Next (`true`) or previous model (`Ctrl+P` / `Shift+Ctrl+P`).
    CycleModel(bool),
    /// Next thinking level (`Shift+Tab`).
    CycleThinking,
    /// The choice made in the open selector: its kind and the chosen item's key.
    Chosen(SelectorKind, String),
    /// Send queued messages back to the editor (`Alt+Up`).
    Dequeue,
    /// Copy the last reply (`Ctrl+X`, as `/copy`).
    Copy,
    /// Complete the word before the cursor (`Tab`).
    Complete(String),
    /// Open the file search (`@` at a word start).
    FileSearch,
    /// List the tree again (its filter changed, or a label).
    TreeRefresh,
    /// Start editing the label of a tree entry (`Shift+L`).
    TreeEditLabel(String),
    /// Set the label of a tree entry (empty: remove it).
    TreeLabel(String, String),
    /// A setting of `/settings` changed: its id and new value.
    Setting(&'static str, String),
    /// Paste an image (or text) from the clipboard (`Ctrl+V`).
    PasteImage,
}

/// What a selector chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SelectorKind {
    /// A model (`provider/id`).
    Model,
    /// A thinking level.
    Thinking,
    /// A session file to resume.
    Session,
    /// A workspace file to insert (`@`).
    File,
    /// An entry of the session tree (`/tree`).
    Tree,
    /// A user message to fork from (`/fork`).
    Fork,
}

/// The footer's facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Footer {
    /// The working directory as shown (`~` for home).
    pub cwd: String,
    /// The session's name, if it has one.
    pub session_name: Option<String>,
    /// `provider/model`.
    pub model: String,
    /// The thinking level's name (`off` for none).
    pub thinking: String,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// Tokens of the context at the last reply.
    pub context_tokens: u64,
    /// Input tokens of the session.
    pub input: u64,
    /// Output tokens of the session.
    pub output: u64,
    /// Cache reads and writes of the session.
    pub cache: u64,
    /// Cost of the session in dollars.
    pub cost: f64,
}

impl Footer {
    /// Adds a reply's usage.
    pub(crate) fn add(&mut self, reply: &AssistantMessage) {
        let u = &reply.usage;
        self.input += u.input;
        self.output += u.output;
        self.cache += u.cache_read + u.cache_write;
        self.cost += u.cost.total;
        let context = u.input + u.output + u.cache_read + u.cache_write;
        if context > 0 {
            self.context_tokens = context;
        }
    }
}

/// The whole state of the view.
#[derive(Debug)]
pub(crate) struct App {
    /// The prompt editor.
    pub editor: Editor,
    /// Finished items not yet written to the scrollback.
    pub pending: Vec<Item>,
    /// The reply being streamed (set by the loop from the agent before drawing).
    pub live: Option<AssistantMessage>,
    /// Tool calls of the last reply not yet finished (in call order).
    pub tools: Vec<ToolView>,
    /// When the agent started working (`None`: idle).
    pub working: Option<Instant>,
    /// Messages waiting while the agent works.
    pub queue: Vec<(QueueKind, String)>,
    /// A one-line notice above the editor.
    pub notice: Option<String>,
    /// The first `Ctrl+C` of a possible pair.
    pub last_ctrl_c: Option<Instant>,
    /// The footer.
    pub footer: Footer,
    /// Tool results shown whole (`Ctrl+O`).
    pub expand_tools: bool,
    /// Thinking blocks shown whole (`Ctrl+T`); collapsed to `Thinking…` by default.
    pub show_thinking: bool,
    /// An open selector.
    pub selector: Option<(SelectorKind, Selector)>,
    /// `/tree`'s filter and label editing.
    pub tree: super::tree::TreeKeys,
    /// Set when the view should end.
    pub quit: bool,
    /// A `/login` waits for what the user types (a choice, a code, a redirect URL): `Enter`
    /// hands the editor's text to it and `Esc` cancels it.
    pub login: bool,
    /// Set by `Ctrl+G`: the loop opens the external editor on the editor's text.
    pub external_editor: bool,
    /// Long pastes, shown in the editor as `[paste #n +N lines]` and put back on sending.
    pub pastes: Vec<(String, String)>,
    /// The open `/settings` list.
    pub settings: Option<super::settings::SettingsList>,
    /// Image files pasted (their paths are in the editor): attached to the message sent.
    pub images: Vec<std::path::PathBuf>,
}

/// Pastes of more lines than this are kept as a marker in the editor.
pub(crate) const PASTE_MARKER_LINES: usize = 10;

/// The text of a user message's text blocks.
pub(crate) fn user_text(message: &Message) -> Option<String> {
    let Message::User(user) = message else {
        return None;
    };
    Some(match &user.content {
        oxpi_ai::UserMessageContent::Text(t) => t.clone(),
        oxpi_ai::UserMessageContent::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                UserContent::Text(t) => t.text.clone(),
                UserContent::Image(i) => format!("[image {}]", i.mime_type),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// A finished reply as a transcript item (tool calls are shown apart).
pub(crate) fn assistant_item(reply: &AssistantMessage) -> Item {
    let blocks = reply
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::Text(t) if !t.text.trim().is_empty() => Some((false, t.text.clone())),
            AssistantContent::Thinking(t) if !t.thinking.trim().is_empty() => {
                Some((true, t.thinking.clone()))
            }
            _ => None,
        })
        .collect();
    let error = match reply.stop_reason {
        StopReason::Error => Some(
            reply
                .error_message
                .clone()
                .unwrap_or_else(|| "the request failed".into()),
        ),
        StopReason::Aborted => Some("Operation aborted".into()),
        StopReason::Length => Some("The reply was cut at the model's output limit.".into()),
        _ => None,
    };
    Item::Assistant { blocks, error }
}

/// The text of a tool result's text blocks.
pub(crate) fn result_text(content: &[UserContent]) -> String {
    content
        .iter()
        .map(|b| match b {
            UserContent::Text(t) => t.text.clone(),
            UserContent::Image(i) => format!("[image {}]", i.mime_type),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl App {
    /// A fresh view with `footer`.
    pub(crate) fn new(footer: Footer) -> Self {
        Self {
            editor: Editor::new(),
            pending: Vec::new(),
            live: None,
            tools: Vec::new(),
            working: None,
            queue: Vec::new(),
            notice: None,
            last_ctrl_c: None,
            footer,
            expand_tools: false,
            show_thinking: false,
            selector: None,
            tree: Default::default(),
            quit: false,
            login: false,
            external_editor: false,
            pastes: Vec::new(),
            settings: None,
            images: Vec::new(),
        }
    }

    /// Writes the earlier conversation (a resumed session) as items.
    pub(crate) fn replay(&mut self, messages: &[Message]) {
        let mut calls: Vec<ToolView> = Vec::new();
        for message in messages {
            match message {
                Message::User(_) => self.pending.extend(user_text(message).map(Item::User)),
                Message::Assistant(reply) => {
                    self.footer.add(reply);
                    self.pending.push(assistant_item(reply));
                    calls = tool_calls(reply);
                }
                Message::ToolResult(result) => {
                    if let Some(pos) = calls.iter().position(|c| c.id == result.tool_call_id) {
                        let mut call = calls.remove(pos);
                        call.result = Some((result_text(&result.content), result.is_error));
                        self.pending.push(Item::Tool(call));
                    }
                }
                _ => {}
            }
        }
    }

    /// Folds one agent event into the view.
    pub(crate) fn on_event(&mut self, event: &AgentEvent, now: Instant) {
        match event {
            AgentEvent::AgentStart => self.working = Some(now),
            AgentEvent::MessageStart { message } => {
                if let Some(text) = user_text(message) {
                    // A queued message with images is shown with `[image …]` lines after its text.
                    let queued =
                        |t: &String| text == *t || text.starts_with(&format!("{t}\n[image"));
                    if let Some(pos) = self.queue.iter().position(|(_, t)| queued(t)) {
                        self.queue.remove(pos);
                    }
                    self.pending.push(Item::User(text));
                }
            }
            AgentEvent::MessageEnd {
                message: Message::Assistant(reply),
            } => {
                self.live = None;
                self.footer.add(reply);
                let item = assistant_item(reply);
                if !matches!(&item, Item::Assistant { blocks, error } if blocks.is_empty() && error.is_none())
                {
                    self.pending.push(item);
                }
                self.tools.extend(tool_calls(reply));
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                if let Some(t) = self.tools.iter_mut().find(|t| t.id == *tool_call_id) {
                    t.partial = Some(result_text(&partial_result.content));
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => {
                if let Some(t) = self.tools.iter_mut().find(|t| t.id == *tool_call_id) {
                    // An edit is shown as its numbered diff (pi's `details.diff`).
                    let diff = result
                        .details
                        .as_ref()
                        .and_then(|d| d.get("diff"))
                        .and_then(Value::as_str)
                        .filter(|d| t.name == "edit" && !*is_error && !d.is_empty());
                    let text = diff.map_or_else(|| result_text(&result.content), str::to_string);
                    t.result = Some((text, *is_error));
                    t.partial = None;
                }
                self.flush_tools(false);
            }
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => self.pending.push(Item::Info(format!(
                "Retrying ({attempt}/{max_attempts}) in {}s: {error_message}",
                delay_ms.div_ceil(1000)
            ))),
            AgentEvent::AutoRetryEnd {
                success: false,
                final_error: Some(e),
                ..
            } => self
                .pending
                .push(Item::Error(format!("Retries failed: {e}"))),
            AgentEvent::AgentEnd { error_message, .. } => {
                self.working = None;
                self.live = None;
                self.flush_tools(true);
                if let Some(e) = error_message {
                    self.pending.push(Item::Error(e.clone()));
                }
            }
            _ => {}
        }
    }

    /// Moves finished tool calls at the front (all of them when `all`) to `pending`.
    fn flush_tools(&mut self, all: bool) {
        while let Some(first) = self.tools.first() {
            if first.result.is_none() && !all {
                break;
            }
            let t = self.tools.remove(0);
            self.pending.push(Item::Tool(t));
        }
    }

    /// Handles a key; returns what the loop must do.
    pub(crate) fn on_key(&mut self, key: super::keys::Key, now: Instant) -> Option<Action> {
        use super::keys::Key;
        if !matches!(key, Key::CtrlC) {
            self.last_ctrl_c = None;
            if self.notice.as_deref() == Some(CTRL_C_NOTICE) {
                self.notice = None;
            }
        }
        if let Some(list) = &mut self.settings {
            return match list.on_key(&key) {
                super::settings::Outcome::Stay => None,
                super::settings::Outcome::Close => {
                    self.settings = None;
                    None
                }
                super::settings::Outcome::Changed(id, value) => Some(Action::Setting(id, value)),
            };
        }
        if let Some((kind, selector)) = &mut self.selector {
            let kind = *kind;
            if kind == SelectorKind::Tree {
                if let Some(action) = self.tree.on_key(&key, selector) {
                    return action;
                }
            }
            return match key {
                Key::Esc | Key::CtrlC => {
                    self.selector = None;
                    None
                }
                Key::Enter => {
                    let chosen = selector.chosen().map(str::to_string);
                    self.selector = None;
                    chosen.map(|c| Action::Chosen(kind, c))
                }
                Key::Up => {
                    selector.up();
                    None
                }
                Key::Down => {
                    selector.down();
                    None
                }
                Key::Backspace => {
                    selector.backspace();
                    None
                }
                Key::Char(c) => {
                    selector.push(c);
                    None
                }
                _ => None,
            };
        }
        match key {
            Key::Char('@') => {
                let at_word_start = self.editor.word_before_cursor().is_empty();
                self.editor.insert_char('@');
                if at_word_start {
                    return Some(Action::FileSearch);
                }
            }
            Key::Char(c) => self.editor.insert_char(c),
            Key::Tab => return Some(Action::Complete(self.editor.word_before_cursor())),
            Key::Paste(s) => self.paste(s),
            Key::NewLine => self.editor.newline(),
            Key::Enter => {
                if self.editor.ends_with_backslash() {
                    self.editor.backspace();
                    self.editor.newline();
                    return None;
                }
                return self.submit(QueueKind::Steer);
            }
            Key::AltEnter => return self.submit(QueueKind::FollowUp),
            Key::Backspace => self.editor.backspace(),
            Key::Delete => self.editor.delete(),
            Key::Left => self.editor.left(),
            Key::Right => self.editor.right(),
            Key::Up => self.editor.up(),
            Key::Down => self.editor.down(),
            Key::Home => self.editor.home(),
            Key::End => self.editor.end(),
            Key::CtrlW => self.editor.delete_word_backward(),
            Key::CtrlU => self.editor.delete_to_line_start(),
            Key::CtrlK => self.editor.delete_to_line_end(),
            Key::CtrlC => {
                if let Some(first) = self.last_ctrl_c {
                    if now.duration_since(first) <= CTRL_C_WINDOW {
                        self.quit = true;
                        return Some(Action::Quit);
                    }
                }
                self.editor.clear();
                self.pastes.clear();
                self.images.clear();
                self.last_ctrl_c = Some(now);
                self.notice = Some(CTRL_C_NOTICE.into());
            }
            Key::CtrlD => {
                if self.editor.is_empty() {
                    self.quit = true;
                    return Some(Action::Quit);
                }
                self.editor.delete();
            }
            Key::Esc => {
                if self.working.is_some() || self.login {
                    return Some(Action::Abort);
                }
            }
            Key::CtrlO => self.expand_tools = !self.expand_tools,
            Key::CtrlT => self.show_thinking = !self.show_thinking,
            Key::CtrlL => return Some(Action::SelectModel),
            Key::CtrlX => return Some(Action::Copy),
            Key::CtrlG => self.external_editor = true,
            Key::CtrlV => return Some(Action::PasteImage),
            Key::CtrlP => return Some(Action::CycleModel(true)),
            Key::CtrlShiftP => return Some(Action::CycleModel(false)),
            Key::ShiftTab => return Some(Action::CycleThinking),
            Key::AltUp => return Some(Action::Dequeue),
            Key::Other => {}
        }
        None
    }

    fn submit(&mut self, kind: QueueKind) -> Option<Action> {
        if self.login {
            // A login's answer: blank is an answer too (a default), and it is not kept.
            return Some(Action::Submit(self.editor.take_unrecorded()));
        }
        if self.editor.text().trim().is_empty() {
            return None;
        }
        let mut text = self.editor.take();
        for (marker, pasted) in self.pastes.drain(..) {
            text = text.replacen(&marker, &pasted, 1);
        }
        if self.working.is_some() && !text.starts_with('/') && !text.starts_with('!') {
            self.queue.push((kind, text.clone()));
            return Some(Action::Queue(kind, text));
        }
        Some(Action::Submit(text))
    }

    /// Takes the queued messages back into the editor (after an abort, or `Alt+Up`).
    pub(crate) fn dequeue_to_editor(&mut self) {
        if self.queue.is_empty() {
            return;
        }
        let mut texts: Vec<String> = self.queue.drain(..).map(|(_, t)| t).collect();
        if !self.editor.is_empty() {
            texts.push(self.editor.text());
        }
        self.editor.set_text(&texts.join("\n"));
    }
}

/// The notice after a first `Ctrl+C`.
pub(crate) const CTRL_C_NOTICE: &str = "Press Ctrl+C again to exit";

/// The tool calls of a reply, without results.
fn tool_calls(reply: &AssistantMessage) -> Vec<ToolView> {
    reply
        .content
        .iter()
        .filter_map(|b| match b {
            AssistantContent::ToolCall(c) => Some(ToolView {
                id: c.id.clone(),
                name: c.name.clone(),
                args: c.arguments.clone(),
                partial: None,
                result: None,
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
