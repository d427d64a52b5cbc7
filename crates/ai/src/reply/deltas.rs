//! The per-delta path of a decoder that can skip a future: deltas applied at once into the
//! sink's batch (`*_now`, locking it per delta), or a run of them under one lock (`*_into`,
//! with a batch from [`ReplyBuilder::held_batch`]). Each does what the async
//! [`text`](ReplyBuilder::text), [`thinking`](ReplyBuilder::thinking) or
//! [`tool_call_delta`](ReplyBuilder::tool_call_delta) does with the same delta, or hands the
//! delta back with nothing changed.

use std::borrow::Cow;

use super::{Held, HeldBatch, OpenBlock, ReplyBuilder};
use crate::event::AssistantMessageEvent;
use crate::types::content::AssistantContent;
use crate::types::message::AssistantMessage;

impl ReplyBuilder {
    /// What [`text`](Self::text) does when that needs no waiting: a non-empty `delta` for the
    /// open text block, with room in the sink's batch. Hands `delta` back, nothing changed,
    /// otherwise (then call `text`).
    pub(crate) fn text_now<'a>(&mut self, delta: Cow<'a, str>) -> Result<(), Cow<'a, str>> {
        self.prose_now(delta, false)
    }

    /// [`thinking`](Self::thinking) when that needs no waiting, as [`text_now`](Self::text_now).
    pub(crate) fn thinking_now<'a>(&mut self, delta: Cow<'a, str>) -> Result<(), Cow<'a, str>> {
        self.prose_now(delta, true)
    }

    fn prose_now<'a>(&mut self, delta: Cow<'a, str>, thinking: bool) -> Result<(), Cow<'a, str>> {
        // (An empty delta is no event, whatever the sink.) The open block first: no lock for a
        // delta that cannot be applied here.
        if delta.is_empty() {
            return Ok(());
        }
        if prose_index(&self.open, thinking).is_none() {
            return Err(delta);
        }
        let Self {
            sink,
            open,
            message,
            ..
        } = self;
        match sink.held() {
            Some(mut held) => push_prose(open, message, &mut held, delta, thinking),
            None => Err(delta),
        }
    }

    /// [`tool_call_delta`](Self::tool_call_delta) when that needs no waiting (a tool call is
    /// open, the sink's batch has room), as [`text_now`](Self::text_now).
    pub(crate) fn tool_call_delta_now<'a>(
        &mut self,
        delta: Cow<'a, str>,
    ) -> Result<(), Cow<'a, str>> {
        if delta.is_empty() {
            return Ok(());
        }
        if !matches!(self.open, Some(OpenBlock::ToolCall { .. })) {
            return Err(delta);
        }
        let Self { sink, open, .. } = self;
        match sink.held() {
            Some(mut held) => push_tool_call_delta(open, &mut held, delta),
            None => Err(delta),
        }
    }

    /// The sink's batch, for a run of deltas applied with the `*_into` methods under one lock;
    /// `None` when the sink does not batch or the stream has ended.
    pub(crate) fn held_batch(&self) -> Option<HeldBatch> {
        self.sink.held_batch()
    }

    /// [`text_now`](Self::text_now) into a batch this builder's sink lent
    /// ([`held_batch`](Self::held_batch)).
    #[inline]
    pub(crate) fn text_into<'a>(
        &mut self,
        held: &mut Held<'_>,
        delta: Cow<'a, str>,
    ) -> Result<(), Cow<'a, str>> {
        push_prose(&self.open, &mut self.message, held, delta, false)
    }

    /// [`thinking_now`](Self::thinking_now) into a lent batch, as [`text_into`](Self::text_into).
    #[inline]
    pub(crate) fn thinking_into<'a>(
        &mut self,
        held: &mut Held<'_>,
        delta: Cow<'a, str>,
    ) -> Result<(), Cow<'a, str>> {
        push_prose(&self.open, &mut self.message, held, delta, true)
    }

    /// [`tool_call_delta_now`](Self::tool_call_delta_now) into a lent batch, as
    /// [`text_into`](Self::text_into).
    #[inline]
    pub(crate) fn tool_call_delta_into<'a>(
        &mut self,
        held: &mut Held<'_>,
        delta: Cow<'a, str>,
    ) -> Result<(), Cow<'a, str>> {
        push_tool_call_delta(&mut self.open, held, delta)
    }
}

/// The index of the open block a text (or, when `thinking`, a thinking) delta goes to.
fn prose_index(open: &Option<OpenBlock>, thinking: bool) -> Option<usize> {
    match (open, thinking) {
        (Some(OpenBlock::Text(index)), false) | (Some(OpenBlock::Thinking(index)), true) => {
            Some(*index)
        }
        _ => None,
    }
}

/// Appends a text (or thinking) delta to the open block of `message` and holds its event.
#[inline]
fn push_prose<'a>(
    open: &Option<OpenBlock>,
    message: &mut AssistantMessage,
    held: &mut Held<'_>,
    delta: Cow<'a, str>,
    thinking: bool,
) -> Result<(), Cow<'a, str>> {
    if delta.is_empty() {
        return Ok(());
    }
    let Some(index) = prose_index(open, thinking) else {
        return Err(delta);
    };
    if !held.has_room() {
        return Err(delta);
    }
    match message.content.get_mut(index) {
        Some(AssistantContent::Text(t)) if !thinking => t.text.push_str(&delta),
        Some(AssistantContent::Thinking(t)) if thinking => t.thinking.push_str(&delta),
        _ => {}
    }
    let delta = delta.into();
    held.push(if thinking {
        AssistantMessageEvent::ThinkingDelta {
            content_index: index,
            delta,
        }
    } else {
        AssistantMessageEvent::TextDelta {
            content_index: index,
            delta,
        }
    });
    Ok(())
}

/// Appends raw argument text to the open tool call and holds its event.
#[inline]
fn push_tool_call_delta<'a>(
    open: &mut Option<OpenBlock>,
    held: &mut Held<'_>,
    delta: Cow<'a, str>,
) -> Result<(), Cow<'a, str>> {
    if delta.is_empty() {
        return Ok(());
    }
    let Some(OpenBlock::ToolCall { index, raw }) = open else {
        return Err(delta);
    };
    if !held.has_room() {
        return Err(delta);
    }
    raw.push_str(&delta);
    held.push(AssistantMessageEvent::ToolcallDelta {
        content_index: *index,
        delta: delta.into(),
    });
    Ok(())
}
