//! Captures and the work that waits for a whole GPU. A capture records one stream; a call that
//! waits for every stream of the context (freeing device memory, making or destroying a vendor
//! library's handle, unloading a module) invalidates it, from whichever thread and whichever
//! `Device` on that GPU it comes (they share the runtime's primary context). So such work
//! waits here until no other thread captures, and no capture starts while it runs. One gate
//! for the process: it is rare work (a device opened or dropped, a library's first use, memory
//! given back), and a capture is short.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

#[derive(Default)]
struct State {
    /// The threads capturing now (one entry per capture under way).
    capturing: Vec<ThreadId>,
    /// The thread doing whole-GPU work, and how deeply (it may nest).
    alone: Option<(ThreadId, usize)>,
}

static STATE: Mutex<State> = Mutex::new(State { capturing: Vec::new(), alone: None });
static CHANGED: Condvar = Condvar::new();

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

fn wait(s: MutexGuard<'static, State>) -> MutexGuard<'static, State> {
    CHANGED.wait(s).unwrap_or_else(|e| e.into_inner())
}

/// Runs `f`, whole-GPU work, once no other thread captures; no capture starts until it
/// returns. A thread that captures itself runs it at once (waiting for its own capture would
/// never end; the runtime then fails that capture with an error).
pub(crate) fn alone<T>(f: impl FnOnce() -> T) -> T {
    let me = std::thread::current().id();
    let mut s = state();
    loop {
        let others_capture = s.capturing.iter().any(|&t| t != me);
        let mine_capture = s.capturing.contains(&me);
        match s.alone {
            Some((t, depth)) if t == me => {
                s.alone = Some((me, depth + 1));
                break;
            }
            None if mine_capture || !others_capture => {
                s.alone = Some((me, 1));
                break;
            }
            _ => s = wait(s),
        }
    }
    drop(s);
    /// Leaves the gate when `f` returns or unwinds.
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            let mut s = state();
            s.alone = match s.alone {
                Some((t, depth)) if depth > 1 => Some((t, depth - 1)),
                _ => None,
            };
            CHANGED.notify_all();
        }
    }
    let _leave = Leave;
    f()
}

/// The calling thread starts a capture: waits while another thread does whole-GPU work.
pub(crate) fn capture_begins() {
    let me = std::thread::current().id();
    let mut s = state();
    while s.alone.is_some_and(|(t, _)| t != me) {
        s = wait(s);
    }
    s.capturing.push(me);
}

/// The calling thread's capture ended (made a graph, failed or was abandoned).
pub(crate) fn capture_ends() {
    let me = std::thread::current().id();
    let mut s = state();
    if let Some(i) = s.capturing.iter().position(|&t| t == me) {
        s.capturing.swap_remove(i);
    }
    CHANGED.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn whole_gpu_work_waits_for_another_threads_capture() {
        let ended = AtomicBool::new(false);
        capture_begins();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| alone(|| ended.load(Ordering::SeqCst)));
            std::thread::sleep(Duration::from_millis(50));
            // The capturing thread itself is not held up, nested or not.
            assert_eq!(alone(|| alone(|| 7)), 7);
            ended.store(true, Ordering::SeqCst);
            capture_ends();
            assert!(waiter.join().unwrap(), "ran before the capture ended");
        });
    }
}
