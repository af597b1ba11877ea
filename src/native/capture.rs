//! Plans on the native backend: the stream captured into a graph (`crate::plan`), the blocks
//! it may touch pinned in the allocator while the graph lives.

use super::gate;
use super::runtime::Runtime;
use super::{Inner, NativeBackend};
use crate::backend::Graph;
use crate::{Error, Result};
use std::sync::Arc;

/// A runtime graph, its launches, and the allocator pin that goes with it.
struct NativeGraph<R: Runtime> {
    graph: R::Graph,
    launches: u64,
    bound: u64,
    owner: Arc<Inner<R>>,
}

impl<R: Runtime> Drop for NativeGraph<R> {
    fn drop(&mut self) {
        self.owner.alloc.unpin(self.bound);
    }
}

impl<R: Runtime> NativeBackend<R> {
    /// `Error::Capture` for `what` (a wait) while a capture is under way.
    pub(crate) fn refuse_in_capture(&self, what: &str) -> Result<()> {
        if self.0.rt.capturing() {
            return Err(Error::Capture {
                msg: format!("{what} inside a capture (recorded work runs only in a plan's run)"),
            });
        }
        Ok(())
    }

    pub(crate) fn begin_capture_native(&self) -> Result<()> {
        self.refuse_in_capture("a second capture")?;
        gate::capture_begins();
        // Uploads inside the capture are copied at once outside the stream: nothing queued may
        // still use their blocks. A block free now was released before the pin, after the
        // work that used it was queued, so the synchronize waits for that work; one released
        // from now on is parked.
        self.0.alloc.pin();
        self.0.capture_start.store(self.0.library_use.launches(), std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = self.0.rt.synchronize().and_then(|_| self.0.rt.begin_capture()) {
            self.0.alloc.unpin(u64::MAX);
            gate::capture_ends();
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn end_capture_native(&self) -> Result<Graph> {
        let graph = self.0.rt.end_capture();
        gate::capture_ends();
        let launches = self.0.library_use.launches() - self.0.capture_start.load(std::sync::atomic::Ordering::Relaxed);
        let graph = match graph {
            Ok(g) => g,
            Err(e) => {
                self.0.alloc.unpin(u64::MAX);
                return Err(e);
            }
        };
        let bound = self.0.alloc.pinned();
        Ok(Graph::new(NativeGraph { graph, launches, bound, owner: self.0.clone() }))
    }

    pub(crate) fn abort_capture_native(&self) {
        if self.0.rt.capturing() {
            // Whatever was recorded is dropped unlaunched.
            drop(self.0.rt.end_capture());
            gate::capture_ends();
            self.0.alloc.unpin(u64::MAX);
        }
    }

    pub(crate) fn replay_native(&self, g: &Graph) -> Result<()> {
        self.refuse_in_capture("a plan's run")?;
        let g: &NativeGraph<R> = g.get()?;
        if !Arc::ptr_eq(&g.owner, &self.0) {
            return Err(Error::Capture { msg: "a plan run on another device than it was captured on".into() });
        }
        self.0.rt.launch_graph(&g.graph)?;
        self.0.library_use.launched_many(g.launches);
        Ok(())
    }
}
