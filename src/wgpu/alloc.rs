//! A buffer pool bucketed by size: repeated ops of one size allocate nothing; freed tensors
//! return their buffer; cached free buffers are trimmed so that the memory held stays within
//! 1.5x of the peak of live bytes (past a small slack). A buffer the pool lets go is destroyed
//! after the next submit ([`Retired`]), not merely dropped: wgpu's WebGPU backend frees a
//! dropped buffer's memory only when the browser collects its JS handle, which a long run of
//! ops outpaces until the device is lost.

use super::context::Gpu;
use crate::pins::Pins;
use crate::{BackendKind, Error, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Bytes of free buffers always allowed in the cache, however little is live: the pool holds
/// at most `1.5 * peak_live + SLACK` bytes.
pub const SLACK: u64 = 16 << 20;

/// The size class of a request: 256 bytes, then four classes per power of two (waste <= 25%).
pub(crate) fn bucket(bytes: u64) -> u64 {
    if bytes <= 256 {
        return 256;
    }
    let top = 63 - (bytes - 1).leading_zeros() as u64; // 2^top < bytes <= 2^(top+1)
    let quarter = 1u64 << (top - 2);
    bytes.div_ceil(quarter) * quarter
}

/// What the pool holds, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes asked for by live tensors.
    pub live: u64,
    /// Bytes of every buffer the pool owns (live and cached free ones).
    pub held: u64,
    /// The most `live` has been.
    pub peak_live: u64,
    /// The most `held` has been.
    pub peak_held: u64,
    /// Buffers created from the driver so far (a reused buffer is not counted).
    pub created: u64,
}

/// Buffers let go of, to destroy once every command that may use them is submitted.
#[derive(Default)]
pub(crate) struct Retired(Mutex<Vec<wgpu::Buffer>>);

impl Retired {
    fn add(&self, buffers: impl IntoIterator<Item = wgpu::Buffer>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend(buffers);
    }

    /// The buffers retired so far. Taken under the recorder's lock just before a submit, none
    /// of them is used by a command recorded later, so they may be destroyed after it.
    pub(crate) fn take(&self) -> Vec<wgpu::Buffer> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A pool buffer: the wgpu buffer, its size, and its place in the order of creation.
type Owned = (wgpu::Buffer, u64, u64);

#[derive(Default)]
struct State {
    /// Free buffers by size, then by order of creation: a request takes the oldest of its
    /// size, so that which buffers an op gets depends on which are free, not on the order
    /// they came back in. A program that runs the same ops again (a model's forwards) then
    /// gets the same buffers, and binds the bind groups it bound before
    /// (`super::groups`); handed out last-in-first-out, the buffers of one size were
    /// permuted forward after forward (a Llama-shaped forward missed nearly every group).
    free: BTreeMap<u64, BTreeMap<u64, wgpu::Buffer>>,
    free_bytes: u64,
    stats: MemoryStats,
    /// Buffers made so far: the next one's place in the order of creation.
    born: u64,
    /// Buffers a plan's recorded work may use (`crate::pins`): released ones wait here.
    pins: Pins<Owned>,
}

impl State {
    /// Drops cached buffers, largest first, until the pool holds at most 1.5x the peak of
    /// live bytes (plus the slack): a freed buffer stays for the next op of its size.
    fn trim(&mut self, slack: u64) -> Vec<wgpu::Buffer> {
        self.trim_to(self.stats.peak_live + self.stats.peak_live / 2 + slack, 0)
    }

    /// Lets go of cached buffers, largest first, until `held + extra` fits in `allowance`.
    fn trim_to(&mut self, allowance: u64, extra: u64) -> Vec<wgpu::Buffer> {
        let mut out = vec![];
        while self.free_bytes > 0 && self.stats.held + extra > allowance {
            let Some(mut entry) = self.free.last_entry() else { break };
            let size = *entry.key();
            out.extend(entry.get_mut().pop_last().map(|(_, b)| b));
            if entry.get().is_empty() {
                entry.remove();
            }
            self.free_bytes -= size;
            self.stats.held -= size;
        }
        out
    }
}

/// The pool; buffers come back to it when their [`PooledBuffer`] drops.
pub(crate) struct Pool {
    state: Mutex<State>,
    usage: wgpu::BufferUsages,
    slack: u64,
    retired: Arc<Retired>,
}

/// A buffer on loan from the pool; returns on drop.
pub(crate) struct PooledBuffer {
    buffer: Option<wgpu::Buffer>,
    size: u64,
    bytes: u64,
    /// Its place in the pool's order of creation.
    born: u64,
    serial: u64,
    pool: Arc<Pool>,
}

impl PooledBuffer {
    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        // Only `drop` takes the buffer out.
        self.buffer.as_ref().unwrap_or_else(|| unreachable!("buffer taken before drop"))
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.pool.give_back((b, self.size, self.born), self.bytes, self.serial);
        }
    }
}

impl Pool {
    pub(crate) fn new(usage: wgpu::BufferUsages, retired: Arc<Retired>) -> Arc<Pool> {
        Arc::new(Pool { state: Mutex::default(), usage, slack: SLACK, retired })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn stats(&self) -> MemoryStats {
        self.lock().stats
    }

    /// A buffer of at least `bytes` (>= 4-byte aligned sizes), reused when one is free.
    pub(crate) fn alloc(self: &Arc<Self>, gpu: &Gpu, bytes: u64) -> Result<PooledBuffer> {
        let limit = gpu.max_binding();
        if bytes > limit {
            return Err(Error::LimitExceeded {
                backend: BackendKind::Wgpu,
                what: "a tensor buffer (max_storage_buffer_binding_size)".into(),
                needed: bytes,
                limit,
            });
        }
        let size = bucket(bytes).min(limit.max(256) / 16 * 16).max(bytes.next_multiple_of(16));
        let reused = {
            let mut st = self.lock();
            let b = st.free.get_mut(&size).and_then(BTreeMap::pop_first);
            if b.is_some() {
                st.free_bytes -= size;
            }
            b
        };
        let (born, buffer) = match reused {
            Some(b) => b,
            None => {
                // Make room first: a new buffer must not push the pool past its allowance
                // while cached buffers of other sizes sit idle.
                let mut st = self.lock();
                let peak = st.stats.peak_live.max(st.stats.live + bytes);
                let out = st.trim_to(peak + peak / 2 + self.slack, size);
                drop(st);
                self.retired.add(out);
                self.create(gpu, size)?
            }
        };
        let mut st = self.lock();
        st.stats.live += bytes;
        st.stats.peak_live = st.stats.peak_live.max(st.stats.live);
        let serial = st.pins.stamp();
        Ok(PooledBuffer { buffer: Some(buffer), size, bytes, born, serial, pool: self.clone() })
    }

    /// A new buffer and its place in the order of creation; out of memory, the caller may
    /// [`Pool::release_cache`], submit, and retry.
    fn create(&self, gpu: &Gpu, size: u64) -> Result<(u64, wgpu::Buffer)> {
        let desc = wgpu::BufferDescriptor { label: None, size, usage: self.usage, mapped_at_creation: false };
        let buffer = gpu.scoped(wgpu::ErrorFilter::OutOfMemory, || gpu.device.create_buffer(&desc))?;
        let mut st = self.lock();
        st.stats.created += 1;
        st.stats.held += size;
        st.stats.peak_held = st.stats.peak_held.max(st.stats.held);
        st.born += 1;
        Ok((st.born, buffer))
    }

    fn give_back(&self, owned: Owned, bytes: u64, serial: u64) {
        let mut st = self.lock();
        st.stats.live -= bytes;
        let back = st.pins.release(owned, serial);
        self.keep(st, back);
    }

    /// Caches `buffers` for reuse, then trims the cache (the lock `st` released first).
    fn keep(&self, mut st: std::sync::MutexGuard<'_, State>, buffers: impl IntoIterator<Item = Owned>) {
        for (buffer, size, born) in buffers {
            st.free.entry(size).or_default().insert(born, buffer);
            st.free_bytes += size;
        }
        let out = st.trim(self.slack);
        drop(st);
        self.retired.add(out);
    }

    /// A capture starts: no buffer released from now on is reused until [`Pool::unpin`].
    pub(crate) fn pin(&self) {
        self.lock().pins.begin();
    }

    /// The capture ended: the buffers handed out so far stay pinned by the returned bound.
    pub(crate) fn pinned(&self) -> u64 {
        self.lock().pins.end()
    }

    /// Pin `bound` goes (a plan dropped, or `u64::MAX`: a capture abandoned): the buffers it
    /// parked are reused again.
    pub(crate) fn unpin(&self, bound: u64) {
        let mut st = self.lock();
        let back = st.pins.unpin(bound);
        self.keep(st, back);
    }

    /// Lets go of every cached buffer (destroyed after the next submit).
    pub(crate) fn release_cache(&self) {
        let mut st = self.lock();
        st.stats.held -= st.free_bytes;
        st.free_bytes = 0;
        let out = std::mem::take(&mut st.free);
        drop(st);
        self.retired.add(out.into_values().flat_map(BTreeMap::into_values));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_waste_at_most_a_quarter() {
        assert_eq!(bucket(1), 256);
        assert_eq!(bucket(257), 320);
        assert_eq!(bucket(1024), 1024);
        assert_eq!(bucket(1025), 1280);
        for b in [300u64, 4097, 1 << 20, (1 << 30) + 1, 123_456_789] {
            assert!(bucket(b) >= b && (bucket(b) as f64) <= 1.25 * b as f64 + 256.0, "{b} -> {}", bucket(b));
        }
    }
}
