//! Elementwise ops on the native backend (`hip/elementwise.hip`): every op is one strided map
//! kernel named by the spec (`exp_f32`, `cast_f16_i64`, `where_cond_f32_u8`), over inputs of
//! one shape (broadcast already applied through stride-0 dims) into a new contiguous output.
//! Each launch takes the op's fastest kernel its layouts allow (see [`NativeBackend::walk`]).

use super::kernel::{self, Arg, Args, BLOCK, Part, Path, TILE_THREADS};
use super::ptr::DevicePtr;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::{ElementwiseOps, one_at_a_time};
use crate::expr::program::Program;
use crate::spec::elementwise::{BinaryOp, CmpOp, ElementwiseOp, ScalarOp, UnaryOp, cast_kernel_name};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result, Scalar};

/// The kernel name of where_cond for values of `dtype` and a condition of `cond`.
pub fn where_kernel_name(dtype: DType, cond: DType) -> String {
    format!("{}_{cond}", kernel_name(ElementwiseOp::WhereCond.name(), dtype))
}

/// Where a walk's output goes, for choosing its kernel.
#[derive(Clone, Copy)]
pub(crate) enum Output {
    /// Contiguous from element 0 of the walk at this address, elements of this dtype.
    Dense(DevicePtr, DType),
    /// Through the view of the (only) operand, as fill writes.
    Operand,
}

impl<R: Runtime> NativeBackend<R> {
    /// Launches kernel `name` of `family` once per part of the walk through `operands` (layout,
    /// storage address, dtype; one shape), as [`NativeBackend::strided`] does, but
    /// each part as the fastest variant its layouts allow: `{name}_vec` where every operand
    /// moves in aligned 16-byte chunks, `{name}_tiled` (if `tiled`: the op has one) where an
    /// input is stored transposed to the walk, else `{name}`. The variants share parameters.
    ///
    /// # Safety
    /// As [`NativeBackend::strided`], for `{name}` and each variant.
    pub(crate) unsafe fn walk(
        &self,
        family: Family,
        name: &str,
        operands: &[(&Layout, DevicePtr, DType)],
        out: Output,
        tiled: bool,
        mut tail: impl FnMut(&Part, &mut Args),
    ) -> Result<()> {
        let strided: Vec<kernel::Strided> = operands.iter().map(|o| (o.0.strides(), o.0.offset())).collect();
        let addrs: Vec<(u64, usize)> = operands.iter().map(|o| (o.1.0, o.2.size_in_bytes())).collect();
        for part in kernel::plan(operands[0].0.dims(), &strided) {
            let dense = match out {
                Output::Dense(p, dt) => Some((p.0 + part.first * dt.size_in_bytes() as u64, dt.size_in_bytes())),
                Output::Operand => None,
            };
            let path = kernel::vec_path(&part, &addrs, dense)
                .or_else(|| if tiled && dense.is_some() { kernel::tiled_path(&part) } else { None })
                .unwrap_or(Path::Strided);
            let mut args = Args::default();
            args.pod(&part.dims);
            for v in &part.views {
                args.pod(v);
            }
            tail(&part, &mut args);
            let variant = format!("{name}{}", path.suffix());
            // SAFETY: the caller's contract, for each part of the walk; the variants take the
            // parameters of `{name}`, `_vec` covers the part with `blocks` blocks of BLOCK threads
            // and `_tiled` with `blocks` tiles of TILE_THREADS.
            unsafe {
                match path {
                    Path::Strided => self.launch(family, name, part.dims.n, &mut args)?,
                    Path::Vec { blocks } => self.launch_grid(family, &variant, [blocks, 1, 1], BLOCK, &mut args)?,
                    Path::Tiled { blocks } => {
                        self.launch_grid(family, &variant, [blocks, 1, 1], TILE_THREADS, &mut args)?
                    }
                }
            }
        }
        Ok(())
    }

    /// `y[i] = kernel(inputs[..][i], scalars)` for every element of the inputs' shape, into a
    /// new contiguous storage of `out`; `tiled`: the kernel has a `_tiled` variant.
    fn map(
        &self,
        name: &str,
        inputs: &[(&NativeStorage<R>, &Layout)],
        out: DType,
        scalars: &[Arg],
        tiled: bool,
    ) -> Result<NativeStorage<R>> {
        let shape = inputs[0].1.dims();
        let y = self.storage(out, shape.iter().product())?;
        let operands: Vec<(&Layout, DevicePtr, DType)> = inputs.iter().map(|(s, l)| (*l, s.ptr, s.dtype)).collect();
        let tail = |part: &Part, args: &mut Args| {
            for (s, _) in inputs {
                args.ptr(s.ptr);
            }
            args.ptr(y.at(part.first as usize));
            for &a in scalars {
                args.arg(a);
            }
        };
        // SAFETY: every elementwise kernel and its variants take (Dims, one View per input, the
        // input pointers, the output pointer, the scalars in the compute type), which is what
        // `tail` appends after the views. The spec keeps each layout inside its storage, and
        // each part writes its own `n` elements of `y` from `first` on.
        unsafe { self.walk(Family::Elementwise, name, &operands, Output::Dense(y.ptr, out), tiled, tail)? };
        Ok(y)
    }
}

impl<R: Runtime> ElementwiseOps for NativeBackend<R> {
    fn fused(
        &self,
        p: &Program,
        inputs: &[(&NativeStorage<R>, &Layout)],
        params: &[Scalar],
    ) -> Result<NativeStorage<R>> {
        // A program of one step is its op's own kernel (with its vector and tiled forms).
        if p.steps.len() == 1 {
            return one_at_a_time(self, p, inputs, params);
        }
        self.run_fused(p, inputs, params)
    }

    fn unary(&self, x: &NativeStorage<R>, l: &Layout, op: UnaryOp) -> Result<NativeStorage<R>> {
        self.map(&kernel_name(op.name(), x.dtype), &[(x, l)], x.dtype, &[], false)
    }

    fn scalar_map(
        &self,
        x: &NativeStorage<R>,
        l: &Layout,
        op: ScalarOp,
        params: &[Scalar],
    ) -> Result<NativeStorage<R>> {
        let args: Vec<Arg> = params.iter().map(|&p| Arg::compute(x.dtype, p)).collect();
        self.map(&kernel_name(op.name(), x.dtype), &[(x, l)], x.dtype, &args, false)
    }

    fn binary(
        &self,
        lhs: &NativeStorage<R>,
        ll: &Layout,
        rhs: &NativeStorage<R>,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<NativeStorage<R>> {
        self.map(&kernel_name(op.name(), lhs.dtype), &[(lhs, ll), (rhs, rl)], lhs.dtype, &[], true)
    }

    fn cmp(
        &self,
        lhs: &NativeStorage<R>,
        ll: &Layout,
        rhs: &NativeStorage<R>,
        rl: &Layout,
        op: CmpOp,
    ) -> Result<NativeStorage<R>> {
        self.map(&kernel_name(op.name(), lhs.dtype), &[(lhs, ll), (rhs, rl)], DType::U8, &[], false)
    }

    fn where_cond(
        &self,
        cond: &NativeStorage<R>,
        cl: &Layout,
        on_true: &NativeStorage<R>,
        tl: &Layout,
        on_false: &NativeStorage<R>,
        fl: &Layout,
    ) -> Result<NativeStorage<R>> {
        let name = where_kernel_name(on_true.dtype, cond.dtype);
        self.map(&name, &[(cond, cl), (on_true, tl), (on_false, fl)], on_true.dtype, &[], false)
    }

    fn cast(&self, x: &NativeStorage<R>, l: &Layout, to: DType) -> Result<NativeStorage<R>> {
        self.map(&cast_kernel_name(x.dtype, to), &[(x, l)], to, &[], false)
    }
}
