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

    /// Takes and empties the inbox (called by the run's prompt).
    #[handler]
    async fn take(&self, ctx: ObjectContext<'_>) -> HandlerResult<Json<Taken>> {
        let inbox = ctx.get::<Json<Taken>>(INBOX_KEY).await?.unwrap_or_default();
        ctx.clear(INBOX_KEY);
        Ok(inbox)
    }
}
