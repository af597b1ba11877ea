//! A caching device allocator. Freeing device memory synchronises the device (`hipFree`,
//! `cuMemFree`), so released blocks are kept by size class and handed out again; they are
//! freed only when an allocation fails (then everything cached is freed and the allocation
//! retried) or when the backend goes away. All work runs on one in-order stream, so a block
//! released while queued kernels still read it is safe to reuse: later writers queue behind.

use super::ptr::DevicePtr;
use super::runtime::Runtime;
use crate::pins::Pins;
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// The smallest block handed out, in bytes.
const MIN_BLOCK: usize = 512;

/// The size class of a request: the smallest of `2^k` and `2^k * (1 + j/4)` (j = 1, 2, 3) that
/// holds it, so a block wastes under a quarter of itself while blocks of near sizes are shared.
pub(crate) fn size_class(bytes: usize) -> usize {
    if bytes <= MIN_BLOCK {
        return MIN_BLOCK;
    }
    let hi = bytes.next_power_of_two();
    let lo = hi / 2;
    let step = lo / 4;
    lo + (bytes - lo).div_ceil(step) * step
}

impl Pool {
    /// Keeps `blocks` for reuse.
    fn cache(&mut self, blocks: impl IntoIterator<Item = (DevicePtr, usize)>) {
        for (ptr, class) in blocks {
            self.free.entry(class).or_default().push(ptr);
            self.cached += class;
        }
    }
}

#[derive(Default)]
struct Pool {
    free: HashMap<usize, Vec<DevicePtr>>,
    cached: usize,
    live: usize,
    /// Blocks a plan's graph may touch (`crate::pins`): released ones wait here.
    pins: Pins<(DevicePtr, usize)>,
}

/// Bytes in use by storages and bytes cached for reuse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes held by live storages.
    pub live: usize,
    /// Bytes of released blocks kept for reuse.
    pub cached: usize,
}

#[derive(Default)]
pub(crate) struct Allocator {
    pool: Mutex<Pool>,
}

impl Allocator {
    fn lock(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block of at least `bytes` (> 0) bytes, its size class and serial (what to release it
    /// with).
    pub(crate) fn alloc<R: Runtime>(&self, rt: &R, bytes: usize) -> Result<(DevicePtr, usize, u64)> {
        let class = size_class(bytes);
        {
            let mut pool = self.lock();
            if let Some(ptr) = pool.free.get_mut(&class).and_then(|v| v.pop()) {
                pool.cached -= class;
                pool.live += class;
                return Ok((ptr, class, pool.pins.stamp()));
            }
        }
        let ptr = match rt.alloc(class) {
            Ok(ptr) => ptr,
            Err(first) => {
                // Out of memory, most likely: give the cache back and try once more.
                if self.trim(rt)? == 0 {
                    return Err(first);
                }
                rt.alloc(class)?
            }
        };
        let mut pool = self.lock();
        pool.live += class;
        Ok((ptr, class, pool.pins.stamp()))
    }

    /// Takes a block back for reuse (or parks it, while a plan may touch it).
    pub(crate) fn release(&self, ptr: DevicePtr, class: usize, serial: u64) {
        let mut pool = self.lock();
        pool.live -= class;
        let back = pool.pins.release((ptr, class), serial);
        pool.cache(back);
    }

    /// A capture starts: no block released from now on is reused until [`Allocator::unpin`].
    pub(crate) fn pin(&self) {
        self.lock().pins.begin();
    }

    /// The capture ended: the blocks handed out so far stay pinned by the returned bound.
    pub(crate) fn pinned(&self) -> u64 {
        self.lock().pins.end()
    }

    /// Pin `bound` goes (a plan dropped, or `u64::MAX`: a capture abandoned).
    pub(crate) fn unpin(&self, bound: u64) {
        let mut pool = self.lock();
        let back = pool.pins.unpin(bound);
        pool.cache(back);
    }

    /// Frees every cached block (after the stream is idle); returns how many it freed.
    pub(crate) fn trim<R: Runtime>(&self, rt: &R) -> Result<usize> {
        // Freeing waits for the whole device: not while another thread captures.
        super::gate::alone(|| self.trim_now(rt))
    }

    fn trim_now<R: Runtime>(&self, rt: &R) -> Result<usize> {
        if rt.capturing() {
            return Err(Error::Capture { msg: "device memory ran out inside a capture".into() });
        }
        rt.synchronize()?;
        let blocks: Vec<DevicePtr> = {
            let mut pool = self.lock();
            pool.cached = 0;
            pool.free.drain().flat_map(|(_, v)| v).collect()
        };
        let mut freed = 0;
        let mut first_err = None;
        for ptr in blocks {
            // SAFETY: cached blocks belong to no storage, and the stream is idle, so no queued
            // work uses them.
            match unsafe { rt.free(ptr) } {
                Ok(()) => freed += 1,
                Err(e) => first_err = first_err.or(Some(e)),
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(freed),
        }
    }

    pub(crate) fn stats(&self) -> PoolStats {
        let pool = self.lock();
        PoolStats { live: pool.live, cached: pool.cached }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_hold_the_request_and_waste_under_a_quarter() {
        assert_eq!(size_class(1), MIN_BLOCK);
        assert_eq!(size_class(513), 640);
        assert_eq!(size_class(1024), 1024);
        assert_eq!(size_class(1025), 1280);
        for bytes in (1..100_000).step_by(37).chain([1 << 30, (1 << 30) + 1, 3 << 29]) {
            let c = size_class(bytes);
            assert!(c >= bytes && (c <= MIN_BLOCK || (c - bytes) * 4 < c), "{bytes} -> {c}");
            assert_eq!(size_class(c), c, "classes are fixed points");
        }
    }
}
