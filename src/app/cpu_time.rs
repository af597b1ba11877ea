//! CPU time the calling thread has had (`CLOCK_THREAD_CPUTIME_ID`): against the wall clock,
//! whether a loop of recording worked or waited. Shared by the bench (`bench.rs`, through
//! `super::`) and the examples (`examples/common/mod.rs`, by `#[path]`).

use std::time::Duration;

/// The calling thread's CPU time so far; `None` where the platform has no such clock.
#[cfg(unix)]
pub fn thread_cpu() -> Option<Duration> {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to write.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

/// The calling thread's CPU time so far; `None` where the platform has no such clock.
#[cfg(not(unix))]
pub fn thread_cpu() -> Option<Duration> {
    None
}
