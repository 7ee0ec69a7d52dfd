//! A value that tasks can wait on, waking waiters in a fixed order.
//!
//! `tokio::sync::watch` spreads its waiters over several queues chosen by a
//! per-thread random generator, so under a seeded simulator the order in
//! which two waiters wake could change from one run of a seed to the next.
//! This one keeps a single queue in registration order.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A value behind a lock, plus the tasks waiting for it to change.
#[derive(Debug)]
pub(crate) struct Watched<T> {
    inner: Mutex<Inner<T>>,
}

#[derive(Debug)]
struct Inner<T> {
    value: T,
    next_waiter: u64,
    /// (waiter id, waker), in registration order.
    waiters: Vec<(u64, Waker)>,
}

impl<T> Watched<T> {
    pub fn new(value: T) -> Self {
        let inner = Inner {
            value,
            next_waiter: 0,
            waiters: Vec::new(),
        };
        Self {
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // Nothing panics while holding the lock except a caller's closure,
        // and that panic is the bug worth seeing, not the poison.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn read<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&self.lock().value)
    }

    /// Changes the value; if `f` reports a change, wakes every waiter.
    pub fn modify_if(&self, f: impl FnOnce(&mut T) -> bool) {
        let wakers = {
            let mut inner = self.lock();
            if !f(&mut inner.value) {
                return;
            }
            std::mem::take(&mut inner.waiters)
        };
        for (_, waker) in wakers {
            waker.wake();
        }
    }

    pub fn modify(&self, f: impl FnOnce(&mut T)) {
        self.modify_if(|value| {
            f(value);
            true
        });
    }

    /// Resolves once `done` holds for the value (checked at once first).
    pub fn wait_until<F: FnMut(&T) -> bool>(&self, done: F) -> WaitUntil<'_, T, F> {
        WaitUntil {
            watched: self,
            done,
            id: None,
        }
    }
}

/// The future of [`Watched::wait_until`].
pub(crate) struct WaitUntil<'a, T, F> {
    watched: &'a Watched<T>,
    done: F,
    id: Option<u64>,
}

// No field is ever pinned (the closure is only called through `&mut`), so
// the future may move freely whatever the closure is.
impl<T, F> Unpin for WaitUntil<'_, T, F> {}

impl<T, F: FnMut(&T) -> bool> Future for WaitUntil<'_, T, F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut inner = this.watched.lock();
        if (this.done)(&inner.value) {
            if let Some(id) = this.id.take() {
                inner.waiters.retain(|(waiter, _)| *waiter != id);
            }
            return Poll::Ready(());
        }
        let id = *this.id.get_or_insert_with(|| {
            inner.next_waiter += 1;
            inner.next_waiter
        });
        match inner.waiters.iter_mut().find(|(waiter, _)| *waiter == id) {
            Some((_, waker)) => waker.clone_from(cx.waker()),
            None => inner.waiters.push((id, cx.waker().clone())),
        }
        Poll::Pending
    }
}

impl<T, F> Drop for WaitUntil<'_, T, F> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.watched
                .lock()
                .waiters
                .retain(|(waiter, _)| *waiter != id);
        }
    }
}
