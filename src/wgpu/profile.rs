//! GPU time per kernel, for finding where a program's time goes (`RWO_WGPU_PROFILE=1`, on an
//! adapter with timestamp queries inside passes): every dispatch is bracketed by two
//! timestamps; each batch's are resolved at its submit into buffers of its own and read back
//! when they arrive (the CPU never waits for them before the device is dropped, so the GPU runs
//! beside the recording as without the profile); when the device is dropped the totals per
//! kernel and grid go to stderr, largest first (the first 40; `RWO_WGPU_PROFILE=all`: every one).

use super::batch::MAX_DISPATCHES;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Queries of one batch: two a dispatch.
const QUERIES: u32 = 2 * MAX_DISPATCHES as u32;
/// Lines of the report with `RWO_WGPU_PROFILE=1`; the rest are summed in one.
const LINES: usize = 40;

pub(crate) struct Profiler {
    device: wgpu::Device,
    /// Nanoseconds per timestamp tick.
    period: f64,
    state: Mutex<State>,
}

/// One batch's queries, the buffers they are read through, and its dispatches' labels.
struct Slot {
    set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    read: wgpu::Buffer,
    labels: Vec<String>,
    /// `WAITING` until `read`'s mapping ends, then `MAPPED` or `FAILED`.
    mapping: Arc<AtomicU8>,
}

const WAITING: u8 = 0;
const MAPPED: u8 = 1;
const FAILED: u8 = 2;

#[derive(Default)]
struct State {
    /// The batch being recorded.
    open: Option<Slot>,
    /// Submitted batches, their timestamps on the way, oldest first.
    pending: VecDeque<Slot>,
    /// Slots read, for later batches.
    free: Vec<Slot>,
    /// Nanoseconds and dispatches per label.
    totals: HashMap<String, (f64, u64)>,
}

impl Profiler {
    /// Whether the environment asks for it.
    pub(crate) fn wanted() -> bool {
        Self::lines().is_some()
    }

    /// The report's lines, if the environment asks for a profile.
    fn lines() -> Option<usize> {
        match std::env::var("RWO_WGPU_PROFILE").as_deref().map(str::trim) {
            Ok("1") => Some(LINES),
            Ok("all") => Some(usize::MAX),
            _ => None,
        }
    }

    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Profiler {
        Profiler { device: device.clone(), period: queue.get_timestamp_period() as f64, state: Mutex::default() }
    }

    fn slot(&self) -> Slot {
        let buffer = |usage| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: QUERIES as u64 * 8,
                usage,
                mapped_at_creation: false,
            })
        };
        Slot {
            set: self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("rocm-wgpu-ops profile"),
                ty: wgpu::QueryType::Timestamp,
                count: QUERIES,
            }),
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            read: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            labels: vec![],
            mapping: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `dispatch` in `pass` between two timestamps, under `label`.
    pub(crate) fn timed(
        &self,
        pass: &mut wgpu::ComputePass<'static>,
        label: String,
        dispatch: impl FnOnce(&mut wgpu::ComputePass<'static>),
    ) {
        let mut state = self.state();
        let state = &mut *state;
        let slot = state.open.get_or_insert_with(|| state.free.pop().unwrap_or_else(|| self.slot()));
        let q = 2 * slot.labels.len() as u32;
        slot.labels.push(label);
        pass.write_timestamp(&slot.set, q);
        dispatch(pass);
        pass.write_timestamp(&slot.set, q + 1);
    }

    /// Copies the batch's timestamps to where they are read (outside any pass, before submit).
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Some(slot) = &self.state().open {
            let n = 2 * slot.labels.len() as u32;
            encoder.resolve_query_set(&slot.set, 0..n, &slot.resolved, 0);
            encoder.copy_buffer_to_buffer(&slot.resolved, 0, &slot.read, 0, n as u64 * 8);
        }
    }

    /// After the batch's submit: asks for its timestamps, and adds those that have arrived.
    pub(crate) fn submitted(&self) {
        let mut state = self.state();
        if let Some(slot) = state.open.take() {
            let mapping = slot.mapping.clone();
            let n = 2 * slot.labels.len() as u64;
            slot.read.slice(..n * 8).map_async(wgpu::MapMode::Read, move |r| {
                mapping.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release)
            });
            state.pending.push_back(slot);
        }
        let _ = self.device.poll(wgpu::PollType::Poll);
        self.harvest(&mut state);
    }

    /// Adds the timestamps of the oldest batches that have arrived (a batch whose mapping failed
    /// is left out of the totals).
    fn harvest(&self, state: &mut State) {
        while state.pending.front().is_some_and(|s| s.mapping.load(Ordering::Acquire) != WAITING) {
            let Some(mut slot) = state.pending.pop_front() else { break };
            let n = 2 * slot.labels.len() as u64;
            let mapped = slot.mapping.load(Ordering::Acquire) == MAPPED;
            if let Some(bytes) = mapped.then(|| slot.read.get_mapped_range(..n * 8).ok()).flatten() {
                let ticks: &[u64] = bytemuck::cast_slice(&bytes);
                for (i, label) in slot.labels.drain(..).enumerate() {
                    let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * self.period;
                    let total = state.totals.entry(label).or_default();
                    total.0 += ns;
                    total.1 += 1;
                }
            }
            if mapped {
                slot.read.unmap();
            }
            slot.labels.clear();
            slot.mapping.store(WAITING, Ordering::Release);
            state.free.push(slot);
        }
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
        let mut state = self.state();
        self.harvest(&mut state);
        let mut rows: Vec<(String, (f64, u64))> = state.totals.drain().collect();
        drop(state);
        if rows.is_empty() {
            return;
        }
        rows.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
        let sum = |rows: &[(String, (f64, u64))]| rows.iter().fold((0.0, 0), |(t, c), (_, (ns, n))| (t + ns, c + n));
        let (all, count) = sum(&rows);
        eprintln!("# wgpu GPU time per kernel and grid (RWO_WGPU_PROFILE): {:.3} ms in {count} dispatches", all / 1e6);
        eprintln!("#   {:>9} {:>6} {:>7} {:>9}  kernel grid", "ms", "%", "count", "us each");
        let line = |label: &str, ns: f64, n: u64| {
            let share = 100.0 * ns / all.max(1.0);
            eprintln!("#   {:>9.3} {share:>5.1}% {n:>7} {:>9.2}  {label}", ns / 1e6, ns / 1e3 / n as f64);
        };
        let lines = Self::lines().unwrap_or(LINES);
        for (label, (ns, n)) in rows.iter().take(lines) {
            line(label, *ns, *n);
        }
        if rows.len() > lines {
            let (ns, n) = sum(&rows[lines..]);
            line("(the others)", ns, n);
        }
    }
}
