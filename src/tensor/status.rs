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

/// Flags as statuses hold them: one list shared by every status that holds the same flags (an
/// op's output holds its inputs' flags), so that handing them on costs a reference count, not a
/// copy of the list.
#[derive(Clone, Default)]
pub(crate) struct Flags(Option<Arc<List>>);

type List = Vec<Arc<Flag>>;

impl Flags {
    /// `flag` alone.
    pub(crate) fn one(flag: Arc<Flag>) -> Flags {
        Flags(Some(Arc::new(vec![flag])))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Flag>> {
        self.0.iter().flat_map(|v| v.iter())
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |v| v.len())
    }

    fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The flags of `sets`, each once, in order of first appearance: the first non-empty set
    /// itself where every other is that set or empty.
    pub(crate) fn union(sets: impl IntoIterator<Item = Flags>) -> Flags {
        let (mut first, mut merged): (Option<Arc<List>>, Option<List>) = (None, None);
        for set in sets.into_iter().filter_map(|s| s.0) {
            match (&first, &mut merged) {
                (None, _) => first = Some(set),
                (Some(f), None) if Arc::ptr_eq(f, &set) => {}
                (Some(f), None) => merged = Some(adding(f.to_vec(), &set)),
                (Some(_), Some(m)) => *m = adding(std::mem::take(m), &set),
            }
        }
        Flags(merged.map(Arc::new).or(first))
    }

    /// These flags less those read clean (the same list where none is).
    fn unsettled(&self) -> Flags {
        match &self.0 {
            Some(v) if v.iter().any(|f| f.clean()) => {
                let left: List = v.iter().filter(|f| !f.clean()).cloned().collect();
                Flags((!left.is_empty()).then(|| Arc::new(left)))
            }
            _ => self.clone(),
        }
    }
}

impl FromIterator<Arc<Flag>> for Flags {
    fn from_iter<I: IntoIterator<Item = Arc<Flag>>>(flags: I) -> Flags {
        let list = adding(List::new(), &flags.into_iter().collect::<List>());
        Flags((!list.is_empty()).then(|| Arc::new(list)))
    }
}

/// `held` and the flags of `more` it lacks.
fn adding(mut held: List, more: &[Arc<Flag>]) -> List {
    for f in more {
        if !held.iter().any(|h| Arc::ptr_eq(h, f)) {
            held.push(f.clone());
        }
    }
    held
}

impl Flag {
    /// Read, and found to record no failure.
    fn clean(&self) -> bool {
        matches!(self.read.get(), Some(Ok(())))
    }
}

/// The flags a storage's data depends on that are not known to be clean.
#[derive(Default)]
pub(crate) struct Status(Mutex<Flags>);

impl Status {
    fn lock(&self) -> MutexGuard<'_, Flags> {
        // A panic while the list is held cannot leave it half-updated.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A status holding the flags of `sets` for a new output on `dev`, each once; past
    /// [`MAX_UNREAD`], those known to be clean are left out, and if still past it the flags are
    /// read now.
    pub(crate) fn of(sets: impl IntoIterator<Item = Flags>, dev: &Device) -> Status {
        let mut flags = Flags::union(sets);
        if flags.len() > MAX_UNREAD {
            flags = flags.unsettled();
        }
        let s = Status(Mutex::new(flags));
        s.bound(dev);
        s
    }

    /// The flags held now (cheap: a shared list, empty unless an index op is upstream).
    pub(crate) fn flags(&self) -> Flags {
        self.lock().clone()
    }

    /// Adds the flags of `sets` (data written into this storage now depends on them), and
    /// forgets those held that are known to be clean (a tensor written in place again and
    /// again, such as a KV cache, would otherwise hold every flag of its writes). Past
    /// [`MAX_UNREAD`] the flags are read now, as for a new output ([`Status::of`]): a tensor
    /// written in place without a read between (a cache filled by `scatter_set` in a loop) held
    /// every flag, each op copying the growing list and no flag buffer coming back to its pool
    /// (callgrind, lavapipe: 60,200 instructions a `scatter_set` over 1000 writes).
    pub(crate) fn absorb(&self, sets: impl IntoIterator<Item = Flags>, dev: &Device) {
        {
            let mut held = self.lock();
            *held = Flags::union(std::iter::once(held.clone()).chain(sets)).unsettled();
        }
        self.bound(dev);
    }

    /// Reads the flags now (one wait) if more than [`MAX_UNREAD`] are held. A browser cannot
    /// wait inside an op: there they wait for the tensor's readback.
    fn bound(&self, dev: &Device) {
        if self.lock().len() > MAX_UNREAD && cfg!(not(target_family = "wasm")) {
            // A failure stays in the status and is returned by the tensor's readbacks.
            let _ = crate::block::block_on(self.resolve(dev));
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
        {
            let mut now = self.lock();
            *now = now.unsettled();
        }
        match held.iter().find_map(|f| f.read.get().and_then(|r| r.clone().err())) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
