//! How an op makes a tensor: its output admitted, its inputs' storages read-locked once each and
//! reached in the backend's own type, and the output made with its inputs' statuses.

use super::Tensor;
use super::status::{Flag, Flags, Status};
use crate::backend::{BackendStorage, Memory};
use crate::device::{BackendOf, Storage, dispatch};
use crate::spec::{Family, Out};
use crate::{Result, Shape};
use smallvec::SmallVec;
use std::sync::{Arc, RwLockReadGuard};

/// An op in flight: its output shape checked, the distinct storages of its inputs read-locked
/// once each (a storage shared by two operands is locked once). Its output inherits the status
/// of every input ([`super::status`]) in [`Run::finish`], the one way an op makes a tensor.
/// (Operands inline up to four: recording a small op allocates nothing for them.)
pub(crate) struct Run<'a> {
    op: &'static str,
    owners: SmallVec<[&'a Tensor; 4]>,
    guards: SmallVec<[RwLockReadGuard<'a, Storage>; 4]>,
    shape: Shape,
}

impl<'a> Run<'a> {
    /// The storage of `t`, one of the operands passed to [`Tensor::run`], as backend `b`'s own;
    /// an error if `t` was not passed (an op must never compute on another operand's data).
    pub(super) fn arg<B: BackendOf>(&self, b: &B, t: &Tensor) -> Result<&B::Storage> {
        match self.owners.iter().position(|o| o.shares_storage(t)) {
            Some(i) => b.get(&self.guards[i]),
            None => Err(crate::Error::InvalidParam {
                op: self.op,
                msg: "an operand was not passed to Tensor::run (a bug in this crate)".into(),
            }),
        }
    }

    /// The output tensor: `storage` in the checked shape, with its inputs' flags.
    pub(super) fn finish(self, storage: Storage) -> Tensor {
        self.finish_flagged(storage, None)
    }

    /// As [`Run::finish`], plus the op's own flag (unless it can record nothing: the cpu
    /// reports failures at once).
    pub(super) fn finish_flagged(self, storage: Storage, own: Option<Arc<Flag>>) -> Tensor {
        let own = own.filter(|f| f.records()).map(Flags::one);
        let flags = self.owners.iter().map(|t| t.status().flags()).chain(own);
        let dev = self.owners[0].device.clone();
        Tensor::from_parts(storage, self.shape, Status::of(flags, &dev), &dev)
    }
}

/// Whether a new tensor `out` made by `op` of `family` on `dev` can exist: its shape, and where
/// the family computes on the host, whether the host can hold it (the cpu reference allocates
/// as it goes: a failure there would abort). Outputs, creations and `Tensor::run` all pass here.
pub(super) fn admit(dev: &crate::Device, family: Family, op: &'static str, out: &Out) -> Result<()> {
    out.shape.check(op, out.dtype)?;
    // The output and the f64 working copy some reference ops compute in; below a MiB the
    // check would cost more than it could save.
    let bytes = out.shape.elem_count().saturating_mul(out.dtype.size_in_bytes() + 8);
    if bytes > 1 << 20 && dev.on_host(family) {
        crate::host::reserve_host(op, bytes)?;
    }
    Ok(())
}

impl Tensor {
    /// Starts op `op` of `family` on `self` and `others` with output `out`: checks that the
    /// output shape can exist and, where the family computes on the host, that the host can
    /// hold a large output (the cpu reference allocates as it goes: a failure there would abort).
    pub(super) fn run<'a>(
        &'a self,
        family: Family,
        op: &'static str,
        others: &[&'a Tensor],
        out: &Out,
    ) -> Result<Run<'a>> {
        admit(&self.device, family, op, out)?;
        self.check_operands(op, std::iter::once(self).chain(others.iter().copied()))?;
        let mut r = Run { op, owners: SmallVec::new(), guards: SmallVec::new(), shape: out.shape.clone() };
        for t in std::iter::once(self).chain(others.iter().copied()) {
            if !r.owners.iter().any(|o| o.shares_storage(t)) {
                r.owners.push(t);
                r.guards.push(t.read()?);
            }
        }
        // An op that splits took such an operand before it got here (`parts.rs`).
        if let Some(Storage::Parts(p)) = r.guards.iter().map(|g| &**g).find(|s| matches!(s, Storage::Parts(_))) {
            return Err(p.unsplit(op));
        }
        Ok(r)
    }

    /// `LimitExceeded` for an operand with more elements than the device's kernels can walk
    /// (a broadcast view can be that large).
    pub(super) fn check_operands<'t>(
        &self,
        op: &'static str,
        operands: impl Iterator<Item = &'t Tensor>,
    ) -> Result<()> {
        let max = dispatch!(self.device, |b| b.max_elements());
        for t in operands {
            if t.elem_count() > max {
                let size = t.dtype.size_in_bytes() as u64;
                return Err(crate::Error::LimitExceeded {
                    backend: self.device.kind(),
                    what: format!("{op}: an operand of {} elements (at most {max} here)", t.elem_count()),
                    needed: (t.elem_count() as u64).saturating_mul(size),
                    limit: max as u64 * size,
                });
            }
        }
        Ok(())
    }

    /// A new, zeroed flag on this tensor's device, for a kernel to record a failure in.
    pub(super) fn new_flag(&self) -> Result<Arc<Flag>> {
        dispatch!(self.device, |b| {
            let f = b.new_flag()?;
            let records = !f.is_empty();
            Ok(Flag::new(b.wrap(f), records))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use crate::cpu::CpuBackend;

    #[test]
    fn an_operand_not_passed_to_run_is_an_error_not_another_operand() {
        let dev = crate::Device::cpu();
        let a = Tensor::from_vec(vec![1f32, 2.], [2], &dev).unwrap();
        let b = Tensor::from_vec(vec![3f32, 4.], [2], &dev).unwrap();
        let out = Out::new([2], DType::F32);
        let r = a.run(Family::Elementwise, "add", &[], &out).unwrap();
        assert!(r.arg(&CpuBackend, &a).is_ok());
        let e = r.arg(&CpuBackend, &b).unwrap_err();
        assert!(matches!(e, crate::Error::InvalidParam { op: "add", .. }), "{e}");
        // A view of a passed operand shares its storage: it is that operand's data.
        assert!(r.arg(&CpuBackend, &a.narrow(0, 1, 1).unwrap()).is_ok());
    }
}
