//! pi's sessions for oxpi: the JSONL files pi-coding-agent 1.6 writes
//! (`~/.pi/agent/sessions/--<cwd>--/<timestamp>_<id>.jsonl`), read, migrated from v1 and v2,
//! and appended to, so a session moves between pi and oxpi.
//!
//! A file is a header line and one entry per line; entries form a tree through `id` and
//! `parentId`, and a leaf pointer says where the next entry goes. [`SessionManager`] creates,
//! opens, continues, forks and branches sessions; [`SessionManager::build_session_context`]
//! gives what a request is built from (the latest compaction's summary and the messages it
//! kept), as pi's `buildSessionContext`; [`to_llm_messages`] turns that into `oxpi_ai`
//! messages.
//!
//! Entries keep their lines as read: every field, every message role and every entry type oxpi
//! does not know are written back as they were read. A file's bytes are read once and shared by
//! its entries; each line's `type`, `id`, `parentId`, `timestamp` and message role are read in
//! one pass, and its JSON object is built only when asked for ([`Entry::as_json`]). A context's
//! messages share their entries' text ([`ContextMessage`]), and [`to_llm_messages`] reads the
//! typed messages straight from it. Typed access to one message is [`Entry::message`].
//!
//! ```
//! use oxpi_session::{session_dir_for, to_llm_messages, SessionManager};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let tmp = tempfile::tempdir()?;
//! # let (agent_dir, cwd) = (tmp.path().join("agent"), tmp.path().join("project"));
//! // pi's layout: <agent dir>/sessions/--<cwd>--/<timestamp>_<id>.jsonl
//! let dir = session_dir_for(&agent_dir, &cwd);
//! let mut session = SessionManager::continue_recent(&cwd, &dir)?; // the latest, or a new one
//! for issue in session.load_issues() {
//!     eprintln!("{issue}"); // e.g. a last line torn by a crash
//! }
//! session.append_message(&oxpi_ai::Message::user("go on"))?; // on disk when it returns
//! drop(session);
//! // Later, or in another process: the same session, read back from its file.
//! let session = SessionManager::continue_recent(&cwd, &dir)?;
//! let messages = to_llm_messages(&session.build_session_context().messages)?;
//! assert_eq!(messages.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! A resumed session with automatic compaction and overflow recovery (the README's example):
//!
//! ```no_run
//! use oxpi_agent_core::{Agent, AgentOptions};
//! use oxpi_session::{bind_agent_with, AutoCompaction, ModelSummarizer, SessionManager};
//!
//! async fn resume(model: oxpi_ai::Model, file: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
//!     let session = SessionManager::open(file, None)?;
//!     let auto = AutoCompaction::new(&model, ModelSummarizer::new(model.clone()));
//!     let agent = Agent::new(auto.install(AgentOptions::new(model)));
//!     let binding = bind_agent_with(&agent, session, &auto)?; // the agent gets the session's context
//!     binding.prompt(&agent, "go on").await?; // each message appended as it ends
//!     Ok(())
//! }
//! ```

mod appends;
mod auto;
mod bind;
mod compaction;
mod context;
mod entry;
mod error;
mod file;
mod file_ops;
mod head;
mod ids;
mod list;
mod llm;
mod manager;
mod message;
mod migrate;
mod recovery;
mod summary;
mod text;
mod time;
mod tree;

pub use appends::CompactionRecord;
pub use auto::{AutoCompaction, CompactionOutcome, CompactionReason};
pub use bind::{bind_agent, bind_agent_with, BindError, RunError, SessionBinding};
pub use compaction::{
    compact, context_tokens, estimate_tokens, prepare_compaction, should_compact, CompactError,
    CompactionPreparation, CompactionSettings,
};
pub use context::{
    SessionContext, BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
};
pub use entry::{Entry, EntryType, SessionHeader, CURRENT_SESSION_VERSION};
pub use error::{Result, SessionError};
pub use file::{LoadIssue, LoadIssueKind, MAX_SESSION_FILE_BYTES};
pub use file_ops::FileOps;
pub use list::{
    default_agent_dir, list_sessions, most_recent_session, session_dir_for, SessionInfo,
};
pub use llm::{to_llm_messages, ConvertError};
pub use manager::{NewSessionOptions, SessionManager};
pub use message::ContextMessage;
pub use summary::{
    compact_with, serialize_conversation, CompactionSummary, ModelSummarizer, SummarizeError,
    Summarizer, SUMMARY_SYSTEM_PROMPT,
};
