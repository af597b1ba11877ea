//! Every op of the spec as a tensor method: validate once with the spec, run on the device.

use super::Tensor;
use super::parts::{self, Split};
use super::status::Flags;
use super::{Dims, TensorOrScalar};
use crate::backend::*;
use crate::device::{BackendOf, dispatch};
use crate::expr::program::Op;
use crate::spec::conv::{Conv2, ConvOp, ConvParams, nchw};
use crate::spec::elementwise::{self as ew, BinaryOp, CmpOp, ScalarOp, UnaryOp};
use crate::spec::index::{self, ScatterMode};
use crate::spec::pool::{Pool2dParams, PoolOp};
use crate::spec::reduce::{self, ReduceOp};
use crate::spec::upsample::UpsampleOp;
use crate::spec::{self, Family, Out};
use crate::{D, DType, Dim, Error, Layout, Result, Scalar};

macro_rules! unary_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                #[doc = concat!("Elementwise `", stringify!($name), "` (see [`UnaryOp`]).")]
                pub fn $name(&self) -> Result<Tensor> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}
ew::each_unary_op!(unary_methods);

macro_rules! binary_methods {
    ($via:ident $ty:ident: $($name:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                #[doc = concat!("Elementwise `", stringify!($name), "` with broadcasting (see [`", stringify!($ty), "`]); `rhs` is a tensor or a scalar ([`TensorOrScalar`]).")]
                pub fn $name(&self, rhs: impl TensorOrScalar) -> Result<Tensor> {
                    let rhs = rhs.to_operand(self, $ty::$op.name())?;
                    self.$via(&rhs, $ty::$op)
                }
            )*
        }
    };
}
macro_rules! binary_op_methods {
    ($($t:tt)*) => {
        binary_methods!(binary BinaryOp: $($t)*);
    };
}
macro_rules! cmp_op_methods {
    ($($t:tt)*) => {
        binary_methods!(cmp CmpOp: $($t)*);
    };
}
ew::each_binary_op!(binary_op_methods);
ew::each_cmp_op!(cmp_op_methods);

macro_rules! reduce_methods {
    ($($name:ident, $keep:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                #[doc = concat!("`", stringify!($name), "` over `dims` (one or several: [`Dims`]), which are removed.")]
                pub fn $name(&self, dims: impl Dims) -> Result<Tensor> {
                    self.reduce(ReduceOp::$op, dims, false)
                }
                #[doc = concat!("`", stringify!($name), "` over `dims` (one or several: [`Dims`]), kept as size 1.")]
                pub fn $keep(&self, dims: impl Dims) -> Result<Tensor> {
                    self.reduce(ReduceOp::$op, dims, true)
                }
            )*
        }
    };
}
reduce_methods!(
    sum, sum_keepdim => Sum, min, min_keepdim => Min, max, max_keepdim => Max,
    argmin, argmin_keepdim => ArgMin, argmax, argmax_keepdim => ArgMax,
);

impl Tensor {
    pub(super) fn lay(&self) -> (&Layout, DType) {
        (&self.layout, self.dtype)
    }

    pub(super) fn same_device(&self, op: &'static str, others: &[&Tensor]) -> Result<()> {
        others.iter().try_for_each(|o| self.check_same_device(op, o))
    }

    /// The unary map `op` on every element (see [`crate::spec::elementwise::UnaryOp`]).
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        let out = ew::unary(op, &self.layout, self.dtype)?;
        if parts::needed(&out, &[self]) {
            return Split::pointwise(op.name(), &out, std::slice::from_ref(self)).run(|x| x[0].unary(op));
        }
        if let Some(t) = Tensor::defer(Op::Unary(op), &[self], &[&self.layout], &out, &[])? {
            return Ok(t);
        }
        let r = self.run(Family::Elementwise, op.name(), &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.unary(r.arg(b, self)?, &self.layout, op)?));
        Ok(r.finish(s))
    }

    /// `self * mul + add` (floats).
    pub fn affine(&self, mul: f64, add: f64) -> Result<Tensor> {
        self.scalar_map(ScalarOp::Affine, &mut [mul.into(), add.into()])
    }

    /// `self ^ e` (floats).
    pub fn powf(&self, e: f64) -> Result<Tensor> {
        self.scalar_map(ScalarOp::Powf, &mut [e.into()])
    }

    /// `x >= 0 ? x : alpha (exp(x) - 1)` (floats).
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        self.scalar_map(ScalarOp::Elu, &mut [alpha.into()])
    }

    /// Clamps into `[min, max]` (bounds cast to the tensor's dtype).
    pub fn clamp(&self, min: impl Into<Scalar>, max: impl Into<Scalar>) -> Result<Tensor> {
        self.scalar_map(ScalarOp::Clamp, &mut [min.into(), max.into()])
    }

    /// The map `op` with its scalar parameters (see [`ScalarOp`]).
    pub fn scalar_map(&self, op: ScalarOp, params: &mut [Scalar]) -> Result<Tensor> {
        let out = ew::scalar_map(op, &self.layout, self.dtype, params)?;
        if parts::needed(&out, &[self]) {
            let p = params.to_vec();
            return Split::pointwise(op.name(), &out, std::slice::from_ref(self))
                .run(|x| x[0].scalar_map(op, &mut p.clone()));
        }
        if let Some(t) = Tensor::defer(Op::Scalar(op, 0), &[self], &[&self.layout], &out, params)? {
            return Ok(t);
        }
        let r = self.run(Family::Elementwise, op.name(), &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.scalar_map(r.arg(b, self)?, &self.layout, op, params)?));
        Ok(r.finish(s))
    }

    /// The binary op `op` with `rhs`, both broadcast to a common shape.
    pub fn binary(&self, rhs: &Tensor, op: BinaryOp) -> Result<Tensor> {
        self.same_device(op.name(), &[rhs])?;
        let out = ew::binary_op(op, (&self.layout, self.dtype), (&rhs.layout, rhs.dtype))?;
        let (ll, rl) = (self.layout.broadcast_as(&out.shape)?, rhs.layout.broadcast_as(&out.shape)?);
        if parts::needed(&out, &[self, rhs]) {
            let xs = [self.view(ll), rhs.view(rl)];
            return Split::pointwise(op.name(), &out, &xs).run(|x| x[0].binary(&x[1], op));
        }
        if let Some(t) = Tensor::defer(Op::Binary(op), &[self, rhs], &[&ll, &rl], &out, &[])? {
            return Ok(t);
        }
        let r = self.run(Family::Elementwise, op.name(), &[rhs], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.binary(r.arg(b, self)?, &ll, r.arg(b, rhs)?, &rl, op)?));
        Ok(r.finish(s))
    }

    /// Comparison with broadcasting; u8 result.
    pub fn cmp(&self, rhs: &Tensor, op: CmpOp) -> Result<Tensor> {
        self.same_device(op.name(), &[rhs])?;
        let out = ew::cmp(op, (&self.layout, self.dtype), (&rhs.layout, rhs.dtype))?;
        let (ll, rl) = (self.layout.broadcast_as(&out.shape)?, rhs.layout.broadcast_as(&out.shape)?);
        if parts::needed(&out, &[self, rhs]) {
            let xs = [self.view(ll), rhs.view(rl)];
            return Split::pointwise(op.name(), &out, &xs).run(|x| x[0].cmp(&x[1], op));
        }
        if let Some(t) = Tensor::defer(Op::Cmp(op), &[self, rhs], &[&ll, &rl], &out, &[])? {
            return Ok(t);
        }
        let r = self.run(Family::Elementwise, op.name(), &[rhs], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.cmp(r.arg(b, self)?, &ll, r.arg(b, rhs)?, &rl, op)?));
        Ok(r.finish(s))
    }

    /// `self != 0 ? on_true : on_false`, all three broadcast; `self` is an integer tensor.
    pub fn where_cond(&self, on_true: &Tensor, on_false: &Tensor) -> Result<Tensor> {
        self.same_device("where_cond", &[on_true, on_false])?;
        let out = ew::where_cond(
            (&self.layout, self.dtype),
            (&on_true.layout, on_true.dtype),
            (&on_false.layout, on_false.dtype),
        )?;
        let cl = self.layout.broadcast_as(&out.shape)?;
        let tl = on_true.layout.broadcast_as(&out.shape)?;
        let fl = on_false.layout.broadcast_as(&out.shape)?;
        if parts::needed(&out, &[self, on_true, on_false]) {
            let xs = [self.view(cl), on_true.view(tl), on_false.view(fl)];
            return Split::pointwise("where_cond", &out, &xs).run(|x| x[0].where_cond(&x[1], &x[2]));
        }
        if let Some(t) = Tensor::defer(Op::Where, &[self, on_true, on_false], &[&cl, &tl, &fl], &out, &[])? {
            return Ok(t);
        }
        let r = self.run(Family::Elementwise, "where_cond", &[on_true, on_false], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.where_cond(
            r.arg(b, self)?,
            &cl,
            r.arg(b, on_true)?,
            &tl,
            r.arg(b, on_false)?,
            &fl
        )?));
        Ok(r.finish(s))
    }

    /// A copy converted to `dtype` (this tensor itself if it already has it).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let out = ew::cast(&self.layout, dtype)?;
        if parts::needed(&out, &[self]) {
            return Split::pointwise("cast", &out, std::slice::from_ref(self)).run(|x| x[0].to_dtype(dtype));
        }
        if let Some(t) = Tensor::defer(Op::Cast, &[self], &[&self.layout], &out, &[])? {
            return Ok(t);
        }
        let r = self.run(Family::Elementwise, "cast", &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.cast(r.arg(b, self)?, &self.layout, dtype)?));
        Ok(r.finish(s))
    }

    /// Reduces over `dims`, keeping them as size 1 when `keepdim`.
    pub fn reduce(&self, op: ReduceOp, dims: impl Dims, keepdim: bool) -> Result<Tensor> {
        let dims = dims.to_indexes(self.rank(), op.name())?;
        let red = reduce::reduce(op, &self.layout, self.dtype, &dims)?;
        let t = if parts::needed(&red.out, &[self]) {
            let split = Split::pointwise(op.name(), &red.out, std::slice::from_ref(self)).fixed(&red.dims);
            match split.run(|x| x[0].reduce(op, red.dims.clone(), true)) {
                Err(Error::LimitExceeded { .. }) if self.in_parts() => self.reduce_parts(op, &red.dims)?,
                r => r?,
            }
        } else {
            let r = self.run(Family::Reduce, op.name(), &[], &red.out)?;
            let s = dispatch!(self.device, |b| b.wrap(b.reduce(r.arg(b, self)?, &self.layout, op, &red.dims)?));
            r.finish(s)
        };
        if keepdim {
            return Ok(t);
        }
        let dims = red.out.shape.dims().iter().enumerate().filter(|(i, _)| !red.dims.contains(i)).map(|(_, &d)| d);
        t.reshape(dims.collect::<Vec<_>>())
    }

    /// The sum of every element, as a rank-0 tensor.
    pub fn sum_all(&self) -> Result<Tensor> {
        if self.rank() == 0 {
            return self.reshape([1])?.sum(0);
        }
        self.sum((0..self.rank()).collect::<Vec<_>>())
    }

    /// Rows of `self` along `dim` picked by the 1-D `ids`.
    pub fn index_select(&self, ids: &Tensor, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_index(self.rank(), "index_select")?;
        self.same_device("index_select", &[ids])?;
        let out = index::index_select((&self.layout, self.dtype), (&ids.layout, ids.dtype), dim)?;
        if parts::needed(&out, &[self, ids]) {
            if let Some(t) = self.select_across_parts(ids, dim, &out)? {
                return Ok(t);
            }
            // Along another dim than the select's, pieces; along it, part by part.
            let mut table: Vec<Option<usize>> = (0..out.shape.rank()).map(Some).collect();
            table[dim] = None;
            let mut at = vec![None; out.shape.rank()];
            at[dim] = Some(0);
            let split = Split::mapped("index_select", &out, vec![(self.clone(), table), (ids.clone(), at)]);
            return match split.run(|x| x[0].index_select(&x[1], dim)) {
                Err(Error::LimitExceeded { .. }) if self.in_parts() => {
                    let mut at = vec![1; out.shape.rank()];
                    at[dim] = ids.elem_count();
                    let spread = |m: Tensor| m.reshape(at.clone())?.broadcast_as(out.shape.clone());
                    self.pick_parts("index_select", ids, dim, |t, i| t.index_select(i, dim), spread)
                }
                r => r,
            };
        }
        let r = self.run(Family::Index, "index_select", &[ids], &out)?;
        let flag = self.new_flag()?;
        let s = dispatch!(self.device, |b| b.wrap(b.index_select(
            r.arg(b, self)?,
            &self.layout,
            r.arg(b, ids)?,
            &ids.layout,
            dim,
            b.get(flag.storage())?
        )?));
        Ok(r.finish_flagged(s, Some(flag)))
    }

    /// Elements of `self` along `dim` picked by `ids` (same rank as `self`).
    pub fn gather(&self, ids: &Tensor, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_index(self.rank(), "gather")?;
        self.same_device("gather", &[ids])?;
        let out = index::gather((&self.layout, self.dtype), (&ids.layout, ids.dtype), dim)?;
        if parts::needed(&out, &[self, ids]) {
            // Every dim but the gathered one with both; that one with the ids alone.
            let n = out.shape.rank();
            let table = (0..n).map(|i| (i != dim).then_some(i)).collect();
            let xs = vec![(self.clone(), table), (ids.clone(), (0..n).map(Some).collect())];
            return match Split::mapped("gather", &out, xs).run(|x| x[0].gather(&x[1], dim)) {
                Err(Error::LimitExceeded { .. }) if self.in_parts() => {
                    self.pick_parts("gather", ids, dim, |t, i| t.gather(i, dim), Ok)
                }
                r => r,
            };
        }
        let r = self.run(Family::Index, "gather", &[ids], &out)?;
        let flag = self.new_flag()?;
        let s = dispatch!(self.device, |b| b.wrap(b.gather(
            r.arg(b, self)?,
            &self.layout,
            r.arg(b, ids)?,
            &ids.layout,
            dim,
            b.get(flag.storage())?
        )?));
        Ok(r.finish_flagged(s, Some(flag)))
    }

    fn scatter_mode(&self, ids: &Tensor, src: &Tensor, dim: usize, mode: ScatterMode) -> Result<Tensor> {
        self.same_device(mode.op().name(), &[ids, src])?;
        let l = (&self.layout, self.dtype);
        let out = index::scatter(mode, l, (&ids.layout, ids.dtype), (&src.layout, src.dtype), dim)?;
        if self.in_parts() {
            // A copy (in parts too) written in place.
            let out = self.copy()?;
            out.scatter_in_place(ids, src, dim, mode)?;
            return Ok(out);
        }
        let r = self.run(Family::Index, mode.op().name(), &[ids, src], &out)?;
        let flag = self.new_flag()?;
        let s = dispatch!(self.device, |b| b.wrap(b.scatter(
            r.arg(b, self)?,
            &self.layout,
            r.arg(b, ids)?,
            &ids.layout,
            r.arg(b, src)?,
            &src.layout,
            dim,
            mode,
            b.get(flag.storage())?
        )?));
        Ok(r.finish_flagged(s, Some(flag)))
    }

    /// A copy of `self` with `src` written at `ids` along `dim`.
    pub fn scatter(&self, ids: &Tensor, src: &Tensor, dim: impl Dim) -> Result<Tensor> {
        self.scatter_mode(ids, src, dim.to_index(self.rank(), "scatter")?, ScatterMode::Set)
    }

    /// A copy of `self` with `src` added at `ids` along `dim`.
    pub fn scatter_add(&self, ids: &Tensor, src: &Tensor, dim: impl Dim) -> Result<Tensor> {
        self.scatter_mode(ids, src, dim.to_index(self.rank(), "scatter_add")?, ScatterMode::Add)
    }

    /// Writes `src` at `ids` along `dim` into this tensor, in place: [`Tensor::scatter`]
    /// without the copy, through a view too (the viewed tensor's elements change). A KV cache
    /// written at positions held on the device is one use: a captured [`crate::Plan`] then
    /// writes at the position each run is given. A broadcast destination is an error; on a GPU
    /// an id out of range is skipped and reported by the next read of this tensor (the cpu
    /// reports it here, writing nothing).
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let cache = Tensor::zeros((4, 2), rocm_wgpu_ops::DType::F32, &dev)?;
    /// let at = Tensor::from_vec(vec![2u32, 2], (1, 2), &dev)?;
    /// cache.scatter_set(&at, &Tensor::from_vec(vec![5f32, 6.], (1, 2), &dev)?, 0)?;
    /// assert_eq!(cache.to_vec2::<f32>()?, [[0., 0.], [0., 0.], [5., 6.], [0., 0.]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn scatter_set(&self, ids: &Tensor, src: &Tensor, dim: impl Dim) -> Result<()> {
        self.scatter_in_place(ids, src, dim.to_index(self.rank(), "scatter")?, ScatterMode::Set)
    }

    /// As [`Tensor::scatter_set`], adding `src` into this tensor at `ids` in place.
    pub fn scatter_add_set(&self, ids: &Tensor, src: &Tensor, dim: impl Dim) -> Result<()> {
        self.scatter_in_place(ids, src, dim.to_index(self.rank(), "scatter_add")?, ScatterMode::Add)
    }

    pub(super) fn scatter_in_place(&self, ids: &Tensor, src: &Tensor, dim: usize, mode: ScatterMode) -> Result<()> {
        let op = mode.op().name();
        self.same_device(op, &[ids, src])?;
        index::scatter_set(mode, self.lay(), ids.lay(), src.lay(), dim)?;
        self.check_operands(op, [self, ids, src].into_iter())?;
        if src.elem_count() == 0 {
            return Ok(());
        }
        // An operand sharing this tensor's storage would be read while it is written.
        let own = |t: &Tensor| if t.shares_storage(self) { t.copy() } else { Ok(t.clone()) };
        let (ids, src) = (own(ids)?, own(src)?);
        if self.in_parts() {
            return self.scatter_parts(&ids, &src, dim, mode);
        }
        let flag = self.new_flag()?;
        let own = Some(flag.clone()).filter(|f| f.records()).map(Flags::one);
        let flags = [ids.status().flags(), src.status().flags()].into_iter().chain(own);
        let (i, s) = (ids.read()?, src.read()?);
        let mut d = self.write()?;
        dispatch!(self.device, |b| b.scatter_set(
            b.get_mut(&mut d)?,
            &self.layout,
            b.get(&i)?,
            &ids.layout,
            b.get(&s)?,
            &src.layout,
            dim,
            mode,
            b.get(flag.storage())?
        ))?;
        // What this tensor holds now depends on the ids, the source and the op's own check (its
        // storages let go first: the absorb may wait to read the flags).
        drop((i, s, d));
        self.status().absorb(flags, &self.device);
        Ok(())
    }

    /// A copy of `self` with the slices of `src` added at the 1-D `ids` along `dim`.
    pub fn index_add(&self, ids: &Tensor, src: &Tensor, dim: impl Dim) -> Result<Tensor> {
        let dim = dim.to_index(self.rank(), "index_add")?;
        self.same_device("index_add", &[ids, src])?;
        let out =
            index::index_add((&self.layout, self.dtype), (&ids.layout, ids.dtype), (&src.layout, src.dtype), dim)?;
        if self.in_parts() {
            // A copy (in parts too) with the ids spread over the source added in place.
            let out = self.copy()?;
            if src.elem_count() == 0 {
                // Nothing to add, but the ids are checked as in one buffer: by the same op on a
                // one-element stand-in of this shape, whose flags the copy takes.
                let checked = self.stand_in(self.dtype)?.index_add(ids, src, dim)?;
                out.status().absorb([checked.status().flags()], &self.device);
                return Ok(out);
            }
            let spread = index::spread_ids(&ids.layout, src.shape(), dim);
            let ids = Tensor { layout: spread, ..ids.clone() };
            out.scatter_in_place(&ids, src, dim, ScatterMode::Add)?;
            return Ok(out);
        }
        let r = self.run(Family::Index, "index_add", &[ids, src], &out)?;
        let flag = self.new_flag()?;
        let s = dispatch!(self.device, |b| b.wrap(b.index_add(
            r.arg(b, self)?,
            &self.layout,
            r.arg(b, ids)?,
            &ids.layout,
            r.arg(b, src)?,
            &src.layout,
            dim,
            b.get(flag.storage())?
        )?));
        Ok(r.finish_flagged(s, Some(flag)))
    }

    /// `(N, C_in, L)` with kernel `(C_out, C_in / groups, K)`.
    pub fn conv1d(&self, kernel: &Tensor, p: &ConvParams<1>) -> Result<Tensor> {
        self.conv(kernel, ConvOp::Conv1d, p)
    }

    /// `(N, C_in, H, W)` with kernel `(C_out, C_in / groups, KH, KW)`.
    pub fn conv2d(&self, kernel: &Tensor, p: &ConvParams<2>) -> Result<Tensor> {
        self.conv(kernel, ConvOp::Conv2d, p)
    }

    /// `(N, C_in, L)` with kernel `(C_in, C_out / groups, K)`.
    pub fn conv_transpose1d(&self, kernel: &Tensor, p: &ConvParams<1>) -> Result<Tensor> {
        self.conv(kernel, ConvOp::ConvTranspose1d, p)
    }

    /// `(N, C_in, H, W)` with kernel `(C_in, C_out / groups, KH, KW)`.
    pub fn conv_transpose2d(&self, kernel: &Tensor, p: &ConvParams<2>) -> Result<Tensor> {
        self.conv(kernel, ConvOp::ConvTranspose2d, p)
    }

    pub(super) fn conv<const N: usize>(&self, k: &Tensor, op: ConvOp, p: &ConvParams<N>) -> Result<Tensor> {
        self.same_device(op.name(), &[k])?;
        let g = spec::conv::conv(op, (&self.layout, self.dtype), (&k.layout, k.dtype), p)?;
        if parts::needed(&g.out, &[self, k]) {
            // Images with images; output channels with the kernel's (one group: dim 0 of a
            // convolution's kernel, dim 1 of a transposed one's), the images whole.
            let n = g.out.shape.rank();
            let image = (0..n).map(|i| (i == 0).then_some(0)).collect();
            let mut channels = vec![None; n];
            channels[1] = (p.groups == 1).then_some(usize::from(op.is_transposed()));
            let xs = vec![(self.clone(), image), (k.clone(), channels)];
            return match Split::mapped(op.name(), &g.out, xs).run(|x| x[0].conv(&x[1], op, p)) {
                Err(Error::LimitExceeded { .. }) if (self.in_parts() || k.in_parts()) && p.groups == 1 => {
                    self.conv_parts(k, op, p)
                }
                r => r,
            };
        }
        let r = self.run(Family::Conv, op.name(), &[k], &g.out)?;
        let (c, xl, kl) = (Conv2::from(&g), nchw(&self.layout), nchw(&k.layout));
        let s = dispatch!(self.device, |b| b.wrap(b.conv(op, r.arg(b, self)?, &xl, r.arg(b, k)?, &kl, &c)?));
        Ok(r.finish(s))
    }

    /// Average over windows of `(N, C, H, W)`.
    pub fn avg_pool2d(&self, p: &Pool2dParams) -> Result<Tensor> {
        self.pool2d(PoolOp::AvgPool2d, p)
    }

    /// Maximum over windows of `(N, C, H, W)`.
    pub fn max_pool2d(&self, p: &Pool2dParams) -> Result<Tensor> {
        self.pool2d(PoolOp::MaxPool2d, p)
    }

    fn pool2d(&self, op: PoolOp, p: &Pool2dParams) -> Result<Tensor> {
        let out = spec::pool::pool2d(op, &self.layout, self.dtype, p)?;
        if parts::needed(&out, &[self]) {
            let split = Split::pointwise(op.name(), &out, std::slice::from_ref(self)).fixed(&[2, 3]);
            return split.run(|x| x[0].pool2d(op, p));
        }
        let r = self.run(Family::Pool, op.name(), &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.pool2d(r.arg(b, self)?, &self.layout, op, p)?));
        Ok(r.finish(s))
    }

    /// `(N, C, L) -> (N, C, size)`, nearest neighbour.
    pub fn upsample_nearest1d(&self, size: usize) -> Result<Tensor> {
        let out = spec::upsample::upsample(UpsampleOp::UpsampleNearest1d, &self.layout, self.dtype, &[size])?;
        if parts::needed(&out, &[self]) {
            let split = Split::pointwise("upsample_nearest1d", &out, std::slice::from_ref(self)).fixed(&[2]);
            return split.run(|x| x[0].upsample_nearest1d(size));
        }
        let r = self.run(Family::Upsample, "upsample_nearest1d", &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.upsample_nearest1d(r.arg(b, self)?, &self.layout, size)?));
        Ok(r.finish(s))
    }

    /// `(N, C, H, W) -> (N, C, h, w)`, nearest neighbour.
    pub fn upsample_nearest2d(&self, h: usize, w: usize) -> Result<Tensor> {
        let out = spec::upsample::upsample(UpsampleOp::UpsampleNearest2d, &self.layout, self.dtype, &[h, w])?;
        if parts::needed(&out, &[self]) {
            let split = Split::pointwise("upsample_nearest2d", &out, std::slice::from_ref(self)).fixed(&[2, 3]);
            return split.run(|x| x[0].upsample_nearest2d(h, w));
        }
        let r = self.run(Family::Upsample, "upsample_nearest2d", &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.upsample_nearest2d(r.arg(b, self)?, &self.layout, [h, w])?));
        Ok(r.finish(s))
    }

    /// A fresh contiguous copy (never shares storage with `self`).
    pub fn copy(&self) -> Result<Tensor> {
        let out = Out::new(self.shape().clone(), self.dtype);
        if parts::needed(&out, &[self]) {
            return Split::pointwise("copy", &out, std::slice::from_ref(self)).run(|x| x[0].copy());
        }
        let r = self.run(Family::Copy, "copy", &[], &out)?;
        let s = dispatch!(self.device, |b| {
            let mut dst = b.alloc(self.dtype, self.elem_count())?;
            b.copy_strided(r.arg(b, self)?, &self.layout, &mut dst, 0)?;
            b.wrap(dst)
        });
        Ok(r.finish(s))
    }

    /// Writes `value` (cast to the dtype) into every element this tensor sees, in place:
    /// through a view, the elements of the viewed tensor change.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<()> {
        let value = value.into().to_dtype(self.dtype);
        if self.in_parts() {
            return self.in_windows(|w| w.fill_(value));
        }
        let mut guard = self.write()?;
        dispatch!(self.device, |b| b.fill(b.get_mut(&mut guard)?, &self.layout, value))
    }

    /// Joins tensors along `dim`; all other dims must match.
    pub fn cat<T: AsRef<Tensor>>(ts: &[T], dim: impl Dim) -> Result<Tensor> {
        let ts: Vec<&Tensor> = ts.iter().map(AsRef::as_ref).collect();
        let layouts = ts.iter().map(|t| (&t.layout, t.dtype)).collect::<Vec<_>>();
        let dim = match ts.first() {
            Some(t) => dim.to_index(t.rank(), "cat")?,
            None => 0,
        };
        let out = spec::copy::cat(&layouts, dim)?;
        let first = ts[0];
        first.same_device("cat", &ts[1..])?;
        // Every element is written by one of the blocks.
        let dst = Tensor::unfilled(out.shape.clone(), out.dtype, &first.device, "cat")?;
        let mut at = 0;
        for t in ts {
            dst.write_block(t, dim, at)?;
            at += t.dims()[dim];
        }
        Ok(dst)
    }

    /// Writes `src` into this tensor at `start..start + src.dims()[dim]` along `dim`, in place:
    /// through a view (a narrowed or transposed one too), the elements of the viewed tensor
    /// change. A broadcast destination, whose elements share memory, is an error.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let m = Tensor::zeros((2, 3), rocm_wgpu_ops::DType::U32, &dev)?;
    /// let col = Tensor::from_vec(vec![7u32, 8], (1, 2), &dev)?;
    /// m.t()?.slice_set(&col, 0, 1)?; // row 1 of the transpose: column 1 of `m`
    /// assert_eq!(m.to_vec2::<u32>()?, [[0, 7, 0], [0, 8, 0]]);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn slice_set(&self, src: &Tensor, dim: impl Dim, start: usize) -> Result<()> {
        let dim = dim.to_index(self.rank(), "slice_set")?;
        self.same_device("slice_set", &[src])?;
        spec::copy::slice_set((&self.layout, self.dtype), (&src.layout, src.dtype), dim, start)?;
        self.write_block(src, dim, start)
    }

    /// Copies `src` into the block of `self` that starts at `start` along `dim` (validated).
    fn write_block(&self, src: &Tensor, dim: usize, start: usize) -> Result<()> {
        // Nothing to write (an empty block may still span 2^62 rows of nothing), but what
        // spoiled `src` spoils what it is written into, as for any write: `cat` of an empty
        // tensor a bad id made returned the others' values.
        if src.elem_count() == 0 {
            self.status().absorb([src.status().flags()], &self.device);
            return Ok(());
        }
        let src = if src.shares_storage(self) || !src.is_contiguous() { src.copy()? } else { src.clone() };
        if src.in_parts() {
            let target = self.narrow(dim, start, src.dims()[dim])?;
            return src.each_window("cat", &|at, piece| target.block(at, piece.dims())?.write_block(piece, dim, 0));
        }
        if self.in_parts() {
            let block = self.narrow(dim, start, src.dims()[dim])?;
            self.status().absorb([src.status().flags()], &self.device);
            return block.write_parts(&src, |w, s| w.write_block(s, dim, 0));
        }
        let calls = spec::copy::block_copies(self.layout(), src.layout(), dim, start)?;
        // The data written here now depends on whatever `src`'s depends on.
        self.status().absorb([src.status().flags()], &self.device);
        let s = src.read()?;
        let mut d = self.write()?;
        dispatch!(self.device, |b| {
            let (s, d) = (b.get(&s)?, b.get_mut(&mut d)?);
            calls.iter().try_for_each(|p| b.copy2d(s, d, p))
        })
    }

    /// Batched matrix product with broadcast batch dims. A 1-D operand is a vector, as in
    /// PyTorch: `(k) x (.., k, n) -> (.., n)`, `(.., m, k) x (k) -> (.., m)`, `(k) x (k) -> ()`.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    ///
    /// let dev = Device::cpu();
    /// let m = Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], (2, 3), &dev)?;
    /// let v = Tensor::from_vec(vec![1f32, 0., -1.], 3, &dev)?;
    /// assert_eq!(m.matmul(&v)?.to_vec::<f32>()?, [-2., -2.]);
    /// assert_eq!(v.matmul(&v)?.to_scalar::<f32>()?, 2.);
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// ```
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        let (lv, rv) = (self.rank() == 1, rhs.rank() == 1);
        if self.rank() == 0 || rhs.rank() == 0 {
            let (lhs, rhs) = (self.shape().clone(), rhs.shape().clone());
            return Err(Error::MatmulShape { msg: "operands need rank 1 or more", lhs, rhs });
        }
        if lv || rv {
            let l = if lv { self.unsqueeze(0)? } else { self.clone() };
            let r = if rv { rhs.unsqueeze(1)? } else { rhs.clone() };
            let p = l.matmul(&r).map_err(|e| match e {
                // Said of the operands as given, not as the matrices they became.
                Error::MatmulShape { msg, .. } => {
                    Error::MatmulShape { msg, lhs: self.shape().clone(), rhs: rhs.shape().clone() }
                }
                e => e,
            })?;
            let p = if rv { p.squeeze(D::Minus1)? } else { p };
            return if lv { p.squeeze(if rv { D::Minus1 } else { D::Minus2 }) } else { Ok(p) };
        }
        self.same_device("matmul", &[rhs])?;
        let g = spec::matmul::matmul((&self.layout, self.dtype), (&rhs.layout, rhs.dtype))?;
        let (ll, rl) = (self.layout.broadcast_as(&g.lhs_shape())?, rhs.layout.broadcast_as(&g.rhs_shape())?);
        if parts::needed(&g.out, &[self, rhs]) {
            // Batch dims with both operands, M with the lhs's rows, N with the rhs's columns.
            let n = g.out.shape.rank();
            let lhs = (0..n).map(|i| (i != n - 1).then_some(i)).collect();
            let rhs_dims = (0..n).map(|i| (i != n - 2).then_some(i)).collect();
            let xs = vec![(self.view(ll), lhs), (rhs.view(rl), rhs_dims)];
            let (lhs, rhs) = (xs[0].0.clone(), xs[1].0.clone());
            return match Split::mapped("matmul", &g.out, xs).run(|x| x[0].matmul(&x[1])) {
                Err(Error::LimitExceeded { .. }) if g.k > 1 => lhs.matmul_parts(&rhs),
                r => r,
            };
        }
        if let Some(t) = self.defer_product(rhs, (&ll, &rl), &g)? {
            return Ok(t);
        }
        let r = self.run(Family::Matmul, "matmul", &[rhs], &g.out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.matmul(r.arg(b, self)?, &ll, r.arg(b, rhs)?, &rl, &g)?));
        Ok(r.finish(s))
    }

    /// u32 indices that sort each row along the last dim (stable).
    pub fn argsort(&self, descending: bool) -> Result<Tensor> {
        let out = spec::sort::argsort(&self.layout, self.dtype)?;
        if parts::needed(&out, &[self]) {
            return self.argsort_parts(&out, descending);
        }
        let r = self.run(Family::Sort, "argsort", &[], &out)?;
        let s = dispatch!(self.device, |b| b.wrap(b.argsort(r.arg(b, self)?, &self.layout, descending)?));
        Ok(r.finish(s))
    }

    /// Sorted values and their indices along the last dim.
    pub fn sort(&self, descending: bool) -> Result<(Tensor, Tensor)> {
        let ids = self.argsort(descending)?;
        let last = self.rank().saturating_sub(1);
        Ok((self.gather(&ids, last)?, ids))
    }
}
