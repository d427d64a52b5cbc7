//! An agent bound to a session: the session's context becomes the agent's history, and every
//! message the agent ends (the prompt, each reply, each tool result) is appended to the
//! session as it ends, so a crash or a kill loses at most the message in flight.

use std::sync::{Arc, Mutex, MutexGuard};

use oxpi_agent_core::{Agent, AgentEvent, Subscription};

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

/// The appends that failed (the first ones kept, the rest counted).
const KEPT_ERRORS: usize = 16;

#[derive(Debug)]
struct Shared {
    session: SessionManager,
    errors: Vec<SessionError>,
    dropped_errors: usize,
}

/// A session bound to an agent; dropping it unbinds the agent (the session's file stays).
#[derive(Debug)]
pub struct SessionBinding {
    shared: Arc<Mutex<Shared>>,
    _subscription: Subscription,
}

/// Gives `agent` the history of `session`'s context (pi's `convertToLlm` of it; see
/// [`to_llm_messages`]) and appends every message the agent ends from now on to `session`.
///
/// The append runs in the agent's event listener, before the run goes on: when `prompt`
/// returns, every message of the run is in the file. An append that fails does not stop the
/// run; it is kept for [`SessionBinding::take_errors`].
pub fn bind_agent(agent: &Agent, session: SessionManager) -> Result<SessionBinding, BindError> {
    let history = to_llm_messages(&session.build_session_context().messages)?;
    agent
        .replace_messages(history)
        .map_err(|e| BindError::Busy(e.to_string()))?;
    let shared = Arc::new(Mutex::new(Shared {
        session,
        errors: Vec::new(),
        dropped_errors: 0,
    }));
    let listener = Arc::clone(&shared);
    let subscription = agent.subscribe(move |event| {
        let AgentEvent::MessageEnd { message } = event else {
            return;
        };
        let mut shared = lock(&listener);
        if let Err(e) = shared.session.append_message(message) {
            if shared.errors.len() < KEPT_ERRORS {
                shared.errors.push(e);
            } else {
                shared.dropped_errors += 1;
            }
        }
    });
    Ok(SessionBinding {
        shared,
        _subscription: subscription,
    })
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
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

    /// Unbinds the agent and gives the session back.
    pub fn into_session(self) -> SessionManager {
        let SessionBinding {
            shared,
            _subscription,
        } = self;
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
