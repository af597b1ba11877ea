//! Elementwise ops on the native backend (`hip/elementwise.hip`): every op is one strided map
//! kernel named by the spec (`exp_f32`, `cast_f16_i64`, `where_cond_f32_u8`), over inputs of
//! one shape (broadcast already applied through stride-0 dims) into a new contiguous output.

use super::kernel::Arg;
use super::{NativeBackend, NativeStorage, Runtime};
use crate::backend::ElementwiseOps;
use crate::spec::elementwise::{BinaryOp, CmpOp, ElementwiseOp, UnaryOp, cast_kernel_name};
use crate::spec::{Family, kernel_name};
use crate::{DType, Layout, Result, Scalar};

/// The kernel name of where_cond for values of `dtype` and a condition of `cond`.
pub fn where_kernel_name(dtype: DType, cond: DType) -> String {
    format!("{}_{cond}", kernel_name(ElementwiseOp::WhereCond.name(), dtype))
}

impl<R: Runtime> NativeBackend<R> {
    /// `y[i] = kernel(inputs[..][i], scalars)` for every element of the inputs' shape, into a
    /// new contiguous storage of `out`.
    fn map(
        &self,
        name: &str,
        inputs: &[(&NativeStorage<R>, &Layout)],
        out: DType,
        scalars: &[Arg],
    ) -> Result<NativeStorage<R>> {
        let shape = inputs[0].1.dims();
        let y = self.storage(out, shape.iter().product())?;
        let layouts: Vec<&Layout> = inputs.iter().map(|i| i.1).collect();
        let tail = |part: &super::Part, args: &mut super::Args| {
            for (s, _) in inputs {
                args.ptr(s.ptr);
            }
            args.ptr(y.at(part.first as usize));
            for &a in scalars {
                args.arg(a);
            }
        };
        // SAFETY: every elementwise kernel takes (Dims, one View per input, the input pointers,
        // the output pointer, the scalars in the compute type), which is what `tail` appends
        // after the views. The spec keeps each layout inside its storage, and each part writes
        // its own `n` elements of `y` from `first` on.
        unsafe { self.strided(Family::Elementwise, name, shape, &layouts, tail)? };
        Ok(y)
    }

    fn scalar_map(&self, op: ElementwiseOp, x: &NativeStorage<R>, l: &Layout, v: &[f64]) -> Result<NativeStorage<R>> {
        let args: Vec<Arg> = v.iter().map(|&p| Arg::compute(x.dtype, Scalar::F64(p))).collect();
        self.map(&kernel_name(op.name(), x.dtype), &[(x, l)], x.dtype, &args)
    }
}

impl<R: Runtime> ElementwiseOps for NativeBackend<R> {
    fn unary(&self, x: &NativeStorage<R>, l: &Layout, op: UnaryOp) -> Result<NativeStorage<R>> {
        self.map(&kernel_name(op.name(), x.dtype), &[(x, l)], x.dtype, &[])
    }

    fn affine(&self, x: &NativeStorage<R>, l: &Layout, mul: f64, add: f64) -> Result<NativeStorage<R>> {
        self.scalar_map(ElementwiseOp::Affine, x, l, &[mul, add])
    }

    fn powf(&self, x: &NativeStorage<R>, l: &Layout, e: f64) -> Result<NativeStorage<R>> {
        self.scalar_map(ElementwiseOp::Powf, x, l, &[e])
    }

    fn elu(&self, x: &NativeStorage<R>, l: &Layout, alpha: f64) -> Result<NativeStorage<R>> {
        self.scalar_map(ElementwiseOp::Elu, x, l, &[alpha])
    }

    fn clamp(&self, x: &NativeStorage<R>, l: &Layout, min: Scalar, max: Scalar) -> Result<NativeStorage<R>> {
        let args = [Arg::compute(x.dtype, min), Arg::compute(x.dtype, max)];
        self.map(&kernel_name(ElementwiseOp::Clamp.name(), x.dtype), &[(x, l)], x.dtype, &args)
    }

    fn binary(
        &self,
        lhs: &NativeStorage<R>,
        ll: &Layout,
        rhs: &NativeStorage<R>,
        rl: &Layout,
        op: BinaryOp,
    ) -> Result<NativeStorage<R>> {
        self.map(&kernel_name(op.name(), lhs.dtype), &[(lhs, ll), (rhs, rl)], lhs.dtype, &[])
    }

    fn cmp(
        &self,
        lhs: &NativeStorage<R>,
        ll: &Layout,
        rhs: &NativeStorage<R>,
        rl: &Layout,
        op: CmpOp,
    ) -> Result<NativeStorage<R>> {
        self.map(&kernel_name(op.name(), lhs.dtype), &[(lhs, ll), (rhs, rl)], DType::U8, &[])
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
        self.map(&name, &[(cond, cl), (on_true, tl), (on_false, fl)], on_true.dtype, &[])
    }

    fn cast(&self, x: &NativeStorage<R>, l: &Layout, to: DType) -> Result<NativeStorage<R>> {
        self.map(&cast_kernel_name(x.dtype, to), &[(x, l)], to, &[])
    }
}
