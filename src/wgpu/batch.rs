//! Lazy submission: dispatches are recorded into one command encoder (in one compute pass)
//! and submitted in batches; the CPU waits only on readback or `synchronize`. Per-dispatch
//! metadata goes into one arena buffer per batch, bound with a dynamic offset.

use super::alloc::{Pool, PooledBuffer};
use super::context::{ErrorSink, Gpu};
use super::groups::{BindGroups, bind_group};
use super::submit::{Batch, Submitter};
use crate::{BackendKind, Error, Result};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Duration;
use web_time::Instant;

/// Bytes of metadata one dispatch may read.
pub(crate) const META_WINDOW: u64 = 1024;
/// Bytes of the metadata arena of one batch.
const ARENA: u64 = 256 << 10;
/// Dispatches per batch before an early submit (bounds encoder memory).
pub(crate) const MAX_DISPATCHES: usize = 1024;
/// Age of a batch at which a dispatch submits it, so that the GPU does not sit idle while the
/// CPU records a long run of ops. On an H200, ops recorded back to back then synchronised:
/// [4096,16384] sum over dim 0 (two dispatches) 108 -> 96 us, fill [64M] 75.6 -> 73.3 us; the
/// CPU cost of recording a small op unchanged (about 4 us).
const SUBMIT_AFTER: Duration = Duration::from_micros(200);

#[derive(Default)]
pub(crate) struct Recorder {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    meta: Vec<u32>,
    arena: Option<PooledBuffer>,
    dispatches: usize,
    /// When the first dispatch of the batch was recorded.
    opened: Option<Instant>,
    /// Where dispatches go instead while a capture is under way.
    capture: Option<Captured>,
    /// The bind groups of earlier dispatches, bound again on the same buffers.
    groups: BindGroups,
    /// The thread batches are handed to when the recording goes on after them.
    submitter: Submitter,
    /// Every batch submitted on the recording thread (`RWO_WGPU_TUNE=submit=inline`).
    inline: bool,
}

/// One dispatch as a capture keeps it: what encoding it again needs.
struct Kept {
    pipeline: wgpu::ComputePipeline,
    group: wgpu::BindGroup,
    offset: u32,
    groups: (u32, u32),
}

/// The dispatches of a capture, in order, and the metadata arenas they read (owned here: no
/// later batch writes them); only the capturing thread's dispatches are kept.
pub(crate) struct Captured {
    thread: std::thread::ThreadId,
    kept: Vec<Kept>,
    arenas: Vec<(PooledBuffer, Vec<u32>)>,
    /// Buffers cleared at the start of each replay (the error flags made in the capture).
    clears: Vec<wgpu::Buffer>,
}

impl Captured {
    /// Dispatches a replay records.
    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }

    /// Room for one dispatch's metadata in the last arena (a new one when it is full): the
    /// arena's index and the byte offset.
    fn place_meta(&mut self, gpu: &Gpu, pool: &Arc<Pool>, words: &[u32]) -> Result<(usize, u32)> {
        let align = (gpu.limits.min_storage_buffer_offset_alignment as usize / 4).max(1);
        let fits = |meta: &Vec<u32>| (meta.len().next_multiple_of(align) * 4) as u64 + META_WINDOW <= ARENA;
        if !self.arenas.last().is_some_and(|(_, m)| fits(m)) {
            self.arenas.push((pool.alloc(gpu, ARENA)?, vec![]));
        }
        let i = self.arenas.len() - 1;
        let meta = &mut self.arenas[i].1;
        let at = meta.len().next_multiple_of(align);
        meta.resize(at, 0);
        meta.extend_from_slice(words);
        Ok((i, (at * 4) as u32))
    }
}

impl Recorder {
    /// A recorder that hands batches to a submitting thread unless `inline` (which waits
    /// `delay` before each, in tests).
    pub(crate) fn new(inline: bool, delay: Option<Duration>) -> Recorder {
        Recorder { inline, submitter: Submitter::new(delay), ..Recorder::default() }
    }

    /// Reserves room for one dispatch's metadata, submitting first if the arena is full; returns
    /// the arena buffer and the byte offset the words were placed at.
    fn place_meta(&mut self, gpu: &Gpu, pool: &Arc<Pool>, words: &[u32]) -> Result<u32> {
        let align = (gpu.limits.min_storage_buffer_offset_alignment as usize / 4).max(1);
        let at = self.meta.len().next_multiple_of(align);
        if (at * 4) as u64 + META_WINDOW > ARENA || self.dispatches >= MAX_DISPATCHES {
            self.hand_over(gpu)?;
            return self.place_meta(gpu, pool, words);
        }
        if self.arena.is_none() {
            self.arena = Some(pool.alloc(gpu, ARENA)?);
        }
        self.meta.resize(at, 0);
        self.meta.extend_from_slice(words);
        Ok((at * 4) as u32)
    }

    /// Records a copy of `bytes` (a whole number of 32-bit words) into `dst` from this batch's
    /// metadata arena, ordered with the work recorded so far, so that a small upload needs no
    /// submit, and no staging buffer of its own: the arena is written just before the batch
    /// runs. False while this thread captures, for more than a quarter of an arena, or where
    /// the bytes do not fit in what is left of it (the caller then submits and writes `dst`).
    pub(crate) fn stage(&mut self, gpu: &Gpu, pool: &Arc<Pool>, dst: &wgpu::Buffer, bytes: &[u8]) -> Result<bool> {
        let at = self.meta.len();
        if self.capturing() || bytes.len() as u64 > ARENA / 4 || (at + bytes.len() / 4) as u64 * 4 > ARENA {
            return Ok(false);
        }
        if self.arena.is_none() {
            self.arena = Some(pool.alloc(gpu, ARENA)?);
        }
        self.meta.extend(bytes.chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])));
        let arena = self.arena.as_ref().unwrap_or_else(|| unreachable!("allocated above")).buffer().clone();
        self.encoder(gpu).copy_buffer_to_buffer(&arena, at as u64 * 4, dst, 0, bytes.len() as u64);
        Ok(true)
    }

    /// Records one dispatch of `pipeline` over `groups` workgroups.
    pub(crate) fn dispatch(
        &mut self,
        gpu: &Gpu,
        meta_pool: &Arc<Pool>,
        pipeline: &super::Pipeline,
        buffers: &[&wgpu::Buffer],
        meta: &[u32],
        groups: (u32, u32),
    ) -> Result<()> {
        if (meta.len() * 4) as u64 > META_WINDOW {
            return Err(Error::Backend { backend: BackendKind::Wgpu, msg: format!("{} metadata words", meta.len()) });
        }
        if let Some(c) = self.capture.as_mut().filter(|c| c.thread == std::thread::current().id()) {
            let (i, offset) = c.place_meta(gpu, meta_pool, meta)?;
            let group = bind_group(gpu, pipeline, c.arenas[i].0.buffer(), buffers);
            c.kept.push(Kept { pipeline: pipeline.pipeline.clone(), group, offset, groups });
            return Ok(());
        }
        let offset = self.place_meta(gpu, meta_pool, meta)?;
        let arena = self.arena.as_ref().unwrap_or_else(|| unreachable!("place_meta allocates the arena")).buffer();
        let group = self.groups.get(gpu, pipeline, arena, buffers);
        let pass = self.pass(gpu);
        pass.set_pipeline(&pipeline.pipeline);
        pass.set_bind_group(0, &group, &[offset]);
        match &gpu.profiler {
            Some(p) => p.timed(pass, format!("{} {}x{}", pipeline.name, groups.0, groups.1), |pass| {
                pass.dispatch_workgroups(groups.0, groups.1, 1)
            }),
            None => pass.dispatch_workgroups(groups.0, groups.1, 1),
        }
        self.dispatched(gpu, 1)
    }

    /// Counts `n` dispatches just recorded into the batch, submitting it once it is old enough
    /// that the GPU should start on it while the CPU records the rest.
    fn dispatched(&mut self, gpu: &Gpu, n: usize) -> Result<()> {
        self.dispatches += n;
        if self.opened.get_or_insert_with(Instant::now).elapsed() >= SUBMIT_AFTER {
            self.hand_over(gpu)?;
        }
        Ok(())
    }

    /// While the calling thread captures, has each replay clear `buffer` before its dispatches
    /// and returns true; else false.
    pub(crate) fn clear_at_replay(&mut self, buffer: &wgpu::Buffer) -> bool {
        match self.capture.as_mut().filter(|c| c.thread == std::thread::current().id()) {
            Some(c) => {
                c.clears.push(buffer.clone());
                true
            }
            None => false,
        }
    }

    /// Whether the calling thread is capturing.
    pub(crate) fn capturing(&self) -> bool {
        self.capture.as_ref().is_some_and(|c| c.thread == std::thread::current().id())
    }

    /// Starts keeping the calling thread's dispatches instead of recording them (one capture
    /// at a time), after submitting the batch so far.
    pub(crate) fn begin_capture(&mut self, gpu: &Gpu) -> Result<()> {
        if self.capture.is_some() {
            return Err(Error::Capture { msg: "a capture is already under way on this device".into() });
        }
        self.submit(gpu)?;
        let thread = std::thread::current().id();
        self.capture = Some(Captured { thread, kept: vec![], arenas: vec![], clears: vec![] });
        Ok(())
    }

    /// The dispatches the calling thread kept since [`Recorder::begin_capture`], their
    /// metadata written (queued before the next submit); `None` if it was not capturing.
    pub(crate) fn end_capture(&mut self, gpu: &Gpu) -> Option<Captured> {
        if !self.capturing() {
            return None;
        }
        let c = self.capture.take()?;
        // A batch handed over may write one of these arenas (a pool buffer) at its submit.
        self.submitter.join();
        for (arena, meta) in &c.arenas {
            gpu.queue.write_buffer(arena.buffer(), 0, bytemuck::cast_slice(meta));
        }
        Some(c)
    }

    /// Records the kept dispatches of `c` again, into the current batch, after clearing its
    /// buffers to clear.
    pub(crate) fn replay(&mut self, gpu: &Gpu, c: &Captured) -> Result<()> {
        if self.capturing() {
            return Err(Error::Capture { msg: "a plan run inside a capture".into() });
        }
        if !c.clears.is_empty() {
            let encoder = self.encoder(gpu);
            c.clears.iter().for_each(|b| encoder.clear_buffer(b, 0, None));
        }
        let pass = self.pass(gpu);
        for k in &c.kept {
            pass.set_pipeline(&k.pipeline);
            pass.set_bind_group(0, &k.group, &[k.offset]);
            pass.dispatch_workgroups(k.groups.0, k.groups.1, 1);
        }
        self.dispatched(gpu, c.kept.len())
    }
}

impl Recorder {
    fn pass(&mut self, gpu: &Gpu) -> &mut wgpu::ComputePass<'static> {
        if self.pass.is_none() {
            let encoder = self.encoder.get_or_insert_with(|| gpu.device.create_command_encoder(&Default::default()));
            self.pass = Some(encoder.begin_compute_pass(&Default::default()).forget_lifetime());
        }
        self.pass.as_mut().unwrap_or_else(|| unreachable!("pass just opened"))
    }

    /// The encoder outside any pass, for copies.
    pub(crate) fn encoder(&mut self, gpu: &Gpu) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| gpu.device.create_command_encoder(&Default::default()))
    }

    /// Submits everything recorded, on this thread, after every batch handed over: the queue
    /// may be used directly once it returns. The metadata is written just before.
    pub(crate) fn submit(&mut self, gpu: &Gpu) -> Result<()> {
        self.submitter.join();
        if let Some(mut batch) = self.close(gpu) {
            if let Some(p) = &gpu.profiler {
                p.resolve(&mut batch.encoder);
                batch.submit(&gpu.queue);
                p.submitted();
            } else {
                batch.submit(&gpu.queue);
            }
        }
        gpu.errors.take()
    }

    /// Submits everything recorded while the recording goes on: by the submitting thread where
    /// there is one (not with the profile, whose queries resolve at the submit).
    fn hand_over(&mut self, gpu: &Gpu) -> Result<()> {
        if self.inline || gpu.profiler.is_some() {
            return self.submit(gpu);
        }
        if let Some(batch) = self.close(gpu) {
            self.submitter.send(&gpu.queue, batch);
        }
        gpu.errors.take()
    }

    /// Ends the batch: what submitting it takes (`None` if nothing was recorded; the buffers
    /// retired so far are then destroyed here, every command that used them being submitted).
    fn close(&mut self, gpu: &Gpu) -> Option<Batch> {
        self.pass = None;
        let retired = gpu.retired.take();
        self.groups.forget(&retired);
        // Reusing the arena in a later batch is safe: its next write happens at that batch's
        // submit, after this one in queue order.
        let arena = self.arena.take().map(|a| a.buffer().clone());
        // The next batch's words start with room for as many as this one's.
        let room = self.meta.len();
        let meta = std::mem::replace(&mut self.meta, Vec::with_capacity(room));
        self.dispatches = 0;
        self.opened = None;
        match self.encoder.take() {
            Some(encoder) => Some(Batch { encoder, meta: arena.map(|a| (a, meta)), retired }),
            None => {
                retired.iter().for_each(wgpu::Buffer::destroy);
                None
            }
        }
    }
}

/// A copy to the host under way: a staging buffer that submitted work copies into, being mapped.
pub(crate) struct Mapping {
    #[cfg(not(target_family = "wasm"))]
    device: wgpu::Device,
    errors: Arc<ErrorSink>,
    staging: wgpu::Buffer,
    len: u64,
    mapped: Arc<Mutex<MapState>>,
}

impl Drop for Mapping {
    /// The staging buffer's memory goes back now (see [`super::alloc`]): read, or abandoned.
    fn drop(&mut self) {
        self.staging.destroy();
    }
}

/// The map callback's answer and the task waiting for it.
#[derive(Default)]
struct MapState {
    result: Option<std::result::Result<(), String>>,
    waker: Option<Waker>,
}

/// Hands the map callback's answer to [`Mapping::bytes`]; dropped unanswered (wgpu dropped the
/// callback), it answers with an error, so no wait hangs.
struct MapAnswer(Arc<Mutex<MapState>>);

impl MapAnswer {
    fn send(&self, r: std::result::Result<(), String>) {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        state.result.get_or_insert(r);
        if let Some(w) = state.waker.take() {
            w.wake();
        }
    }
}

impl Drop for MapAnswer {
    fn drop(&mut self) {
        self.send(Err("the readback was abandoned by wgpu".into()));
    }
}

impl Mapping {
    /// Asks for the first `len` bytes of `staging` (MAP_READ, already copied into by submitted
    /// work) to be mapped.
    pub(crate) fn start(gpu: &Gpu, staging: wgpu::Buffer, len: u64) -> Mapping {
        let mapped = Arc::new(Mutex::new(MapState::default()));
        let answer = MapAnswer(mapped.clone());
        staging.map_async(wgpu::MapMode::Read, ..len.max(4).next_multiple_of(4), move |r| {
            answer.send(r.map_err(|e| e.to_string()));
        });
        Mapping {
            #[cfg(not(target_family = "wasm"))]
            device: gpu.device.clone(),
            errors: gpu.errors.clone(),
            staging,
            len,
            mapped,
        }
    }

    /// The bytes, once mapped.
    pub(crate) async fn bytes(self) -> Result<Vec<u8>> {
        let err = |msg: String| Error::Backend { backend: BackendKind::Wgpu, msg };
        // Natively wgpu runs map callbacks only inside a poll; a browser runs them itself.
        #[cfg(not(target_family = "wasm"))]
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| err(e.to_string()))?;
        std::future::poll_fn(|cx| {
            let mut state = self.mapped.lock().unwrap_or_else(|e| e.into_inner());
            match state.result.take() {
                Some(r) => Poll::Ready(r),
                None => {
                    state.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
        .map_err(err)?;
        let (buffer, len) = (&self.staging, self.len);
        let bytes = crate::host::try_vec(len as usize, 0u8).and_then(|mut out| {
            let view = buffer.get_mapped_range(..len.max(4).next_multiple_of(4)).map_err(|e| err(e.to_string()))?;
            out.copy_from_slice(&view[..len as usize]);
            Ok(out)
        });
        buffer.unmap();
        let bytes = bytes?;
        self.errors.take()?;
        Ok(bytes)
    }
}
