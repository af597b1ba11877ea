//! Batched matrix product `(..., m, k) x (..., k, n) -> (..., m, n)`.
//!
//! Batch dims broadcast (numpy rules). Operands may have any strides, so transposed views
//! multiply without copies. Half types accumulate in f32 or wider. `Tensor::matmul` also takes
//! a 1-D operand, as PyTorch does: a vector lhs is a row `(1, k)`, a vector rhs a column `(k, 1)`,
//! and that dim is dropped from the product (`(k) x (k)` is a rank-0 dot product); what reaches
//! [`matmul`] and the backends is always matrices.

use super::{Out, check_dtype, check_same_dtype, spec_enum};
use crate::{DType, Error, Layout, Result, Shape};

spec_enum! {
    /// Matrix products.
    pub enum MatmulOp in Matmul {
        Matmul = matmul: DType::FLOAT,
    }
}

/// A validated product: the broadcast batch dims and the three matrix sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulGeometry {
    /// The broadcast batch dims.
    pub batch: Shape,
    /// Rows of the lhs and of the output.
    pub m: usize,
    /// Columns of the rhs and of the output.
    pub n: usize,
    /// Columns of the lhs, rows of the rhs.
    pub k: usize,
    /// The output's shape and dtype.
    pub out: Out,
}

impl MatmulGeometry {
    /// The shape the lhs is broadcast to before it reaches a backend: `(batch.., m, k)`.
    pub fn lhs_shape(&self) -> Shape {
        Shape::new([self.batch.dims(), &[self.m, self.k]].concat())
    }

    /// The shape the rhs is broadcast to before it reaches a backend: `(batch.., k, n)`.
    pub fn rhs_shape(&self) -> Shape {
        Shape::new([self.batch.dims(), &[self.k, self.n]].concat())
    }
}

/// Both operands of rank 2 or more, inner dims equal, batch dims broadcastable.
pub fn matmul(lhs: (&Layout, DType), rhs: (&Layout, DType)) -> Result<MatmulGeometry> {
    let op = MatmulOp::Matmul.name();
    check_dtype(op, lhs.1, MatmulOp::Matmul.dtypes())?;
    check_same_dtype(op, lhs.1, rhs.1)?;
    let (l, r) = (lhs.0.shape(), rhs.0.shape());
    let err = |msg| Error::MatmulShape { msg, lhs: l.clone(), rhs: r.clone() };
    if l.rank() < 2 || r.rank() < 2 {
        return Err(err("operands need rank 2 or more"));
    }
    let (m, k) = (l.dims()[l.rank() - 2], l.dims()[l.rank() - 1]);
    let (k2, n) = (r.dims()[r.rank() - 2], r.dims()[r.rank() - 1]);
    if k != k2 {
        return Err(err("inner dims differ"));
    }
    let lb = Shape::new(&l.dims()[..l.rank() - 2]);
    let rb = Shape::new(&r.dims()[..r.rank() - 2]);
    let batch = Shape::broadcast(op, &lb, &rb).map_err(|_| err("batch dims do not broadcast"))?;
    let out = Out::new([batch.dims(), &[m, n]].concat(), lhs.1);
    Ok(MatmulGeometry { batch, m, n, k, out })
}
