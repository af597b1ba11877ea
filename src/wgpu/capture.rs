//! Plans on wgpu: the recorder keeps each dispatch of a capture instead of encoding it
//! (`batch::Captured`), and a run encodes the kept ones again; the tensor buffers they bind are
//! pinned in the pool while the plan lives (`crate::plan`, `crate::pins`).

use super::alloc::Pool;
use super::batch::Captured;
use super::{Context, WgpuBackend};
use crate::backend::Graph;
use crate::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A capture's dispatches and the pool pin that goes with them.
struct WgpuGraph {
    captured: Captured,
    bound: u64,
    pool: Arc<Pool>,
    owner: std::sync::Weak<Context>,
}

impl Drop for WgpuGraph {
    fn drop(&mut self) {
        self.pool.unpin(self.bound);
    }
}

impl WgpuBackend {
    /// `Error::Capture` for `what` (a wait) while a capture is under way.
    pub(crate) fn refuse_in_capture(&self, what: &str) -> Result<()> {
        if self.rec().capturing() {
            return Err(Error::Capture {
                msg: format!("{what} inside a capture (recorded work runs only in a plan's run)"),
            });
        }
        Ok(())
    }

    pub(crate) fn begin_capture_wgpu(&self) -> Result<()> {
        self.rec().begin_capture(&self.0.gpu)?;
        self.0.pool.pin();
        Ok(())
    }

    pub(crate) fn end_capture_wgpu(&self) -> Result<Graph> {
        let captured = self.rec().end_capture(&self.0.gpu);
        let captured = captured.ok_or_else(|| Error::Capture { msg: "no capture is under way".into() })?;
        let bound = self.0.pool.pinned();
        Ok(Graph::new(WgpuGraph { captured, bound, pool: self.0.pool.clone(), owner: Arc::downgrade(&self.0) }))
    }

    pub(crate) fn abort_capture_wgpu(&self) {
        if self.rec().end_capture(&self.0.gpu).is_some() {
            self.0.pool.unpin(u64::MAX);
        }
    }

    pub(crate) fn replay_wgpu(&self, g: &Graph) -> Result<()> {
        let g: &WgpuGraph = g.get()?;
        if !std::ptr::eq(g.owner.as_ptr(), Arc::as_ptr(&self.0)) {
            return Err(Error::Capture { msg: "a plan run on another device than it was captured on".into() });
        }
        self.rec().replay(&self.0.gpu, &g.captured)?;
        self.0.launches.fetch_add(g.captured.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}
