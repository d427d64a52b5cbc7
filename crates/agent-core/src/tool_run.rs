//! One tool call, start to finish, as pi 1.6 runs it: abort check, lookup, `prepare_arguments`
//! and validation, `before_tool_call`, execution (timed), `after_tool_call` merged field by
//! field. The run loop uses it for the model's calls; [`run_tool_call`] offers it to
//! applications and to tools that call other tools (a sub-agent, a code runner).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use oxpi_ai::registry::panic_text;
use oxpi_ai::{AssistantMessage, ToolCall};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::hooks::{
    guarded, AfterToolCall, AfterToolCallFn, BeforeToolCall, BeforeToolCallFn, ExecuteToolFn,
    ToolCallDecision, ToolOutcome,
};
use crate::tool::{
    AgentToolHandle, AgentToolResult, ToolCallFailure, ToolInvocation, ToolUpdateFn,
};
use crate::turn_hooks::AgentContext;

/// The text of a call refused because the run was aborted before it started.
pub(crate) const NOT_EXECUTED_ABORTED: &str = "Tool call was not executed: the request was aborted";
/// The text of a call whose tool was cancelled while it ran.
pub(crate) const EXECUTION_ABORTED: &str = "Tool execution was aborted";
/// pi's text for a call blocked without a reason.
pub const BLOCKED_TEXT: &str = "Tool execution was blocked";

/// Where a call runs: the tools to look it up in, the reply it came from, the context and
/// hooks the hooks see, the cancel token.
pub(crate) struct CallSite<'a> {
    pub(crate) tools: &'a [AgentToolHandle],
    pub(crate) assistant: &'a AssistantMessage,
    pub(crate) context: &'a AgentContext,
    pub(crate) before: Option<&'a BeforeToolCallFn>,
    pub(crate) after: Option<&'a AfterToolCallFn>,
    pub(crate) execute_tool: Option<&'a ExecuteToolFn>,
    pub(crate) cancel: &'a CancellationToken,
}

/// A call checked and allowed, or refused with its outcome.
pub(crate) enum Prepared {
    /// Run the tool with these (validated, normalized) arguments.
    Run(AgentToolHandle, Map<String, Value>),
    Refused(ToolOutcome),
}

/// An error outcome with this text (pi's error results carry `details: {}`; oxpi's none).
pub(crate) fn error_outcome(text: impl Into<String>) -> ToolOutcome {
    ToolOutcome::error(AgentToolResult::text(text))
}

/// Decides whether a call may run: the run not aborted, the tool known, the arguments valid,
/// `before_tool_call` allowing it.
pub(crate) async fn prepare(site: &CallSite<'_>, call: &ToolCall) -> Prepared {
    if site.cancel.is_cancelled() {
        return Prepared::Refused(error_outcome(NOT_EXECUTED_ABORTED));
    }
    if let Some(error) = &call.arguments_error {
        return Prepared::Refused(error_outcome(error.clone()));
    }
    let Some(handle) = site.tools.iter().find(|t| t.name() == call.name) else {
        return Prepared::Refused(error_outcome(format!("Tool {} not found", call.name)));
    };
    let arguments = match handle.validate(&call.arguments) {
        Ok(arguments) => arguments,
        Err(e) => return Prepared::Refused(error_outcome(e.to_string())),
    };
    if let Some(before) = site.before {
        let seen = BeforeToolCall {
            assistant_message: site.assistant.clone(),
            tool_call: call.clone(),
            args: arguments.clone(),
            context: site.context.clone(),
            cancel: site.cancel.clone(),
        };
        let decided = tokio::select! {
            biased;
            _ = site.cancel.cancelled() => {
                return Prepared::Refused(error_outcome(NOT_EXECUTED_ABORTED));
            }
            decided = guarded("before_tool_call", before(seen)) => decided,
        };
        match decided {
            Ok(ToolCallDecision::Allow) => {}
            Ok(ToolCallDecision::Block { reason, terminate }) => {
                let reason = if reason.is_empty() {
                    BLOCKED_TEXT.to_string()
                } else {
                    reason
                };
                let mut outcome = error_outcome(reason);
                outcome.result.terminate = terminate;
                return Prepared::Refused(outcome);
            }
            Err(panic) => return Prepared::Refused(error_outcome(panic)),
        }
    }
    Prepared::Run(handle.clone(), arguments)
}

/// Runs an allowed call (timed: `duration_ms` covers the tool only), then `after_tool_call`.
pub(crate) async fn execute(
    site: &CallSite<'_>,
    handle: &AgentToolHandle,
    call: &ToolCall,
    arguments: Map<String, Value>,
    on_update: ToolUpdateFn,
) -> ToolOutcome {
    let cancel = site.cancel;
    let execution = match site.execute_tool {
        Some(execute_tool) => execute_tool(ToolInvocation {
            tool: handle.clone(),
            tool_call_id: call.id.clone(),
            args: arguments.clone(),
            cancel: cancel.child_token(),
            on_update,
        }),
        None => handle
            .execute_validated(&call.id, arguments.clone(), cancel.child_token(), on_update)
            .boxed(),
    };
    let execution = AssertUnwindSafe(execution).catch_unwind();
    let started = tokio::time::Instant::now();
    // Cancellation wins over a result that is ready at the same moment, so an aborted run
    // always reports the abort.
    let mut outcome = tokio::select! {
        biased;
        _ = cancel.cancelled() => error_outcome(EXECUTION_ABORTED),
        result = execution => match result {
            Ok(Ok(result)) => {
                let is_error = result.is_error;
                ToolOutcome::new(result, is_error)
            }
            Ok(Err(ToolCallFailure::Tool(e))) => ToolOutcome::error(AgentToolResult {
                details: e.details,
                ..AgentToolResult::text(e.message)
            }),
            Ok(Err(ToolCallFailure::Validation(e))) => error_outcome(e.to_string()),
            Err(panic) => error_outcome(format!(
                "Tool \"{}\" panicked: {}",
                call.name,
                panic_text(&*panic)
            )),
        },
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    outcome.duration_ms = Some(duration_ms);
    let Some(after) = site.after else {
        return outcome;
    };
    let seen = AfterToolCall {
        assistant_message: site.assistant.clone(),
        tool_call: call.clone(),
        args: arguments,
        result: outcome.result.clone(),
        is_error: outcome.is_error,
        context: site.context.clone(),
        cancel: cancel.clone(),
    };
    // The hook may be there to redact the result: on abort the unreviewed result is not kept.
    let reviewed = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            let mut aborted = error_outcome(EXECUTION_ABORTED);
            aborted.duration_ms = Some(duration_ms);
            return aborted;
        }
        reviewed = guarded("after_tool_call", after(seen)) => reviewed,
    };
    let mut outcome = match reviewed {
        Ok(Some(changes)) => changes.apply(outcome),
        Ok(None) => outcome,
        Err(panic) => error_outcome(panic),
    };
    outcome.duration_ms = Some(duration_ms);
    outcome
}

/// What [`run_tool_call`] needs (pi's `runToolCall` options): the tools to look the call up
/// in, the assistant message and context its hooks see, the cancel token, a receiver for
/// progress, and the hooks. Start from [`RunToolCallOptions::new`], or
/// [`Agent::tool_call_options`](crate::Agent::tool_call_options) for an agent's tools, hooks
/// and history.
#[derive(Clone)]
#[non_exhaustive]
pub struct RunToolCallOptions {
    /// The tools to look the call up in.
    pub tools: Vec<AgentToolHandle>,
    /// The assistant message the hooks see as the call's origin.
    pub assistant_message: AssistantMessage,
    /// The context the hooks see.
    pub context: AgentContext,
    /// Cancels the call (a cancelled token refuses it before anything runs).
    pub cancel: CancellationToken,
    /// Receives the tool's partial results.
    pub on_update: Option<ToolUpdateFn>,
    /// Asked before the tool runs.
    pub before_tool_call: Option<BeforeToolCallFn>,
    /// Reviews the result.
    pub after_tool_call: Option<AfterToolCallFn>,
    /// Runs the tool in place of a direct call (see [`ExecuteToolFn`]).
    pub execute_tool: Option<ExecuteToolFn>,
}

impl std::fmt::Debug for RunToolCallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunToolCallOptions")
            .field("tools", &self.tools)
            .field("before_tool_call", &self.before_tool_call.is_some())
            .field("after_tool_call", &self.after_tool_call.is_some())
            .finish_non_exhaustive()
    }
}

impl RunToolCallOptions {
    /// These tools, the given assistant message, an empty context, no hooks.
    pub fn new(tools: Vec<AgentToolHandle>, assistant_message: AssistantMessage) -> Self {
        Self {
            context: AgentContext::new(Vec::new(), tools.clone()),
            tools,
            assistant_message,
            cancel: CancellationToken::new(),
            on_update: None,
            before_tool_call: None,
            after_tool_call: None,
            execute_tool: None,
        }
    }

    /// Sets the context the hooks see.
    pub fn with_context(mut self, context: AgentContext) -> Self {
        self.context = context;
        self
    }

    /// Sets the cancel token (e.g. the calling tool's own).
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Receives the tool's partial results.
    pub fn with_on_update(
        mut self,
        on_update: impl Fn(AgentToolResult) + Send + Sync + 'static,
    ) -> Self {
        self.on_update = Some(Arc::new(on_update));
        self
    }

    /// Sets the hook asked before the tool runs.
    pub fn with_before_tool_call(mut self, before: Option<BeforeToolCallFn>) -> Self {
        self.before_tool_call = before;
        self
    }

    /// Sets the hook that reviews the result.
    pub fn with_after_tool_call(mut self, after: Option<AfterToolCallFn>) -> Self {
        self.after_tool_call = after;
        self
    }

    /// Sets the seam that runs the tool (see [`ExecuteToolFn`]).
    pub fn with_execute_tool(mut self, execute_tool: Option<ExecuteToolFn>) -> Self {
        self.execute_tool = execute_tool;
        self
    }
}

/// Runs one tool call through the same steps as a call of the model (pi's `runToolCall`):
/// abort check, lookup, `prepare_arguments`, validation, `before_tool_call`, execution,
/// `after_tool_call`. No events, no messages; every failure comes back as an error outcome
/// (`duration_ms` is set only when the tool ran).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use oxpi_agent_core::{run_tool_call, RunToolCallOptions};
/// use oxpi_ai::{AssistantMessage, ToolCall};
///
/// let reply = AssistantMessage::empty("faux", "faux", "faux-model");
/// let call = ToolCall::new("call_1", "nope", serde_json::Map::new());
/// let outcome = run_tool_call(&call, RunToolCallOptions::new(Vec::new(), reply)).await;
/// assert!(outcome.is_error);
/// assert_eq!(outcome.duration_ms, None);
/// # });
/// ```
pub async fn run_tool_call(call: &ToolCall, options: RunToolCallOptions) -> ToolOutcome {
    let site = CallSite {
        tools: &options.tools,
        assistant: &options.assistant_message,
        context: &options.context,
        before: options.before_tool_call.as_ref(),
        after: options.after_tool_call.as_ref(),
        execute_tool: options.execute_tool.as_ref(),
        cancel: &options.cancel,
    };
    match prepare(&site, call).await {
        Prepared::Refused(outcome) => outcome,
        Prepared::Run(handle, arguments) => {
            let on_update = options
                .on_update
                .clone()
                .unwrap_or_else(|| Arc::new(|_| {}));
            execute(&site, &handle, call, arguments, on_update).await
        }
    }
}
