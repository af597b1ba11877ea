//! Errors travel with data. A failure a kernel finds in device data (an out-of-range id) is
//! recorded in a flag that belongs to the output the op made; every tensor computed from that
//! output inherits the flag, like a NaN. A readback resolves the flags its tensor holds: one
//! that recorded a failure makes every readback of every tensor holding it return that error,
//! in any thread; no other tensor ever sees it. Flags are device buffers owned here, so none is
//! reused before it is read. Recording an op adds no synchronisation: the flags of its inputs
//! are handed on as they are, and only a readback reads them.

use crate::backend::Memory;
use crate::device::{BackendOf, Storage, dispatch};
use crate::{Device, Result};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// One op's flag: a backend buffer its kernels write a failure into, and what it recorded
/// once read.
pub(crate) struct Flag {
    storage: Storage,
    /// Whether kernels can record in it (the cpu's flags are empty: it reports at once).
    records: bool,
    /// Made inside a capture: each run of the plan zeroes and rewrites it (a plan's outputs
    /// get copies of these; flags made before the capture stay as they are).
    replayed: bool,
    read: OnceLock<Result<()>>,
}

impl Flag {
    pub(crate) fn new(storage: Storage, records: bool) -> Arc<Flag> {
        let replayed = crate::device::capturing();
        Arc::new(Flag { storage, records, replayed, read: OnceLock::new() })
    }

    pub(crate) fn storage(&self) -> &Storage {
        &self.storage
    }

    pub(crate) fn records(&self) -> bool {
        self.records
    }

    pub(crate) fn replayed(&self) -> bool {
        self.replayed
    }
}

/// Unread flags a status holds before an op resolves them (one wait): a long chain of flagged
/// ops without a readback (an index_add in a loop) stays bounded in memory and in the cost of
/// handing statuses on.
const MAX_UNREAD: usize = 32;

/// The flags a storage's data depends on that are not known to be clean.
#[derive(Default)]
pub(crate) struct Status(Mutex<Vec<Arc<Flag>>>);

impl Status {
    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Flag>>> {
        // A panic while the list is held cannot leave it half-updated.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A status holding `flags`, each once, for a new output on `dev`; flags known to be clean
    /// are left out, and past [`MAX_UNREAD`] the flags are read now.
    pub(crate) fn of(flags: Vec<Arc<Flag>>, dev: &Device) -> Status {
        let s = Status::default();
        s.absorb(flags.into_iter().filter(|f| !matches!(f.read.get(), Some(Ok(())))).collect());
        // A browser cannot wait here: there the flags wait for the output's readback.
        if s.lock().len() > MAX_UNREAD && cfg!(not(target_family = "wasm")) {
            // A failure stays in the status and is returned by the output's readbacks.
            let _ = crate::block::block_on(s.resolve(dev));
        }
        s
    }

    /// The flags held now (cheap: the list is empty unless an index op is upstream).
    pub(crate) fn flags(&self) -> Vec<Arc<Flag>> {
        self.lock().clone()
    }

    /// Adds `flags` (data written into this storage now depends on them), and forgets those
    /// held that are known to be clean (a tensor written in place again and again, such as a
    /// KV cache, would otherwise hold every flag of its writes).
    pub(crate) fn absorb(&self, flags: Vec<Arc<Flag>>) {
        if flags.is_empty() {
            return;
        }
        let mut held = self.lock();
        held.retain(|f| !matches!(f.read.get(), Some(Ok(()))));
        for f in flags {
            if !held.iter().any(|h| Arc::ptr_eq(h, &f)) {
                held.push(f);
            }
        }
    }

    /// `Ok` if no flag held records a failure, else the first failure; reads the flags not
    /// read yet (one wait on the device) and forgets the clean ones.
    pub(crate) async fn resolve(&self, dev: &Device) -> Result<()> {
        let held = self.flags();
        if held.is_empty() {
            return Ok(());
        }
        let unread: Vec<&Arc<Flag>> = held.iter().filter(|f| f.read.get().is_none()).collect();
        if !unread.is_empty() {
            let pending = dispatch!(dev, |b| {
                let storages = unread.iter().map(|f| b.get(&f.storage)).collect::<Result<Vec<_>>>()?;
                b.read_flags(&storages)
            });
            let results = pending.wait().await?;
            for (f, r) in unread.iter().zip(results) {
                // Another thread may have read it first; both read the same words.
                let _ = f.read.set(r);
            }
        }
        let clean = |f: &Arc<Flag>| matches!(f.read.get(), Some(Ok(())));
        self.lock().retain(|f| !clean(f));
        match held.iter().find_map(|f| f.read.get().and_then(|r| r.clone().err())) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
