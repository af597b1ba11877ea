//! Replay: a computation recorded once by [`Device::capture`] and run again by [`Plan::run`]
//! with new inputs at a fraction of its recording cost (ARCHITECTURE.md, "Replay").

use super::Tensor;
use super::status::{Flag, Flags, Status};
use crate::backend::{CopyOps, Graph, Memory};
use crate::device::{BackendOf, dispatch};
use crate::{BackendKind, DType, Device, Error, Result, Shape};
use std::sync::Arc;

/// The closure of a plan the cpu runs again.
type Closure<'a> = Box<dyn FnMut(&[Tensor]) -> Result<Vec<Tensor>> + 'a>;

/// A computation recorded by [`Device::capture`]: run it again on new inputs of the captured
/// shapes and dtypes with [`Plan::run`].
pub struct Plan<'a> {
    device: Device,
    /// The captured inputs' shapes and dtypes.
    signature: Vec<(Shape, DType)>,
    how: How<'a>,
}

enum How<'a> {
    /// Recorded on a GPU: the placeholder inputs the work reads, the outputs it writes, the
    /// backend's graph.
    Graph { inputs: Vec<Tensor>, outputs: Vec<Tensor>, graph: Graph },
    /// On the cpu, the closure itself, run again.
    Again(Closure<'a>),
}

impl std::fmt::Debug for Plan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.how {
            How::Graph { .. } => "graph",
            How::Again(_) => "closure",
        };
        write!(f, "Plan[{} on {}, inputs {:?}]", kind, self.device.kind(), self.signature)
    }
}

impl Device {
    /// Records `f` run on placeholder inputs shaped and typed as `inputs` (their values copied),
    /// for [`Plan::run`] to run again with new data: on a GPU, the kernels `f` queues are kept
    /// (a CUDA or HIP graph; wgpu's dispatches with their pipelines, bind groups and metadata)
    /// and replayed without recording any op again; the cpu runs `f` again.
    ///
    /// Frozen at capture: everything decided on the host (shapes, scalar parameters, kernel
    /// choices, random seeds: a draw inside `f` repeats at every run). Read at every run: the
    /// data of tensors `f` uses from outside (weights, a cache), which the plan keeps alive;
    /// tensors `f` writes in place (`slice_set` into a cache) are written again at every run.
    /// Inside `f` nothing may wait for the GPU (a readback, `synchronize`): that is
    /// `Error::Capture`, and so is a capture inside `f`. Only the calling thread's work is
    /// recorded: other threads' runs as before, and another thread's capture on this device
    /// waits for this one to end. On CUDA and HIP, work of another thread that waits for the
    /// whole GPU (dropping a device, giving cached memory back, a vendor library's first use
    /// on a device) waits for the capture to end, on any device of the process: `f` must not
    /// wait for such a thread.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    /// let dev = Device::auto()?;
    /// let w = Tensor::from_vec(vec![1f32, 2., 3., 4.], (2, 2), &dev)?;
    /// let x = Tensor::from_vec(vec![1f32, 1.], (1, 2), &dev)?;
    /// let mut plan = dev.capture(&[&x], |xs| Ok(vec![xs[0].matmul(&w)?.exp()?]))?;
    /// let x2 = Tensor::from_vec(vec![0f32, 1.], (1, 2), &dev)?;
    /// let y = plan.run(&[&x2])?.remove(0);
    /// assert_eq!(y.to_vec2::<f32>()?, x2.matmul(&w)?.exp()?.to_vec2::<f32>()?);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn capture<'a>(
        &self,
        inputs: &[&Tensor],
        mut f: impl FnMut(&[Tensor]) -> Result<Vec<Tensor>> + 'a,
    ) -> Result<Plan<'a>> {
        if let Some(t) = inputs.iter().find(|t| !t.device.same_device(self)) {
            return Err(Error::Capture { msg: format!("an input on {}, the plan on {}", t.device, self) });
        }
        let signature = inputs.iter().map(|t| (t.shape().clone(), t.dtype)).collect();
        let placeholders = inputs.iter().map(|t| t.copy()).collect::<Result<Vec<_>>>()?;
        if self.kind() == BackendKind::Cpu {
            // Run once here too, so that a closure that fails does so at capture everywhere.
            f(&placeholders)?;
            return Ok(Plan { device: self.clone(), signature, how: How::Again(Box::new(f)) });
        }
        if crate::device::capturing() {
            return Err(Error::Capture { msg: "a capture inside a capture".into() });
        }
        // One capture at a time on a backend: another thread's waits here for this one.
        let _gate = self.capture_gate().lock().unwrap_or_else(|e| e.into_inner());
        self.run_deferred()?;
        dispatch!(self, |b| b.begin_capture())?;
        let mut under_way = UnderWay::new(self);
        let outputs = f(&placeholders)?;
        if let Some(t) = outputs.iter().find(|t| !t.device.same_device(self)) {
            return Err(Error::Capture { msg: format!("an output on {}, the plan on {}", t.device, self) });
        }
        // The outputs' deferred programs are part of the plan.
        self.run_deferred()?;
        under_way.ended = true;
        drop(under_way);
        let graph = dispatch!(self, |b| b.end_capture())?;
        Ok(Plan { device: self.clone(), signature, how: How::Graph { inputs: placeholders, outputs, graph } })
    }
}

/// A capture between its start and end: left early (an error, a panic in the closure), it is
/// abandoned, so the device runs work again.
struct UnderWay<'d> {
    device: &'d Device,
    ended: bool,
}

impl UnderWay<'_> {
    fn new(device: &Device) -> UnderWay<'_> {
        crate::device::set_capturing(true);
        UnderWay { device, ended: false }
    }
}

impl Drop for UnderWay<'_> {
    fn drop(&mut self) {
        crate::device::set_capturing(false);
        if !self.ended {
            dispatch!(self.device, |b| b.abort_capture());
            self.device.release_captured();
        }
    }
}

impl Plan<'_> {
    /// Runs the plan on `inputs` (the captured count, shapes, dtypes and device; any layout),
    /// returning new tensors with its outputs' values: a later run never changes them. The
    /// inputs are read, never written: the captured work sees contiguous copies of them (what it
    /// writes in place into an input stays in the copy), on every backend. The work is queued as
    /// any op's is; failures found in device data (a bad id) travel with the outputs of the run
    /// that found them.
    pub fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        self.check(inputs)?;
        match &mut self.how {
            // Copies, as a GPU's plan reads its placeholders: whatever the closure writes in
            // place into its inputs never reaches the caller's tensors.
            How::Again(f) => f(&inputs.iter().map(|t| t.copy()).collect::<Result<Vec<_>>>()?),
            How::Graph { inputs: placeholders, outputs, graph } => {
                for (p, x) in placeholders.iter().zip(inputs) {
                    overwrite(p, x)?;
                }
                self.device.run_deferred()?;
                dispatch!(self.device, |b| b.replay(graph))?;
                let carried = Flags::union(inputs.iter().map(|t| t.status().flags()));
                let mut fresh: Vec<(Arc<Flag>, Arc<Flag>)> = vec![];
                outputs.iter().map(|o| copy_out(o, &carried, &mut fresh)).collect()
            }
        }
    }

    /// Inputs the captured count, shapes and dtypes, on the plan's device.
    fn check(&self, inputs: &[&Tensor]) -> Result<()> {
        if inputs.len() != self.signature.len() {
            let msg = format!("{} inputs to a plan captured with {}", inputs.len(), self.signature.len());
            return Err(Error::Capture { msg });
        }
        for (i, (t, (shape, dtype))) in inputs.iter().zip(&self.signature).enumerate() {
            if !t.device.same_device(&self.device) {
                return Err(Error::Capture { msg: format!("input {i} on {}, the plan on {}", t.device, self.device) });
            }
            if t.shape() != shape || t.dtype != *dtype {
                let msg = format!("input {i} is {} {}, the plan was captured with {shape} {dtype}", t.shape(), t.dtype);
                return Err(Error::Capture { msg });
            }
        }
        Ok(())
    }
}

/// Writes `x`'s elements into placeholder `p` (contiguous, same shape and dtype), without
/// taking on `x`'s flags (those go to the run's outputs).
fn overwrite(p: &Tensor, x: &Tensor) -> Result<()> {
    if p.shares_storage(x) {
        return Ok(());
    }
    let s = x.read()?;
    let mut d = p.write()?;
    dispatch!(p.device, |b| b.copy_strided(b.get(&s)?, &x.layout, b.get_mut(&mut d)?, 0))
}

/// A new tensor with `o`'s values after a replay, its status the run's: copies of `o`'s flags
/// made by the capture (rewritten by the replay; `fresh` maps each to its copy, once per run),
/// its flags from before the capture, and `carried`.
fn copy_out(o: &Tensor, carried: &Flags, fresh: &mut Vec<(Arc<Flag>, Arc<Flag>)>) -> Result<Tensor> {
    let dev = &o.device;
    let mut flags: Vec<Arc<Flag>> = carried.iter().cloned().collect();
    for f in o.status().flags().iter().cloned() {
        if !f.replayed() {
            flags.push(f);
            continue;
        }
        if let Some((_, copy)) = fresh.iter().find(|(old, _)| Arc::ptr_eq(old, &f)) {
            flags.push(copy.clone());
            continue;
        }
        let copy = dispatch!(dev, |b| {
            let new = b.copy_flag(b.get(f.storage())?)?;
            Ok::<_, Error>(Flag::new(b.wrap(new), f.records()))
        })?;
        fresh.push((f, copy.clone()));
        flags.push(copy);
    }
    let s = o.read()?;
    let storage = dispatch!(dev, |b| {
        let mut y = b.alloc(o.dtype, o.elem_count())?;
        b.copy_strided(b.get(&s)?, &o.layout, &mut y, 0)?;
        Ok::<_, Error>(b.wrap(y))
    })?;
    Ok(Tensor::from_parts(storage, o.shape().clone(), Status::of([flags.into_iter().collect()], dev), dev))
}
