//! Where a provider's events go: [`EventSink`] (the channel to the consumer, the one terminal
//! event, the batch of held deltas) and [`delivering`], which hands the batch over whenever
//! the provider waits.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context as TaskContext, Poll};

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::mpsc;

use crate::event::AssistantMessageEvent;

/// Where a provider sends its events. Dropping the consumer closes it; sends then do nothing.
/// After the first terminal event (`done` or `error`) every later event is dropped, so a stream
/// never has two.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: mpsc::Sender<Vec<AssistantMessageEvent>>,
    terminal_sent: Arc<AtomicBool>,
    deferred_terminal: Option<Arc<Mutex<Option<AssistantMessageEvent>>>>,
    held: Option<Arc<Mutex<Vec<AssistantMessageEvent>>>>,
}

/// Most events a batching sink holds before the provider waits for the consumer to take them.
const MAX_HELD: usize = 256;

/// Takes the held events, leaving room for twice as many (batches follow the network reads,
/// which grow), so the holding vector is not regrown event by event.
fn take_sized(held: &mut Vec<AssistantMessageEvent>) -> Vec<AssistantMessageEvent> {
    let room = (held.len() * 2).clamp(16, MAX_HELD);
    std::mem::replace(held, Vec::with_capacity(room))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl EventSink {
    pub(crate) fn new(tx: mpsc::Sender<Vec<AssistantMessageEvent>>) -> Self {
        Self {
            tx,
            terminal_sent: Arc::new(AtomicBool::new(false)),
            deferred_terminal: None,
            held: None,
        }
    }

    /// The sink the registry hands to a provider. It holds the terminal event back until
    /// [`flush_terminal`](Self::flush_terminal): the registry sends it once the provider's future
    /// has finished and dropped its request state, so a consumer that sees `done` can append to
    /// the shared history without a copy.
    ///
    /// It also batches: events are held until the provider's task waits for something (see
    /// [`delivering`]) or [`MAX_HELD`] are held, then handed over as one batch. A consumer on
    /// another thread is then woken once per network read instead of once per event, which
    /// was most of the cost of a stream of small deltas. Nothing is held past the provider's
    /// next wait, so no event is delayed behind the network.
    pub(crate) fn deferring(&self) -> Self {
        Self {
            deferred_terminal: Some(Arc::default()),
            held: Some(Arc::default()),
            ..self.clone()
        }
    }

    fn take_held(&self) -> Vec<AssistantMessageEvent> {
        self.held
            .as_ref()
            .map(|held| take_sized(&mut lock(held)))
            .unwrap_or_default()
    }

    /// Hands the held events to the consumer, waiting for room in the channel.
    pub(crate) async fn flush(&self) {
        let batch = self.take_held();
        if !batch.is_empty() {
            let _ = self.tx.send(batch).await;
        }
    }

    /// Hands the held events over if the channel has room now; `true` when none are left.
    fn try_flush(&self) -> bool {
        let Some(held) = &self.held else {
            return true;
        };
        let mut held = lock(held);
        if held.is_empty() {
            return true;
        }
        match self.tx.try_send(take_sized(&mut held)) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => true,
            Err(mpsc::error::TrySendError::Full(batch)) => {
                *held = batch;
                false
            }
        }
    }

    /// Sends the held-back terminal event, if any.
    pub(crate) async fn flush_terminal(&self) {
        let held = self
            .deferred_terminal
            .as_ref()
            .and_then(|slot| slot.lock().ok().and_then(|mut s| s.take()));
        if let Some(event) = held {
            let _ = self.tx.send(vec![event]).await;
        }
    }

    /// Sends one event; `false` when the consumer has gone away or the stream already ended.
    pub async fn send(&self, event: AssistantMessageEvent) -> bool {
        if self.terminal_sent() {
            tracing::debug!("event after the terminal event dropped");
            return false;
        }
        if event.is_terminal() {
            self.terminal_sent.store(true, Ordering::SeqCst);
            if let Some(slot) = &self.deferred_terminal {
                if let Ok(mut slot) = slot.lock() {
                    *slot = Some(event);
                    return !self.tx.is_closed();
                }
            }
        }
        if let Some(held) = &self.held {
            let count = {
                let mut held = lock(held);
                held.push(event);
                held.len()
            };
            if count >= MAX_HELD {
                self.flush().await;
            }
            return !self.tx.is_closed();
        }
        self.tx.send(vec![event]).await.is_ok()
    }

    /// The batch of held events, locked, when this sink batches and the stream has not ended
    /// (what [`held_batch`](Self::held_batch) lends, borrowed for one delta).
    pub(super) fn held(&self) -> Option<Held<'_>> {
        let held = self.held.as_ref()?;
        (!self.terminal_sent()).then(|| Held(lock(held)))
    }

    /// The batch of held events, for a run of deltas pushed under one lock (see
    /// [`HeldBatch`]), when this sink batches and the stream has not ended.
    pub(super) fn held_batch(&self) -> Option<HeldBatch> {
        let held = self.held.as_ref()?;
        (!self.terminal_sent()).then(|| HeldBatch(Arc::clone(held)))
    }

    /// Sends without waiting (used where no runtime may exist); `false` if it could not.
    pub(crate) fn try_send(&self, event: AssistantMessageEvent) -> bool {
        if self.terminal_sent() {
            return false;
        }
        if event.is_terminal() {
            self.terminal_sent.store(true, Ordering::SeqCst);
        }
        self.tx.try_send(vec![event]).is_ok()
    }

    /// True once `done` or `error` was sent.
    pub fn terminal_sent(&self) -> bool {
        self.terminal_sent.load(Ordering::SeqCst)
    }

    /// True when the consumer has gone away.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

type Reservation = BoxFuture<
    'static,
    Result<mpsc::OwnedPermit<Vec<AssistantMessageEvent>>, mpsc::error::SendError<()>>,
>;

/// A sink's batch of held events, taken to push a run of deltas under one
/// [`lock`](Self::lock) instead of one per delta (an uncontended lock still costs two atomic
/// operations, a tenth of a small delta's cost). Only the provider's task pushes to and takes
/// from the batch, so holding it for the run keeps nobody waiting; take it after the last
/// `send` of the run's events' kind could have ended the stream (deltas never do).
pub(crate) struct HeldBatch(Arc<Mutex<Vec<AssistantMessageEvent>>>);

/// A locked [`HeldBatch`].
pub(crate) struct Held<'a>(MutexGuard<'a, Vec<AssistantMessageEvent>>);

impl HeldBatch {
    /// Locks the batch.
    pub(crate) fn lock(&self) -> Held<'_> {
        Held(lock(&self.0))
    }
}

impl Held<'_> {
    /// Whether one more event fits before the provider must wait for the consumer: a delta
    /// pushed then is what [`EventSink::send`] does with it, without making and polling
    /// `send`'s future (the provider's per-delta path).
    #[inline]
    pub(crate) fn has_room(&self) -> bool {
        self.0.len() + 1 < MAX_HELD
    }

    /// Holds `event` (a delta) for the consumer; only after [`has_room`](Self::has_room) said
    /// there is room.
    #[inline]
    pub(super) fn push(&mut self, event: AssistantMessageEvent) {
        self.0.push(event);
    }
}

/// Runs a provider's future, handing the events its [`EventSink::deferring`] sink holds to the
/// consumer whenever the future waits (and, when the channel is full, as soon as it has room).
pub(crate) fn delivering(
    work: BoxFuture<'static, ()>,
    sink: EventSink,
) -> impl Future<Output = ()> + Send + 'static {
    Delivering {
        work,
        sink,
        waiting: None,
    }
}

struct Delivering {
    work: BoxFuture<'static, ()>,
    sink: EventSink,
    waiting: Option<Reservation>,
}

impl Delivering {
    fn deliver(&mut self, cx: &mut TaskContext<'_>) {
        loop {
            if let Some(waiting) = &mut self.waiting {
                match waiting.poll_unpin(cx) {
                    Poll::Pending => return,
                    Poll::Ready(Ok(permit)) => {
                        self.waiting = None;
                        let batch = self.sink.take_held();
                        if !batch.is_empty() {
                            permit.send(batch);
                        }
                    }
                    Poll::Ready(Err(_)) => {
                        self.waiting = None;
                        self.sink.take_held();
                        return;
                    }
                }
            }
            if self.sink.try_flush() {
                return;
            }
            self.waiting = Some(self.sink.tx.clone().reserve_owned().boxed());
        }
    }
}

impl Future for Delivering {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let this = self.get_mut();
        let done = this.work.poll_unpin(cx);
        if done.is_pending() {
            this.deliver(cx);
        }
        done
    }
}
