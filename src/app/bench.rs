//! Benchmark cases, shared by `cargo bench` (criterion, `benches/<family>.rs`) and by the main
//! job's `bench` command, which prints them as a table. `benches/torch_ref.py` times the same
//! cases, by the same names, with PyTorch.
//!
//! Sizes are those the speed targets are stated at; `scale` divides every size (for a quick run
//! on a software adapter).

use rocm_wgpu_ops::io::{GgufFile, GgufWriter, ModelTensor};
use rocm_wgpu_ops::spec::Family;
use rocm_wgpu_ops::spec::pool::{Pool2dParams, PoolOp};
use rocm_wgpu_ops::spec::quant::GgmlType;
use rocm_wgpu_ops::spec::random::Distribution;
use rocm_wgpu_ops::{DType, Device, Error, QTensor, Result, Tensor};
use std::time::{Duration, Instant};

/// A prepared benchmark: one call records one op.
pub type Op = Box<dyn Fn() -> Result<Tensor>>;

/// Makes a case's inputs on a device and returns its op.
type Setup = Box<dyn Fn(&Device) -> Result<Op>>;

/// One benchmark case.
pub struct Case {
    pub family: Family,
    pub name: String,
    /// Bytes the op must read and write at least (each input once, the output once).
    pub bytes: u64,
    /// Floating-point operations of the op (a multiply-add is two; 0: not a FLOP-bound case).
    pub flops: u64,
    setup: Setup,
}

impl Case {
    fn new(family: Family, name: String, bytes: u64, setup: impl Fn(&Device) -> Result<Op> + 'static) -> Case {
        Case { family, name, bytes, flops: 0, setup: Box::new(setup) }
    }

    fn with_flops(mut self, flops: u64) -> Case {
        self.flops = flops;
        self
    }

    /// Creates the inputs on `dev` and returns the op to time.
    pub fn prepare(&self, dev: &Device) -> Result<Op> {
        (self.setup)(dev)
    }
}

fn rand(shape: &[usize], dtype: DType, dev: &Device) -> Result<Tensor> {
    Tensor::random(shape.to_vec(), dtype, Distribution::Uniform { low: -1.0, high: 1.0 }, 1, 0, dev)
}

/// Every case, sizes divided by `scale` (1 for the stated sizes).
pub fn cases(scale: usize) -> Vec<Case> {
    let s = |n: usize| (n / scale).max(1);
    let big = s(64 << 20);
    let (rows, cols) = (s(8192), 8192);
    let (rr, rc) = (s(4096), 16384);
    let mut v = vec![];
    for (op, name) in [
        (rocm_wgpu_ops::spec::elementwise::BinaryOp::Add, "add"),
        (rocm_wgpu_ops::spec::elementwise::BinaryOp::Mul, "mul"),
    ] {
        v.push(Case::new(Family::Elementwise, format!("{name} f32 [{big}]"), 12 * big as u64, move |d| {
            let (a, b) = (rand(&[big], DType::F32, d)?, rand(&[big], DType::F32, d)?);
            Ok(Box::new(move || a.binary(&b, op)))
        }));
    }
    v.push(Case::new(Family::Elementwise, format!("add f16 [{big}]"), 6 * big as u64, move |d| {
        let (a, b) = (rand(&[big], DType::F16, d)?, rand(&[big], DType::F16, d)?);
        Ok(Box::new(move || a.add(&b)))
    }));
    v.push(Case::new(
        Family::Elementwise,
        format!("add f32 [{rows},{cols}] + [{cols}]"),
        (8 * rows * cols + 4 * cols) as u64,
        move |d| {
            let (a, b) = (rand(&[rows, cols], DType::F32, d)?, rand(&[cols], DType::F32, d)?);
            Ok(Box::new(move || a.add(&b)))
        },
    ));
    v.push(Case::new(
        Family::Elementwise,
        format!("add f32 [{rows},{cols}] + [{cols},{rows}]^T"),
        12 * (rows * cols) as u64,
        move |d| {
            let (a, b) = (rand(&[rows, cols], DType::F32, d)?, rand(&[cols, rows], DType::F32, d)?);
            Ok(Box::new(move || a.add(&b.t()?)))
        },
    ));
    v.push(replay_chain());
    v.push(Case::new(Family::Elementwise, format!("cast f32->f16 [{big}]"), 6 * big as u64, move |d| {
        let a = rand(&[big], DType::F32, d)?;
        Ok(Box::new(move || a.to_dtype(DType::F16)))
    }));
    v.push(Case::new(Family::Elementwise, format!("exp f32 [{big}]"), 8 * big as u64, move |d| {
        let a = rand(&[big], DType::F32, d)?;
        Ok(Box::new(move || a.exp()))
    }));
    // Arguments up to 1000, so most take the range reduction (rand alone is mostly in [-pi/4, pi/4]).
    v.push(Case::new(Family::Elementwise, format!("sin f32 [{big}]"), 8 * big as u64, move |d| {
        let a = rand(&[big], DType::F32, d)?.affine(1000.0, 0.0)?;
        Ok(Box::new(move || a.sin()))
    }));
    for (op, name) in
        [(rocm_wgpu_ops::spec::reduce::ReduceOp::Sum, "sum"), (rocm_wgpu_ops::spec::reduce::ReduceOp::Max, "max")]
    {
        for dim in [1, 0] {
            let out = if dim == 1 { rr } else { rc };
            v.push(Case::new(
                Family::Reduce,
                format!("{name} f32 [{rr},{rc}] dim {dim}"),
                4 * (rr * rc + out) as u64,
                move |d| {
                    let a = rand(&[rr, rc], DType::F32, d)?;
                    Ok(Box::new(move || a.reduce(op, [dim], false)))
                },
            ));
        }
    }
    let (table, picked, width) = (s(50000), s(4096), 4096);
    v.push(Case::new(
        Family::Index,
        format!("index_select f32 {picked} of [{table},{width}]"),
        (8 * picked * width + 4 * picked) as u64,
        move |d| {
            let t = rand(&[table, width], DType::F32, d)?;
            let ids: Vec<u32> =
                (0..picked as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) % table as u32).collect();
            let ids = Tensor::from_vec(ids, [picked], d)?;
            Ok(Box::new(move || t.index_select(&ids, 0)))
        },
    ));
    v.push(Case::new(Family::Copy, format!("copy f32 [{rows},{cols}]^T"), 8 * (rows * cols) as u64, move |d| {
        let a = rand(&[cols, rows], DType::F32, d)?;
        Ok(Box::new(move || a.t()?.contiguous()))
    }));
    v.push(Case::new(Family::Copy, format!("fill f32 [{big}]"), 4 * big as u64, move |d| {
        let dev = d.clone();
        Ok(Box::new(move || Tensor::full(1.5f32, [big], DType::F32, &dev)))
    }));
    v.push(Case::new(Family::Random, format!("rand_uniform f32 [{big}]"), 4 * big as u64, move |d| {
        let dev = d.clone();
        Ok(Box::new(move || rand(&[big], DType::F32, &dev)))
    }));
    v.push(Case::new(Family::Random, format!("dropout p 0.1 f32 [{big}]"), 8 * big as u64, move |d| {
        let x = rand(&[big], DType::F32, d)?;
        Ok(Box::new(move || x.dropout(0.1)))
    }));
    let (srows, scols) = (s(4096), 4096);
    v.push(Case::new(Family::Sort, format!("argsort f32 [{srows},{scols}]"), 8 * (srows * scols) as u64, move |d| {
        let a = rand(&[srows, scols], DType::F32, d)?;
        Ok(Box::new(move || a.argsort(false)))
    }));
    v.extend(nn_cases(scale));
    v.extend(pool_cases(scale));
    v.extend(upsample_cases(scale));
    v.extend(matmul_cases(scale));
    v.extend(conv_cases(scale));
    v.extend(attention_cases(scale));
    v.extend(quant_cases(scale));
    v
}

/// Attention at issue 23's three shapes (GPT-2: B 1, H 12, L 128, D 64, causal, f32 and f16;
/// long prefill: H 32, L 4096, D 128, causal, f16 and bf16, and L 1024 in f16; decode: Lq 1, Lk 4096, Hq 32, Hkv 8,
/// D 128, f16), FLOPs as torch counts them (4 B H Lq Lk D, halved where causal and square), and
/// rope and rope_i of f16 [1, 32, 4096, 128] (the input read once, the output written once).
fn attention_cases(scale: usize) -> Vec<Case> {
    let s = |n: usize| (n / scale).max(1);
    let shapes = [
        (12, 12, 128, 128, 64, DType::F32),
        (12, 12, 128, 128, 64, DType::F16),
        (32, 32, s(4096), s(4096), 128, DType::F16),
        (32, 32, s(4096), s(4096), 128, DType::BF16),
        (32, 32, s(1024), s(1024), 128, DType::F16),
        (32, 8, 1, s(4096), 128, DType::F16),
        (32, 16, 1, s(4096), 128, DType::F16),
        (32, 32, 1, s(4096), 128, DType::F16),
        (32, 8, 1, s(1024), 128, DType::F16),
        (32, 32, 1, s(1024), 128, DType::F16),
        (12, 12, 1, 256, 64, DType::F32),
        (12, 12, 1, 256, 64, DType::F16),
    ];
    let mut v: Vec<Case> = shapes
        .into_iter()
        .map(|(hq, hkv, lq, lk, d, dtype)| {
            let causal = lq > 1;
            let name =
                format!("sdpa {dtype} [1,{hq},{lq},{d}] kv [1,{hkv},{lk},{d}]{}", if causal { " causal" } else { "" });
            let bytes = ((2 * hq * lq * d + 2 * hkv * lk * d) * dtype.size_in_bytes()) as u64;
            let flops = 4 * (hq * lq * lk * d) as u64 / if causal { 2 } else { 1 };
            Case::new(Family::Attention, name, bytes, move |dev| {
                let (q, k, val) = (
                    rand(&[1, hq, lq, d], dtype, dev)?,
                    rand(&[1, hkv, lk, d], dtype, dev)?,
                    rand(&[1, hkv, lk, d], dtype, dev)?,
                );
                Ok(Box::new(move || q.scaled_dot_product_attention(&k, &val, None, causal, None)))
            })
            .with_flops(flops)
        })
        .collect();
    let (t, n) = (s(4096), 32 * s(4096) * 128);
    for (name, interleaved) in [("rope", false), ("rope_i", true)] {
        v.push(Case::new(Family::Attention, format!("{name} f16 [1,32,{t},128]"), 4 * n as u64, move |d| {
            let (x, c, si) = (
                rand(&[1, 32, t, 128], DType::F16, d)?,
                rand(&[t, 64], DType::F16, d)?,
                rand(&[t, 64], DType::F16, d)?,
            );
            Ok(Box::new(move || if interleaved { x.rope_i(&c, &si) } else { x.rope(&c, &si) }))
        }));
    }
    // What rope is held against: a copy of its x (as many bytes read and written).
    v.push(Case::new(Family::Copy, format!("copy f16 [1,32,{t},128] (rope's x)"), 4 * n as u64, move |d| {
        let x = rand(&[1, 32, t, 128], DType::F16, d)?;
        Ok(Box::new(move || x.copy()))
    }));
    v
}

/// Products `[batch, m, k] x [batch, k, n]` (no batch dim where `batch` is 1): the issue's
/// square sizes in each float type, a wide one, a batch of small ones, matrix-vector, and the
/// GEMMs of the GPT-2-small example (`examples/transformer.rs`, 128 tokens, and f16 decode
/// steps of one) in f16 and f32. A
/// rhs named `[.., n, k]^T` is a transposed view of that tensor (attention's `k`, the logits'
/// tied embedding).
fn matmul_cases(scale: usize) -> Vec<Case> {
    let s = |n: usize| (n / scale).max(1);
    let (sq, wide, big) = (s(4096), s(1024), s(8192));
    let mut shapes = vec![
        (1, sq, sq, sq, DType::F32, false),
        (1, sq, sq, sq, DType::F16, false),
        (1, sq, sq, sq, DType::BF16, false),
        (1, wide, wide, wide, DType::F32, false),
        (1, big, wide, big, DType::F32, false),
        (s(64), 512, 64, 512, DType::F32, false),
        (1, 1, 4096, s(16384), DType::F32, false),
        // The GEMM of `conv_cases`' conv2d f16 (per image: 64 filters x 576 taps times 576 x
        // 3136 windows), here on a stored B: what the convolution's gather costs beside it.
        (s(32), 64, 576, 3136, DType::F16, false),
    ];
    let (t, vocab) = (s(128), s(50257));
    for dtype in [DType::F16, DType::F32] {
        shapes.extend([
            (1, t, 768, 2304, dtype, false),
            (12, t, 64, t, dtype, true),
            (12, t, t, 64, dtype, false),
            (1, t, 768, 768, dtype, false),
            (1, t, 768, 3072, dtype, false),
            (1, t, 3072, 768, dtype, false),
            (1, t, 768, vocab, dtype, true),
        ]);
    }
    // The same model's decode step (one token): matrix-vector products, the logits' against
    // the tied embedding (transposed: the rows kernel).
    shapes.extend(
        [(1, 1, 768, 2304, false), (1, 1, 768, 768, false), (1, 1, 768, 3072, false), (1, 1, 3072, 768, false)]
            .into_iter()
            .chain([(1, 1, 768, vocab, true)])
            .map(|(b, m, k, n, rt)| (b, m, k, n, DType::F16, rt)),
    );
    shapes
        .into_iter()
        .map(|(b, m, k, n, dtype, rt)| {
            let lead: &[usize] = if b == 1 { &[] } else { &[b] };
            let (ls, rs) = ([lead, &[m, k]].concat(), [lead, &if rt { [n, k] } else { [k, n] }].concat());
            let shape = |d: &[usize]| d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
            let name = format!("matmul {dtype} [{}]x[{}]{}", shape(&ls), shape(&rs), if rt { "^T" } else { "" });
            let bytes = (b * (m * k + k * n + m * n) * dtype.size_in_bytes()) as u64;
            Case::new(Family::Matmul, name, bytes, move |d| {
                let (x, y) = (rand(&ls, dtype, d)?, rand(&rs, dtype, d)?);
                let y = if rt { y.t()? } else { y };
                Ok(Box::new(move || x.matmul(&y)))
            })
            .with_flops(2 * (b * m * k * n) as u64)
        })
        .collect()
}

/// conv2d in f32 and f16 and conv_transpose2d in f32 on [32, 64, 56, 56] with 64 filters of
/// 3x3, padding 1 (the output the input's size); conv2d in f32 and f16 at each level of the
/// U-Net example (`examples/unet.rs`: [8, 32, 256, 256] with 32 filters, then channels doubled
/// and sides halved: few filters on a wide image, down to many on a small one).
fn conv_cases(scale: usize) -> Vec<Case> {
    use rocm_wgpu_ops::spec::conv::ConvParams;
    let s = |n: usize| (n / scale).max(1);
    let issue = [("conv2d", DType::F32), ("conv2d", DType::F16), ("conv_transpose2d", DType::F32)]
        .map(|(op, dt)| (op, dt, s(32), 64, 56, 64));
    let unet = (0..4).flat_map(|l| [DType::F32, DType::F16].map(|dt| ("conv2d", dt, s(8), 32 << l, 256 >> l, 32 << l)));
    issue
        .into_iter()
        .chain(unet)
        .map(|(op, dtype, n, c, h, f)| {
            let w = h;
            let flops = 2 * (n * f * h * w * c * 9) as u64;
            let name = format!("{op} {dtype} [{n},{c},{h},{w}] {f}x3x3 pad 1");
            let bytes = ((2 * n * c * h * w + f * c * 9) * dtype.size_in_bytes()) as u64;
            Case::new(Family::Conv, name, bytes, move |d| {
                let (x, k) = (rand(&[n, c, h, w], dtype, d)?, rand(&[f, c, 3, 3], dtype, d)?);
                let p = ConvParams::default().padding(1);
                let t = op == "conv_transpose2d";
                Ok(Box::new(move || if t { x.conv_transpose2d(&k, &p) } else { x.conv2d(&k, &p) }))
            })
            .with_flops(flops)
        })
        .collect()
}

/// softmax, log_softmax, layer_norm (with weight and bias) and rms_norm (with weight) over the
/// last dim of f32 [4096, 16384], the norms in bf16 [4096, 4096] too: the input read once, the
/// output written once.
fn nn_cases(scale: usize) -> Vec<Case> {
    let (rows, cols) = ((4096 / scale).max(1), 16384);
    let bytes = 8 * (rows * cols) as u64;
    let mut v = vec![];
    for (name, log) in [("softmax", false), ("log_softmax", true)] {
        v.push(Case::new(Family::Nn, format!("{name} f32 [{rows},{cols}]"), bytes, move |d| {
            let x = rand(&[rows, cols], DType::F32, d)?;
            Ok(Box::new(move || if log { x.log_softmax(1) } else { x.softmax(1) }))
        }));
    }
    // The norms also on an LLM's hidden states: bf16 lines of 4096.
    for (dt, cols) in [(DType::F32, 16384), (DType::BF16, 4096)] {
        let bytes = 2 * (dt.size_in_bytes() * rows * cols) as u64;
        v.push(Case::new(Family::Nn, format!("layer_norm {dt} [{rows},{cols}]"), bytes, move |d| {
            let (x, w, b) = (rand(&[rows, cols], dt, d)?, rand(&[cols], dt, d)?, rand(&[cols], dt, d)?);
            Ok(Box::new(move || x.layer_norm(Some(&w), Some(&b), 1e-5)))
        }));
        v.push(Case::new(Family::Nn, format!("rms_norm {dt} [{rows},{cols}]"), bytes, move |d| {
            let (x, w) = (rand(&[rows, cols], dt, d)?, rand(&[cols], dt, d)?);
            Ok(Box::new(move || x.rms_norm(Some(&w), 1e-6)))
        }));
    }
    let shape = planes(scale);
    let n: usize = shape.iter().product();
    let dims = shape.map(|d| d.to_string()).join(",");
    v.push(Case::new(Family::Nn, format!("local_response_norm size 5 f32 [{dims}]"), 8 * n as u64, move |d| {
        let x = rand(&shape, DType::F32, d)?;
        Ok(Box::new(move || x.local_response_norm(5, 1e-4, 0.75, 1.0)))
    }));
    v.extend(rnn_cases(scale));
    v
}

/// 2-layer LSTM and GRU, hidden and input 1024, 128 steps of a batch of 32, f32 and f16: the
/// bytes are the weights' (read once per step by the recurrent products).
fn rnn_cases(scale: usize) -> Vec<Case> {
    use rocm_wgpu_ops::{RnnOptions, RnnWeights};
    let (t, b, h) = ((128 / scale).max(1), 32, 1024);
    let mut v = vec![];
    for (lstm, g) in [(true, 4), (false, 3)] {
        for dtype in [DType::F32, DType::F16] {
            let name = format!("{} 2x{h} T {t} B {b} {dtype}", if lstm { "lstm" } else { "gru" });
            let bytes = (2 * 2 * g * h * h * dtype.size_in_bytes()) as u64;
            v.push(Case::new(Family::Nn, name, bytes, move |d| {
                let w = |r: usize, c: usize| rand(&[r, c], dtype, d)?.affine(0.03, 0.0);
                let ws = (0..2)
                    .map(|_| {
                        let bias = || Ok::<_, rocm_wgpu_ops::Error>(Some(rand(&[g * h], dtype, d)?));
                        Ok(RnnWeights { w_ih: w(g * h, h)?, w_hh: w(g * h, h)?, b_ih: bias()?, b_hh: bias()? })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let x = rand(&[t, b, h], dtype, d)?;
                Ok(Box::new(move || {
                    let o = RnnOptions::default();
                    if lstm { x.lstm(&ws, None, o).map(|r| r.0) } else { x.gru(&ws, None, o).map(|r| r.0) }
                }))
            }));
        }
    }
    v
}

/// The (N, C, H, W) of the pool and upsample cases: f32 [32, 64, 112, 112].
fn planes(scale: usize) -> [usize; 4] {
    [(32 / scale).max(1), 64, 112, 112]
}

/// max_pool2d and avg_pool2d with 2x2 windows: the input read once, the quarter-size output
/// written once.
fn pool_cases(scale: usize) -> Vec<Case> {
    let shape = planes(scale);
    let n: usize = shape.iter().product();
    let bytes = 4 * (n + n / 4) as u64;
    let dims = shape.map(|d| d.to_string()).join(",");
    [(PoolOp::MaxPool2d, "max_pool2d"), (PoolOp::AvgPool2d, "avg_pool2d")]
        .into_iter()
        .map(|(op, name)| {
            Case::new(Family::Pool, format!("{name} 2x2 f32 [{dims}]"), bytes, move |d| {
                let x = rand(&shape, DType::F32, d)?;
                let p = Pool2dParams::new(2);
                Ok(Box::new(move || if op == PoolOp::MaxPool2d { x.max_pool2d(&p) } else { x.avg_pool2d(&p) }))
            })
        })
        .collect()
}

/// upsample_nearest2d to twice the height and width: the input read once, the output written
/// once.
fn upsample_cases(scale: usize) -> Vec<Case> {
    let shape = planes(scale);
    let n: usize = shape.iter().product();
    let dims = shape.map(|d| d.to_string()).join(",");
    let case = Case::new(Family::Upsample, format!("upsample_nearest2d x2 f32 [{dims}]"), 20 * n as u64, move |d| {
        let x = rand(&shape, DType::F32, d)?;
        Ok(Box::new(move || x.upsample_nearest2d(2 * shape[2], 2 * shape[3])))
    });
    vec![case]
}

/// Dequantizing a `[4096, 4096]` weight (rows divided by `scale`) of q4_K-sized q4_0 and of q8_0
/// to f16: bytes are the blocks read plus the values written.
fn quant_cases(scale: usize) -> Vec<Case> {
    let (n, k) = ((4096 / scale).max(1), 4096);
    [GgmlType::Q4_0, GgmlType::Q8_0]
        .into_iter()
        .map(|ty| {
            let bytes = (n * k / ty.block_size() * ty.block_bytes() + 2 * n * k) as u64;
            Case::new(Family::Quant, format!("dequantize {ty} to f16 [{n},{k}]"), bytes, move |d| {
                let w = QTensor::quantize(&rand(&[n, k], DType::F32, &Device::cpu())?, ty)?.to_device(d)?;
                Ok(Box::new(move || w.dequantize(DType::F16)))
            })
        })
        .chain(
            [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K]
                .map(|ty| qmatvec_case(ty, 14336, 4096, 1, scale)),
        )
        .chain(
            [(4096, 14336, 1), (14336, 4096, 2), (14336, 4096, 4), (14336, 4096, 8)]
                .map(|(n, k, m)| qmatvec_case(GgmlType::Q4_K, n, k, m, scale)),
        )
        .chain([(4096, 14336, 1), (14336, 4096, 4)].map(|(n, k, m)| qmatvec_case(GgmlType::Q6_K, n, k, m, scale)))
        .chain([2, 4].map(|m| qmatvec_case(GgmlType::Q8_0, 14336, 4096, m, scale)))
        .chain(
            [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q6_K]
                .map(|ty| qmatvec_q8_case(ty, 14336, 4096, 1, scale)),
        )
        .chain([(4096, 14336, 1), (14336, 4096, 4)].map(|(n, k, m)| qmatvec_q8_case(GgmlType::Q4_K, n, k, m, scale)))
        .chain([GgmlType::Q4_K, GgmlType::Q8_0].map(|ty| copy_like(ty, scale)))
        .chain(prefill_cases(scale))
        .chain(std::iter::once(gguf_load_case(scale)))
        .collect()
}

/// Loading a GGUF of 32 q4_K `[14336, 4096]` tensors (1.06 GB; `32 / scale` of them) onto the
/// device from a warm page cache: the file mapped and parsed, then every tensor uploaded. The
/// file is written once, to the temp dir (the page cache holds it after).
fn gguf_load_case(scale: usize) -> Case {
    let (n, k, count) = (14336, 4096, (32 / scale).max(1));
    let bytes = count * n * k / 256 * GgmlType::Q4_K.block_bytes();
    let name = format!("load gguf {count} x q4_K [{n},{k}] ({} MB, warm page cache)", bytes / 1_000_000);
    Case::new(Family::Quant, name, bytes as u64, move |d| {
        let path = std::env::temp_dir().join(format!("rwo-bench-load-{count}.gguf"));
        if std::fs::metadata(&path).map_or(true, |m| (m.len() as usize) < bytes) {
            let w = weight(GgmlType::Q4_K, n, k, &Device::cpu())?;
            let mut gguf = GgufWriter::new();
            for i in 0..count {
                gguf.qtensor(&format!("blk.{i}.ffn_up.weight"), &w)?;
            }
            let io =
                |e: std::io::Error| rocm_wgpu_ops::Error::Io { path: path.display().to_string(), msg: e.to_string() };
            gguf.write(&mut std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?))?;
        }
        let d = d.clone();
        Ok(Box::new(move || {
            // SAFETY: the bench's own file, written above and left unchanged while mapped.
            let file = unsafe { GgufFile::open(&path)? };
            let mut last = Tensor::zeros([1], DType::U8, &d)?;
            for t in file.gguf().tensors() {
                last = match file.tensor(&t.name, &d)? {
                    ModelTensor::Quantized(q) => q.bytes().clone(),
                    ModelTensor::Plain(t) => t,
                };
            }
            Ok(last)
        }))
    })
}

/// A prompt of 512 rows of f16 through a Llama MLP's `[14336, 4096]` weight (rows divided by
/// `scale`): q4_K (`qmatmul`: dequantize to f16, then the GEMM) and the dense f16 GEMM of the
/// same shape and layout it is held against.
fn prefill_cases(scale: usize) -> [Case; 2] {
    let (m, n, k) = (512, (14336 / scale).max(1), 4096);
    let flops = 2 * (m * n * k) as u64;
    let io = 2 * (m * k + m * n);
    let q4_k = (n * k / 256 * GgmlType::Q4_K.block_bytes() + io) as u64;
    [
        Case::new(Family::Quant, format!("qmatmul q4_K f16 [{m},{k}] x [{n},{k}]^T (prefill)"), q4_k, move |d| {
            let w = weight(GgmlType::Q4_K, n, k, d)?;
            let x = rand(&[m, k], DType::F16, d)?;
            Ok(Box::new(move || w.qmatmul(&x)))
        })
        .with_flops(flops),
        Case::new(
            Family::Quant,
            format!("matmul f16 [{m},{k}] x [{n},{k}]^T (prefill, dense)"),
            (2 * n * k + io) as u64,
            move |d| {
                let (w, x) = (rand(&[n, k], DType::F16, d)?, rand(&[m, k], DType::F16, d)?);
                Ok(Box::new(move || x.matmul(&w.t()?)))
            },
        )
        .with_flops(flops),
    ]
}

/// A `[n, k]` weight of `ty` on `d`: quantized from uniform values (simple types), or random
/// bytes with each f16 scale's top bits cleared (below 2, finite) for the k-quants, which keeps
/// their reference quantizers' search over scales, on one cpu thread, out of the bench's setup.
fn weight(ty: GgmlType, n: usize, k: usize, d: &Device) -> Result<QTensor> {
    if ty.block_size() == 32 {
        return QTensor::quantize(&rand(&[n, k], DType::F32, &Device::cpu())?, ty)?.to_device(d);
    }
    let noise = rand(&[n * k / ty.block_size() * ty.block_bytes()], DType::F32, &Device::cpu())?.to_vec1::<f32>()?;
    let mut bytes: Vec<u8> = noise.iter().map(|v| ((v + 1.0) * 127.5) as u8).collect();
    // Where ggml-common.h puts the f16 scales (d, dmin) of each k-quant block.
    let scales: &[usize] = match ty {
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
        GgmlType::Q6_K => &[208],
        _ => &[0, 2],
    };
    for block in bytes.chunks_exact_mut(ty.block_bytes()) {
        for &at in scales {
            block[at + 1] &= 0x3f;
        }
    }
    QTensor::from_bytes(ty, [n, k], &bytes, d)
}

/// The matrix-vector kernel (`qmatvec`, `m` rows of x) at a Llama MLP's decode shapes: `m x k` f16
/// times an `[n, k]` weight of `ty` transposed (`[14336, 4096]`: gate and up, `[4096, 14336]`:
/// down; rows divided by `scale`); bytes are the blocks, the figure to hold against a copy of as
/// many ([`copy_like`]).
fn qmatvec_case(ty: GgmlType, n: usize, k: usize, m: usize, scale: usize) -> Case {
    let n = (n / scale).max(1);
    let bytes = (n * k / ty.block_size() * ty.block_bytes()) as u64;
    Case::new(Family::Quant, format!("qmatvec {ty} f16 [{m},{k}] x [{n},{k}]^T"), bytes, move |d| {
        let w = weight(ty, n, k, d)?;
        let x = rand(&[m, k], DType::F16, d)?;
        Ok(Box::new(move || w.qmatmul(&x)))
    })
    .with_flops(2 * (m * n * k) as u64)
}

/// [`qmatvec_case`] in the q8 activation mode (`qmatmul_q8`: x rounded to q8 blocks, then integer
/// dot products where the path has them).
fn qmatvec_q8_case(ty: GgmlType, n: usize, k: usize, m: usize, scale: usize) -> Case {
    let n = (n / scale).max(1);
    let bytes = (n * k / ty.block_size() * ty.block_bytes()) as u64;
    Case::new(Family::Quant, format!("qmatvec_q8 {ty} f16 [{m},{k}] x [{n},{k}]^T"), bytes, move |d| {
        let w = weight(ty, n, k, d)?;
        let x = rand(&[m, k], DType::F16, d)?;
        Ok(Box::new(move || w.qmatmul_q8(&x)))
    })
    .with_flops(2 * (m * n * k) as u64)
}

/// A device copy of as many bytes as the `ty` weight of [`qmatvec_case`] at `[14336, 4096]` (its
/// GB/s of bytes read and written, as a copy's bandwidth is counted): the bandwidth those are
/// held against (q8_0's 62 MB, read and written, pass the L2 cache that holds some of q4_K's 33).
fn copy_like(ty: GgmlType, scale: usize) -> Case {
    let bytes = (14336 / scale).max(1) * 4096 / ty.block_size() * ty.block_bytes();
    Case::new(Family::Copy, format!("copy u8 [{bytes}] ({ty} qmatvec's bytes)"), 2 * bytes as u64, move |d| {
        let a = Tensor::from_vec(vec![7u8; bytes], [bytes], d)?;
        Ok(Box::new(move || a.copy()))
    })
}

/// What a kernel costs where its work is nothing: a plan of [`CHAIN`] adds of 256 values, each
/// reading the one before (fusion off, so each is a kernel), replayed; the time a replay is
/// CHAIN dependent kernels' launches, barriers and the replay's own recording.
fn replay_chain() -> Case {
    Case::new(Family::Elementwise, format!("replay {CHAIN} dependent adds f32 [256] (fusion off)"), 0, |d| {
        let d = d.with_fusion(false);
        let (x, b) = (rand(&[256], DType::F32, &d)?, rand(&[256], DType::F32, &d)?);
        let plan = d.capture(&[&x], move |x| {
            let mut y = x[0].clone();
            for _ in 0..CHAIN {
                y = y.add(&b)?;
            }
            Ok(vec![y])
        })?;
        let plan = std::cell::RefCell::new(plan);
        Ok(Box::new(move || {
            let y = plan.borrow_mut().run(&[&x])?;
            y.into_iter().next().ok_or_else(|| Error::Capture { msg: "the chain's plan gave no output".into() })
        }))
    })
}

/// Kernels in [`replay_chain`]'s plan.
const CHAIN: usize = 128;

/// The median time of one op: batches of ops recorded back to back, then one synchronise, so
/// launch and readback latency are amortised as they are in real use.
pub fn measure(dev: &Device, op: &Op, budget: Duration) -> Result<Duration> {
    for _ in 0..3 {
        op()?;
    }
    dev.synchronize()?;
    let t = Instant::now();
    op()?;
    dev.synchronize()?;
    let one = t.elapsed().max(Duration::from_micros(1));
    let batch = ((budget.as_secs_f64() / 10.0 / one.as_secs_f64()) as u32).clamp(1, 1000);
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (start.elapsed() < budget && times.len() < 15) {
        let t = Instant::now();
        for _ in 0..batch {
            op()?;
        }
        dev.synchronize()?;
        times.push(t.elapsed() / batch);
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// What recording one small op costs: the mean over `n` back-to-back `add`s of 16 elements.
pub struct RecordCost {
    /// On the wall clock, without waiting for the device at the end: bounded below by the CPU
    /// work and by anything the recording waits for (a queue of batches the GPU has not taken).
    pub wall: Duration,
    /// On the recording thread's CPU clock (validation, pool, pipeline lookup, bind group,
    /// dispatch); `None` where the platform has no such clock.
    pub cpu: Option<Duration>,
}

/// [`RecordCost`] of `n` adds of 16 f32.
pub fn record_cost(dev: &Device, n: u32) -> Result<RecordCost> {
    let a = rand(&[16], DType::F32, dev)?;
    let b = rand(&[16], DType::F32, dev)?;
    for _ in 0..100 {
        a.add(&b)?;
    }
    dev.synchronize()?;
    let (t, cpu0) = (Instant::now(), super::cpu_time::thread_cpu());
    for _ in 0..n {
        a.add(&b)?;
    }
    let wall = t.elapsed() / n;
    let cpu = super::cpu_time::thread_cpu().zip(cpu0).map(|(b, a)| (b - a) / n);
    dev.synchronize()?;
    Ok(RecordCost { wall, cpu })
}
