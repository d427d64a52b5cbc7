//! [`RunInbox`]: a run's steering messages and abort requests, a virtual object of its own
//! (`OxpiAgentInbox`, same key as the run). `OxpiAgent`'s `steer` and `abort` are shared
//! handlers that send here, so they are accepted while a `prompt` holds the run; the prompt
//! takes the inbox through a journaled call when it starts, before each model turn and after
//! each tool call, so a replay sees the same messages at the same points.

use oxpi_agent_core::oxpi_ai::Message;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use crate::object::PromptRequest;

const INBOX_KEY: &str = "inbox";
const APPROVALS_KEY: &str = "approvals";

/// A call waiting for approval: its id, tool, arguments, and the awakeable that resumes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The call's arguments.
    pub arguments: serde_json::Value,
    /// The Restate awakeable the run waits on.
    pub awakeable_id: String,
}

/// A person's answer to a pending call (`approve` / `deny`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ApprovalAnswer {
    /// The call's id.
    pub call_id: String,
    /// Sent to the model when denied (empty: "Tool call was denied").
    #[serde(default)]
    pub reason: String,
}

/// What the run's awakeable is resolved with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Decision {
    pub(crate) approved: bool,
    #[serde(default)]
    pub(crate) reason: String,
}

/// What the inbox held when taken.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Taken {
    /// Steering messages, oldest first.
    #[serde(default)]
    pub(crate) steering: Vec<Message>,
    /// An abort was asked.
    #[serde(default)]
    pub(crate) abort: bool,
}

/// The inbox object (one of [`DurableAgent::definitions`](crate::DurableAgent::definitions)).
#[derive(Debug, Clone, Copy, Default)]
pub struct RunInbox;

#[restate_sdk::object(name = "OxpiAgentInbox")]
impl RunInbox {
    /// Queues steering messages.
    #[handler]
    async fn steer(&self, ctx: ObjectContext<'_>, input: Json<PromptRequest>) -> HandlerResult<()> {
        // Timestamps journaled: a retried `steer` queues the same messages.
        let messages: Vec<Message> = ctx
            .run(|| async move { Ok(Json(input.into_inner().into_messages())) })
            .name("messages")
            .await?
            .into_inner();
        let mut inbox = ctx
            .get::<Json<Taken>>(INBOX_KEY)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        inbox.steering.extend(messages);
        ctx.set(INBOX_KEY, Json(inbox));
        Ok(())
    }

    /// Asks the running prompt to stop.
    #[handler]
    async fn abort(&self, ctx: ObjectContext<'_>) -> HandlerResult<()> {
        let mut inbox = ctx
            .get::<Json<Taken>>(INBOX_KEY)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        inbox.abort = true;
        ctx.set(INBOX_KEY, Json(inbox));
        Ok(())
    }

    /// Registers a call waiting for approval (called by the run's prompt).
    #[handler]
    async fn wait_approval(
        &self,
        ctx: ObjectContext<'_>,
        pending: Json<PendingApproval>,
    ) -> HandlerResult<()> {
        let mut all = approvals(&ctx).await?;
        all.push(pending.into_inner());
        ctx.set(APPROVALS_KEY, Json(all));
        Ok(())
    }

    /// The calls waiting for approval.
    #[handler]
    async fn pending(&self, ctx: ObjectContext<'_>) -> HandlerResult<Json<Vec<PendingApproval>>> {
        Ok(Json(approvals(&ctx).await?))
    }

    /// Answers a pending call: resolves the awakeable its run waits on. A 404 when no call of
    /// that id waits.
    #[handler]
    async fn answer(
        &self,
        ctx: ObjectContext<'_>,
        answer: Json<(bool, ApprovalAnswer)>,
    ) -> HandlerResult<()> {
        let (approved, answer) = answer.into_inner();
        let mut all = approvals(&ctx).await?;
        let Some(at) = all.iter().position(|p| p.call_id == answer.call_id) else {
            return Err(TerminalError::new(format!(
                "no approval pending for call {}",
                answer.call_id
            ))
            .with_code(404)
            .into());
        };
        let pending = all.remove(at);
        ctx.set(APPROVALS_KEY, Json(all));
        ctx.resolve_awakeable(
            &pending.awakeable_id,
            Json(Decision {
                approved,
                reason: answer.reason,
            }),
        );
        Ok(())
    }

    /// Takes and empties the inbox (called by the run's prompt).
    #[handler]
    async fn take(&self, ctx: ObjectContext<'_>) -> HandlerResult<Json<Taken>> {
        let inbox = ctx.get::<Json<Taken>>(INBOX_KEY).await?.unwrap_or_default();
        ctx.clear(INBOX_KEY);
        Ok(inbox)
    }
}

async fn approvals(ctx: &ObjectContext<'_>) -> Result<Vec<PendingApproval>, TerminalError> {
    Ok(ctx
        .get::<Json<Vec<PendingApproval>>>(APPROVALS_KEY)
        .await?
        .map(Json::into_inner)
        .unwrap_or_default())
}
