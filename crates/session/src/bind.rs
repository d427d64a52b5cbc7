//! An agent bound to a session: the session's context becomes the agent's history, and every
//! message the agent ends (the prompt, each reply, each tool result) is appended to the
//! session as it ends, so a crash or a kill loses at most the message in flight.

use std::sync::{Arc, Mutex, MutexGuard};

use oxpi_agent_core::{Agent, AgentError, AgentEvent, Subscription};

use crate::auto::{AutoCompaction, CompactionOutcome};
use crate::error::SessionError;
use crate::llm::{to_llm_messages, ConvertError};
use crate::manager::SessionManager;

/// Why an agent could not be bound to a session.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// A message of the session's context is not one the agent can hold.
    #[error("the session's context cannot be given to the agent: {0}")]
    Convert(#[from] ConvertError),
    /// The agent is running; bind it while it is idle.
    #[error("the agent is running; bind a session while it is idle: {0}")]
    Busy(String),
}

/// Why a run of a bound agent ([`SessionBinding::prompt`], [`SessionBinding::continue_`])
/// failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The agent could not run (see [`AgentError`]).
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The run ended, but messages of it could not be appended to the session (a full disk,
    /// a read-only folder, …): the file does not hold the whole conversation. pi's append
    /// throws; here the run's result says so.
    #[error("{}", append_text(.errors, *.dropped))]
    Append {
        /// The appends that failed (the first 16).
        errors: Vec<SessionError>,
        /// How many more failed.
        dropped: usize,
    },
}

fn append_text(errors: &[SessionError], dropped: usize) -> String {
    let more = errors.len().saturating_sub(1) + dropped;
    let first = errors
        .first()
        .map_or_else(String::new, |e| format!(": {e}"));
    if more == 0 {
        format!("the session was not saved{first}")
    } else {
        format!("the session was not saved{first} (and {more} more failed appends)")
    }
}

/// The appends that failed (the first ones kept, the rest counted).
const KEPT_ERRORS: usize = 16;

/// The compaction outcomes kept for [`SessionBinding::take_compactions`].
const KEPT_OUTCOMES: usize = 256;

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) session: SessionManager,
    errors: Vec<SessionError>,
    dropped_errors: usize,
    /// Whether an append ever failed since the binding began.
    append_failed: bool,
    compactions: Vec<CompactionOutcome>,
    dropped_compactions: usize,
}

impl Shared {
    /// Whether an append failed: the file may not hold the whole conversation.
    pub(crate) fn append_failed(&self) -> bool {
        self.append_failed
    }

    pub(crate) fn record(&mut self, outcome: CompactionOutcome) {
        if self.compactions.len() < KEPT_OUTCOMES {
            self.compactions.push(outcome);
        } else {
            self.dropped_compactions += 1;
        }
    }
}

/// A session bound to an agent; dropping it unbinds the agent (the session's file stays).
#[derive(Debug)]
pub struct SessionBinding {
    pub(crate) shared: Arc<Mutex<Shared>>,
    pub(crate) auto: Option<AutoCompaction>,
    _subscription: Subscription,
}

/// Gives `agent` the history of `session`'s context (pi's `convertToLlm` of it; see
/// [`to_llm_messages`]) and appends every message the agent ends from now on to `session`.
///
/// The append runs in the agent's event listener, before the run goes on: when `prompt`
/// returns, every message of the run is in the file. An append that fails does not stop the
/// run; [`SessionBinding::prompt`] returns it as [`RunError::Append`] when the run ends, and
/// [`SessionBinding::take_errors`] gives it to a caller that ran the agent itself.
pub fn bind_agent(agent: &Agent, session: SessionManager) -> Result<SessionBinding, BindError> {
    let history = to_llm_messages(&session.build_session_context().messages)?;
    agent
        .replace_messages(history)
        .map_err(|e| BindError::Busy(e.to_string()))?;
    let shared = Arc::new(Mutex::new(Shared {
        session,
        errors: Vec::new(),
        dropped_errors: 0,
        append_failed: false,
        compactions: Vec::new(),
        dropped_compactions: 0,
    }));
    let listener = Arc::clone(&shared);
    let subscription = agent.subscribe(move |event| {
        let AgentEvent::MessageEnd { message } = event else {
            return;
        };
        let mut shared = lock(&listener);
        if let Err(e) = shared.session.append_message(message) {
            shared.append_failed = true;
            if shared.errors.len() < KEPT_ERRORS {
                shared.errors.push(e);
            } else {
                shared.dropped_errors += 1;
            }
        }
    });
    Ok(SessionBinding {
        shared,
        auto: None,
        _subscription: subscription,
    })
}

/// [`bind_agent`] with automatic compaction: `auto`'s hook (installed in the agent's options
/// with [`AutoCompaction::install`]) now compacts this session before a request when its
/// context is over the threshold and builds each request from it, and
/// [`SessionBinding::prompt`] recovers from a context overflow.
pub fn bind_agent_with(
    agent: &Agent,
    session: SessionManager,
    auto: &AutoCompaction,
) -> Result<SessionBinding, BindError> {
    let mut binding = bind_agent(agent, session)?;
    auto.attach(&binding.shared);
    binding.auto = Some(auto.clone());
    Ok(binding)
}

pub(crate) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl SessionBinding {
    /// Runs `f` with the session (to read it, or append an entry of another kind: a model
    /// change, a label, a compaction).
    pub fn with_session<R>(&self, f: impl FnOnce(&mut SessionManager) -> R) -> R {
        f(&mut lock(&self.shared).session)
    }

    /// The appends that failed since the last call, and how many more failed beyond those
    /// kept.
    pub fn take_errors(&self) -> (Vec<SessionError>, usize) {
        let mut shared = lock(&self.shared);
        let dropped = std::mem::take(&mut shared.dropped_errors);
        (std::mem::take(&mut shared.errors), dropped)
    }

    /// `Err(RunError::Append)` with the appends that failed since the last call (taken, as
    /// [`take_errors`](Self::take_errors) does); `Ok` when none did.
    pub fn check_appends(&self) -> Result<(), RunError> {
        let (errors, dropped) = self.take_errors();
        if errors.is_empty() && dropped == 0 {
            Ok(())
        } else {
            Err(RunError::Append { errors, dropped })
        }
    }

    /// The compactions attempted since the last call (the first 256 kept, the rest counted).
    pub fn take_compactions(&self) -> (Vec<CompactionOutcome>, usize) {
        let mut shared = lock(&self.shared);
        let dropped = std::mem::take(&mut shared.dropped_compactions);
        (std::mem::take(&mut shared.compactions), dropped)
    }

    /// Unbinds the agent and gives the session back.
    pub fn into_session(self) -> SessionManager {
        let SessionBinding {
            shared,
            auto,
            _subscription,
        } = self;
        drop(auto);
        drop(_subscription);
        match Arc::try_unwrap(shared) {
            Ok(mutex) => {
                mutex
                    .into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .session
            }
            // The listener was removed with the subscription; a run still holding its clone
            // ends with it. Until then, the session is handed over by replacing it.
            Err(shared) => {
                let cwd = lock(&shared).session.cwd().to_path_buf();
                std::mem::replace(&mut lock(&shared).session, SessionManager::in_memory(&cwd))
            }
        }
    }
}
