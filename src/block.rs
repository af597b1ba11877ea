//! The sync API on top of the async one: one readback path and one device-opening path, which
//! the sync forms run to completion here.
//!
//! Natively they block the calling thread. In a browser nothing may block: a future that does
//! not complete at its first poll (a WebGPU readback, an adapter request) makes the sync form
//! return [`crate::Error::WouldBlock`], so the cpu backend's sync forms still work there.

use std::future::Future;

/// Runs `f` to completion, or `None` where it would have to block (only in a browser).
#[cfg(not(target_family = "wasm"))]
pub(crate) fn block_on<F: Future>(f: F) -> Option<F::Output> {
    Some(pollster::block_on(f))
}

/// Runs `f` to completion, or `None` where it would have to block (only in a browser).
#[cfg(target_family = "wasm")]
pub(crate) fn block_on<F: Future>(f: F) -> Option<F::Output> {
    use std::task::{Context, Poll, Waker};
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// [`block_on`] for a fallible future: `op`'s [`crate::Error::WouldBlock`] where it would block.
pub(crate) fn block_on_result<T>(op: &'static str, f: impl Future<Output = crate::Result<T>>) -> crate::Result<T> {
    block_on(f).unwrap_or(Err(crate::Error::WouldBlock { op }))
}
