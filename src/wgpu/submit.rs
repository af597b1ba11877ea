//! Batches handed to a thread that submits them (native targets), so that the recording thread
//! does not pay for wgpu-core's encoding of a pass, its `maintain` and the driver's submit. The
//! queue sees the batches in the order they were handed over; the recording side touches the
//! queue itself only after [`Submitter::join`] (ARCHITECTURE.md, the WGSL path).

/// One batch as the thread submits it: the metadata arena's words are written first, the
/// encoder finished and submitted, then the buffers retired with it destroyed.
pub(crate) struct Batch {
    pub encoder: wgpu::CommandEncoder,
    pub meta: Option<(wgpu::Buffer, Vec<u32>)>,
    pub retired: Vec<wgpu::Buffer>,
}

impl Batch {
    pub(crate) fn submit(self, queue: &wgpu::Queue) {
        if let Some((arena, words)) = &self.meta {
            queue.write_buffer(arena, 0, bytemuck::cast_slice(words));
        }
        queue.submit([self.encoder.finish()]);
        // Submitted work that uses them still completes (WebGPU's and wgpu-core's rule).
        self.retired.iter().for_each(wgpu::Buffer::destroy);
    }
}

#[cfg(not(target_family = "wasm"))]
pub(crate) use thread::Submitter;

#[cfg(not(target_family = "wasm"))]
mod thread {
    use super::Batch;
    use std::sync::mpsc::{Sender, channel};
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    /// Batches waiting for the thread before [`Submitter::send`] blocks: a bound on the memory
    /// of encoded work the GPU has not been given.
    const MAX_WAITING: usize = 4;

    /// The thread, started at the first batch handed over; joined when dropped, after it has
    /// submitted every batch.
    #[derive(Default)]
    pub(crate) struct Submitter {
        worker: Option<Worker>,
        /// A wait before each batch (tests).
        delay: Option<Duration>,
    }

    struct Worker {
        tx: Option<Sender<Batch>>,
        /// Batches handed over and not yet submitted, and the signal that the count fell.
        waiting: Arc<(Mutex<usize>, Condvar)>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Worker {
        fn start(queue: &wgpu::Queue, delay: Option<Duration>) -> Option<Worker> {
            let (tx, rx) = channel::<Batch>();
            let waiting = Arc::new((Mutex::new(0usize), Condvar::new()));
            let (queue, count) = (queue.clone(), waiting.clone());
            let thread = std::thread::Builder::new().name("rwo-wgpu-submit".into()).spawn(move || {
                for batch in rx {
                    // Counted down even if wgpu panics in the submit, so that no join hangs.
                    let _done = Done(&count);
                    delay.into_iter().for_each(std::thread::sleep);
                    batch.submit(&queue);
                }
            });
            Some(Worker { tx: Some(tx), waiting, thread: Some(thread.ok()?) })
        }

        /// Waits until at most `n` batches are waiting.
        fn wait_for(&self, n: usize) {
            let (count, fell) = &*self.waiting;
            let mut waiting = count.lock().unwrap_or_else(|e| e.into_inner());
            while *waiting > n {
                waiting = fell.wait(waiting).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    /// Counts one waiting batch down when dropped.
    struct Done<'a>(&'a (Mutex<usize>, Condvar));

    impl Drop for Done<'_> {
        fn drop(&mut self) {
            let (count, fell) = self.0;
            *count.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
            fell.notify_all();
        }
    }

    impl Submitter {
        pub(crate) fn new(delay: Option<Duration>) -> Submitter {
            Submitter { worker: None, delay }
        }

        /// Hands `batch` to the thread (started now if it is not running); submits it here if
        /// no thread can be started.
        pub(crate) fn send(&mut self, queue: &wgpu::Queue, batch: Batch) {
            if self.worker.is_none() {
                self.worker = Worker::start(queue, self.delay);
            }
            let Some(w) = &self.worker else { return batch.submit(queue) };
            w.wait_for(MAX_WAITING - 1);
            *w.waiting.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            if let Some(Err(e)) = w.tx.as_ref().map(|tx| tx.send(batch)) {
                // The thread is gone (only a panic in wgpu ends it): submit here.
                drop(Done(&w.waiting));
                e.0.submit(queue);
            }
        }

        /// Returns once every batch handed over has been submitted.
        pub(crate) fn join(&self) {
            if let Some(w) = &self.worker {
                w.wait_for(0);
            }
        }
    }

    impl Drop for Worker {
        fn drop(&mut self) {
            // Closing the channel ends the thread's loop once it has submitted what it holds.
            self.tx = None;
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// A browser has no threads to submit from: batches are submitted at once.
#[cfg(target_family = "wasm")]
#[derive(Default)]
pub(crate) struct Submitter;

#[cfg(target_family = "wasm")]
impl Submitter {
    pub(crate) fn new(_: Option<std::time::Duration>) -> Submitter {
        Submitter
    }

    pub(crate) fn send(&mut self, queue: &wgpu::Queue, batch: Batch) {
        batch.submit(queue);
    }

    pub(crate) fn join(&self) {}
}
