//! argsort on the cpu: a stable sort of each row's indices under a total order of the keys.

use super::elementwise::Arith;
use super::{CpuBackend, CpuStorage};
use crate::backend::SortOps;
use crate::{Error, Layout, Result, with_storage};
use std::cmp::Ordering;

/// Numbers by value (-0.0 equals 0.0), every NaN above every number and equal to every NaN.
fn key_order<T: Arith>(a: &T, b: &T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

fn argsort_vec<T: Arith>(v: &[T], l: &Layout, descending: bool) -> Result<Vec<u32>> {
    let Some((&n, outer_dims)) = l.dims().split_last() else {
        return Err(Error::Rank { op: "argsort", expected: "at least 1", shape: l.shape().clone() });
    };
    let rank = l.rank();
    let step = l.strides()[rank - 1];
    let rows = Layout::new(outer_dims.to_vec(), l.strides()[..rank - 1].to_vec(), l.offset());
    let mut out = Vec::with_capacity(l.elem_count());
    let (mut keys, mut ids) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for base in rows.strided_index() {
        keys.clear();
        keys.extend((0..n).map(|k| v[base + k * step]));
        ids.clear();
        // The spec caps rows at u32::MAX elements.
        ids.extend(0..n as u32);
        // sort_by is stable; reversing the comparison (not the result) keeps ties in order.
        if descending {
            ids.sort_by(|&i, &j| key_order(&keys[j as usize], &keys[i as usize]));
        } else {
            ids.sort_by(|&i, &j| key_order(&keys[i as usize], &keys[j as usize]));
        }
        out.extend_from_slice(&ids);
    }
    Ok(out)
}

impl SortOps for CpuBackend {
    fn argsort(&self, x: &CpuStorage, l: &Layout, descending: bool) -> Result<CpuStorage> {
        with_storage!(x, v => argsort_vec(v, l, descending)).map(CpuStorage::U32)
    }
}
