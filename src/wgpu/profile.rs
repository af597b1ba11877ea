//! GPU time per kernel, for finding where a program's time goes (`RWO_WGPU_PROFILE=1`, on an
//! adapter with timestamp queries inside passes): every dispatch is bracketed by two
//! timestamps, each batch waits for its own at submit (so the GPU no longer runs beside the
//! recording: wall times taken meanwhile mean little), and when the device is dropped the
//! totals per kernel and grid go to stderr, largest first.

use super::batch::MAX_DISPATCHES;
use std::collections::HashMap;
use std::sync::Mutex;

/// Queries of one batch: two a dispatch.
const QUERIES: u32 = 2 * MAX_DISPATCHES as u32;
/// Lines of the report; the rest are summed in one.
const LINES: usize = 40;

pub(crate) struct Profiler {
    set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    read: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    period: f64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The label of each dispatch of the batch being recorded.
    batch: Vec<String>,
    /// Nanoseconds and dispatches per label.
    totals: HashMap<String, (f64, u64)>,
}

impl Profiler {
    /// Whether the environment asks for it.
    pub(crate) fn wanted() -> bool {
        std::env::var("RWO_WGPU_PROFILE").is_ok_and(|v| v.trim() == "1")
    }

    pub(crate) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Profiler {
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("rocm-wgpu-ops profile"),
            ty: wgpu::QueryType::Timestamp,
            count: QUERIES,
        });
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: QUERIES as u64 * 8,
                usage,
                mapped_at_creation: false,
            })
        };
        let resolved = buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC);
        let read = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        Profiler { set, resolved, read, period: queue.get_timestamp_period() as f64, state: Mutex::default() }
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
        let q = 2 * state.batch.len() as u32;
        state.batch.push(label);
        pass.write_timestamp(&self.set, q);
        dispatch(pass);
        pass.write_timestamp(&self.set, q + 1);
    }

    /// Copies the batch's timestamps where [`Profiler::collect`] reads them (outside any pass).
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        let n = 2 * self.state().batch.len() as u32;
        if n > 0 {
            encoder.resolve_query_set(&self.set, 0..n, &self.resolved, 0);
            encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.read, 0, n as u64 * 8);
        }
    }

    /// Waits for the submitted batch and adds its dispatches' times to the totals.
    pub(crate) fn collect(&self, device: &wgpu::Device) {
        let mut state = self.state();
        let n = state.batch.len() as u64;
        if n == 0 {
            return;
        }
        let batch = std::mem::take(&mut state.batch);
        self.read.slice(..16 * n).map_async(wgpu::MapMode::Read, |_| {});
        let done = device.poll(wgpu::PollType::wait_indefinitely()).is_ok();
        if let Some(bytes) = done.then(|| self.read.get_mapped_range(..16 * n).ok()).flatten() {
            let ticks: &[u64] = bytemuck::cast_slice(&bytes);
            for (i, label) in batch.into_iter().enumerate() {
                let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * self.period;
                let total = state.totals.entry(label).or_default();
                total.0 += ns;
                total.1 += 1;
            }
        }
        // Also where the wait failed: the pending mapping is cancelled, so the next one is allowed.
        self.read.unmap();
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        let mut rows: Vec<(String, (f64, u64))> = self.state().totals.drain().collect();
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
        for (label, (ns, n)) in rows.iter().take(LINES) {
            line(label, *ns, *n);
        }
        if rows.len() > LINES {
            let (ns, n) = sum(&rows[LINES..]);
            line("(the others)", ns, n);
        }
    }
}
