//! The op spec: what every op means, which dtypes it takes, its output, and the validation of
//! its inputs. Every call is checked here once; backends trust what reaches them.
//!
//! Each op is declared once, as an enum variant with its name and dtypes (see `spec_enum!`);
//! kernel entry names everywhere derive from that name ([`kernel_name`]).

pub mod attention;
pub mod conv;
pub mod copy;
pub mod elementwise;
pub mod index;
pub mod matmul;
pub mod nn;
pub mod pool;
pub mod quant;
pub mod random;
pub mod reduce;
pub mod rnn;
pub mod sort;
pub mod upsample;

use crate::{DType, Dim, Error, Result, Shape};
use std::fmt;

/// The op families; one name per family for every file of every backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Unary and binary maps, comparisons, where_cond, casts.
    Elementwise,
    /// Sums, means, extrema and arg-extrema over dims.
    Reduce,
    /// index_select, gather, scatter, index_add.
    Index,
    /// Convolutions and transposed convolutions.
    Conv,
    /// Max and average pooling.
    Pool,
    /// Nearest-neighbour upsampling.
    Upsample,
    /// Strided copies, 2-D copies, fills, ranges.
    Copy,
    /// Batched matrix products.
    Matmul,
    /// Softmax and the normalisations.
    Nn,
    /// Random draws.
    Random,
    /// argsort.
    Sort,
    /// Scaled dot-product attention and the rotary embeddings.
    Attention,
    /// Quantized tensors (GGML blocks): dequantize, qmatvec.
    Quant,
}

impl Family {
    /// Every family, in the order the self-check and the benches take them.
    pub const ALL: &'static [Family] = &[
        Family::Elementwise,
        Family::Reduce,
        Family::Index,
        Family::Conv,
        Family::Pool,
        Family::Upsample,
        Family::Copy,
        Family::Matmul,
        Family::Nn,
        Family::Random,
        Family::Sort,
        Family::Attention,
        Family::Quant,
    ];

    /// The family's name, as its files are named (`src/spec/{name}.rs`...).
    pub fn name(self) -> &'static str {
        match self {
            Family::Elementwise => "elementwise",
            Family::Reduce => "reduce",
            Family::Index => "index",
            Family::Conv => "conv",
            Family::Pool => "pool",
            Family::Upsample => "upsample",
            Family::Copy => "copy",
            Family::Matmul => "matmul",
            Family::Nn => "nn",
            Family::Random => "random",
            Family::Sort => "sort",
            Family::Attention => "attention",
            Family::Quant => "quant",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One op of the spec: its family, its unique name, the dtypes it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The family the op belongs to.
    pub family: Family,
    /// The op's unique name.
    pub name: &'static str,
    /// The dtypes it takes.
    pub dtypes: &'static [DType],
    /// What else is true of it (see [`Prop`]).
    pub props: &'static [Prop],
}

impl OpInfo {
    /// Whether the op has property `p`.
    pub fn has(&self, p: Prop) -> bool {
        self.props.contains(&p)
    }
}

/// Properties of an op that backends and tests act on, declared with the op (`spec_enum!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prop {
    /// Its kernels only move elements (select, copy, fill, sort by key bits), so a backend can
    /// run it on the bits of any dtype (wgpu: f64 as the 8 bytes of an i64, without SHADER_F64).
    MovesBytes,
}

/// Declares an op enum once: variants with their names (which are also their Tensor methods'
/// names), properties (`[MovesBytes]`, see [`Prop`]) and dtypes, plus `ALL`, `name()`,
/// `dtypes()`, `props()` and `infos()`. Written `spec_enum! { $ pub enum E in F each each_e {..} }`
/// it also makes the macro `each_e!(m)`, which calls `m!(name => Variant, ..)` with every op: how
/// the tensor layer writes one method per op without a list of its own.
macro_rules! spec_enum {
    ($d:tt $(#[$m:meta])* pub enum $ty:ident in $family:ident each $each:ident {
        $($(#[$vm:meta])* $v:ident = $name:ident $([$($prop:ident),*])? : $dt:expr),* $(,)?
    }) => {
        spec_enum! { $(#[$m])* pub enum $ty in $family { $($(#[$vm])* $v = $name $([$($prop),*])? : $dt),* } }

        #[doc = concat!("Calls macro `m!(name => Variant, ..)` with every op of [`", stringify!($ty), "`].")]
        macro_rules! $each {
            ($d m:ident) => {
                $d m!($($name => $v),*);
            };
        }
        pub(crate) use $each;
    };
    ($(#[$m:meta])* pub enum $ty:ident in $family:ident {
        $($(#[$vm:meta])* $v:ident = $name:ident $([$($prop:ident),*])? : $dt:expr),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $ty { $(#[doc = concat!("`", stringify!($name), "`.")] $(#[$vm])* $v),* }

        impl $ty {
            /// Every op of the enum, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$v),*];

            /// The op's name: unique across the spec, the stem of its kernel entry names.
            pub fn name(self) -> &'static str {
                match self { $($ty::$v => stringify!($name)),* }
            }

            /// The dtypes the op takes.
            pub fn dtypes(self) -> &'static [crate::DType] {
                match self { $($ty::$v => $dt),* }
            }

            /// The op's properties.
            pub fn props(self) -> &'static [crate::spec::Prop] {
                match self { $($ty::$v => &[$($(crate::spec::Prop::$prop),*)?]),* }
            }

            /// Every op of the enum with its family, name and dtypes.
            pub fn infos() -> Vec<crate::spec::OpInfo> {
                Self::ALL
                    .iter()
                    .map(|op| crate::spec::OpInfo {
                        family: crate::spec::Family::$family,
                        name: op.name(),
                        dtypes: op.dtypes(),
                        props: op.props(),
                    })
                    .collect()
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
pub(crate) use spec_enum;

/// Every op of the spec with its dtypes.
pub fn ops() -> Vec<OpInfo> {
    [
        elementwise::ops(),
        reduce::ops(),
        index::ops(),
        conv::ConvOp::infos(),
        pool::PoolOp::infos(),
        upsample::UpsampleOp::infos(),
        copy::CopyOp::infos(),
        matmul::MatmulOp::infos(),
        nn::NnOp::infos(),
        random::RandomOp::infos(),
        sort::SortOp::infos(),
        attention::AttentionOp::infos(),
        quant::QuantOp::infos(),
    ]
    .concat()
}

/// The kernel entry name of an op for one dtype, on every GPU backend: `exp_f32`.
pub fn kernel_name(op: &str, dtype: DType) -> String {
    format!("{op}_{dtype}")
}

/// What an op produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Out {
    /// The output's shape.
    pub shape: Shape,
    /// The output's dtype.
    pub dtype: DType,
}

impl Out {
    /// An output of this shape and dtype.
    pub fn new(shape: impl Into<Shape>, dtype: DType) -> Self {
        Out { shape: shape.into(), dtype }
    }
}

pub(crate) fn check_dtype(op: &'static str, dtype: DType, allowed: &[DType]) -> Result<()> {
    if allowed.contains(&dtype) {
        Ok(())
    } else {
        let expected = allowed.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        Err(Error::WrongDType { op, dtype, expected })
    }
}

/// An integer operand that is not the op's data (ids, a condition): `Error::Operand` naming it.
pub(crate) fn check_int_operand(op: &'static str, operand: &'static str, dtype: DType) -> Result<()> {
    if dtype.is_int() {
        return Ok(());
    }
    let msg = format!("of dtype {dtype}: {operand} must be an integer dtype (u8, u32 or i64)");
    Err(Error::Operand { op, operand, msg })
}

pub(crate) fn check_same_dtype(op: &'static str, lhs: DType, rhs: DType) -> Result<()> {
    if lhs == rhs { Ok(()) } else { Err(Error::DTypeMismatch { op, lhs, rhs }) }
}

pub(crate) fn check_rank(op: &'static str, shape: &Shape, rank: usize, expected: &'static str) -> Result<()> {
    if shape.rank() == rank { Ok(()) } else { Err(Error::Rank { op, expected, shape: shape.clone() }) }
}

/// Resolves a dim against a rank.
pub fn dim(op: &'static str, d: impl Dim, rank: usize) -> Result<usize> {
    d.to_index(rank, op)
}

/// A list of distinct dims, each below `rank`, sorted ascending.
pub fn dims_list(op: &'static str, dims: &[usize], rank: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let d = d.to_index(rank, op)?;
        if out.contains(&d) {
            return Err(Error::DuplicateDim { op, dim: d });
        }
        out.push(d);
    }
    out.sort_unstable();
    Ok(out)
}

pub(crate) fn invalid(op: &'static str, msg: impl Into<String>) -> Error {
    Error::InvalidParam { op, msg: msg.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_are_unique_and_families_complete() {
        let ops = ops();
        let mut names = ops.iter().map(|o| o.name).collect::<Vec<_>>();
        names.sort_unstable();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len, "two ops share a name");
        for f in Family::ALL {
            assert!(ops.iter().any(|o| o.family == *f), "family {f} has no op");
        }
        assert!(ops.iter().all(|o| !o.dtypes.is_empty()));
    }
}
