//! A small U-Net on every backend found, with deterministic random weights: forward time,
//! images/s, and the largest difference from the cpu.
//!
//! ```text
//! cargo run --release --example unet -- --batch 2 --size 32 --width 8
//! ```

mod common;

use common::{Ctx, Flags, Res, budget};
use rocm_wgpu_ops::spec::conv::ConvParams;
use rocm_wgpu_ops::spec::pool::Pool2dParams;
use rocm_wgpu_ops::{DType, Device, Tensor};
use std::process::ExitCode;

const USAGE: &str = "\
unet: an image model (conv2d + relu + max_pool2d down; upsample_nearest2d, or conv_transpose2d,
+ cat with the skip + conv2d + relu up; a 1x1 conv head) with random weights.
  --batch N        images per forward (default 8)
  --size N         image height and width; 2^levels must divide it (default 256)
  --width N        channels of the first level, doubled at each level down (default 32)
  --levels N       pooling steps (default 3)
  --up LIST        nearest, transpose: how the up path grows the image (default both)
  --check-size N   side of the one image compared with the cpu (default min(size, 64)): the
                   cpu reference is slow at full size, and the model is fully convolutional";

const SEED: u64 = 2025;
const IN: usize = 3;

#[derive(Clone, Copy, PartialEq)]
enum Up {
    Nearest,
    Transpose,
}

#[derive(Clone, Copy)]
struct Config {
    batch: usize,
    size: usize,
    width: usize,
    levels: usize,
    up: Up,
}

impl Config {
    fn tag(&self) -> String {
        let up = if self.up == Up::Nearest { "nearest" } else { "transpose" };
        let Config { batch, size, width, levels, .. } = self;
        format!("batch={batch},size={size},width={width},levels={levels},up={up}")
    }

    /// Channels at level `l` (0 is the full-size level; `levels` the bottleneck).
    fn ch(&self, l: usize) -> usize {
        self.width << l
    }
}

/// A convolution's kernel and bias.
type Conv = (Tensor, Tensor);

/// Two 3x3 conv + relu.
struct Block(Conv, Conv);

struct Model {
    down: Vec<Block>,
    mid: Block,
    /// Per level, bottom up: the transposed conv (`Up::Transpose`) and the block after the cat.
    up: Vec<(Option<Conv>, Block)>,
    head: Conv,
}

impl Model {
    /// Draws every weight on the cpu from the crate's generator (He-normal, so activations
    /// keep their scale through the relus and stay finite in f16), the same bits everywhere.
    fn random(c: &Config) -> Res<Model> {
        let cpu = Device::cpu();
        cpu.set_seed(SEED);
        let conv = |o: usize, i: usize, k: usize| -> rocm_wgpu_ops::Result<Conv> {
            let std = (2.0 / (i * k * k) as f64).sqrt();
            Ok((
                Tensor::randn(0.0, std, [o, i, k, k], DType::F32, &cpu)?,
                Tensor::randn(0.0, 0.02, [o], DType::F32, &cpu)?,
            ))
        };
        // A 2x2, stride-2 conv_transpose2d: kernel (C_in, C_out, 2, 2); each output cell sums C_in products.
        let conv_t = |i: usize, o: usize| -> rocm_wgpu_ops::Result<Conv> {
            let std = (2.0 / i as f64).sqrt();
            Ok((
                Tensor::randn(0.0, std, [i, o, 2, 2], DType::F32, &cpu)?,
                Tensor::randn(0.0, 0.02, [o], DType::F32, &cpu)?,
            ))
        };
        let block = |o: usize, i: usize| Ok::<_, rocm_wgpu_ops::Error>(Block(conv(o, i, 3)?, conv(o, o, 3)?));
        let down =
            (0..c.levels).map(|l| block(c.ch(l), if l == 0 { IN } else { c.ch(l - 1) })).collect::<Result<_, _>>()?;
        let mid = block(c.ch(c.levels), c.ch(c.levels - 1))?;
        let up = (0..c.levels)
            .rev()
            .map(|l| {
                let (below, here) = (c.ch(l + 1), c.ch(l));
                Ok(match c.up {
                    Up::Transpose => (Some(conv_t(below, here)?), block(here, 2 * here)?),
                    Up::Nearest => (None, block(here, below + here)?),
                })
            })
            .collect::<rocm_wgpu_ops::Result<_>>()?;
        Ok(Model { down, mid, up, head: conv(IN, c.width, 1)? })
    }

    fn to(&self, dev: &Device, dtype: DType) -> Res<Model> {
        let t = |(k, b): &Conv| {
            Ok::<_, rocm_wgpu_ops::Error>((k.to_device(dev)?.to_dtype(dtype)?, b.to_device(dev)?.to_dtype(dtype)?))
        };
        let block = |Block(a, b): &Block| Ok::<_, rocm_wgpu_ops::Error>(Block(t(a)?, t(b)?));
        Ok(Model {
            down: self.down.iter().map(block).collect::<Result<_, _>>()?,
            mid: block(&self.mid)?,
            up: self
                .up
                .iter()
                .map(|(u, b)| Ok((u.as_ref().map(t).transpose()?, block(b)?)))
                .collect::<rocm_wgpu_ops::Result<_>>()?,
            head: t(&self.head)?,
        })
    }
}

/// A fixed input batch, uniform in [-1, 1).
fn images(batch: usize, size: usize, dev: &Device) -> Res<Tensor> {
    let cpu = Device::cpu();
    cpu.set_seed(SEED + 1);
    Ok(Tensor::rand(-1.0, 1.0, [batch, IN, size, size], DType::F32, &cpu)?.to_device(dev)?)
}

/// `conv(x) + bias`, with `padding` keeping the size of a 3x3 conv.
fn conv(c: &Ctx, x: &Tensor, (k, b): &Conv, padding: usize) -> Res<Tensor> {
    let (ci, kh) = (k.dims()[1], k.dims()[2]);
    let p = ConvParams::default().padding(padding);
    let y = c.op("conv", budget::sum_of_products(ci * kh * kh), || x.conv2d(k, &p))?;
    c.op("elementwise", budget::EXACT_MAP, || y.add(&b.reshape([1, b.dims()[0], 1, 1])?))
}

fn block(c: &Ctx, x: &Tensor, Block(a, b): &Block) -> Res<Tensor> {
    let y = conv(c, x, a, 1)?;
    let y = c.op("elementwise", budget::EXACT_MAP, || y.relu())?;
    let y = conv(c, &y, b, 1)?;
    c.op("elementwise", budget::EXACT_MAP, || y.relu())
}

fn forward(c: &Ctx, m: &Model, x: &Tensor) -> Res<Tensor> {
    let mut skips = vec![];
    let mut x = x.clone();
    for b in &m.down {
        let y = block(c, &x, b)?;
        x = c.op("pool", budget::POOL, || y.max_pool2d(&Pool2dParams::new(2)))?;
        skips.push(y);
    }
    x = block(c, &x, &m.mid)?;
    for ((up, b), skip) in m.up.iter().zip(skips.iter().rev()) {
        let [h, w] = [skip.dims()[2], skip.dims()[3]];
        x = match up {
            Some((k, bias)) => {
                let p = ConvParams::default().stride(2);
                // Stride 2 = the 2x2 kernel: windows do not overlap, each output cell sums C_in products.
                let y = c.op("conv", budget::sum_of_products(k.dims()[0]), || x.conv_transpose2d(k, &p))?;
                c.op("elementwise", budget::EXACT_MAP, || y.add(&bias.reshape([1, bias.dims()[0], 1, 1])?))?
            }
            None => c.op("upsample", budget::COPY, || x.upsample_nearest2d(h, w))?,
        };
        let joined = c.op("copy", budget::COPY, || Tensor::cat(&[&x, skip], 1))?;
        x = block(c, &joined, b)?;
    }
    conv(c, &x, &m.head, 0)
}

/// The cpu's output and budget for the check image, in `dtype`.
struct Reference {
    out: Tensor,
    budget: f64,
}

fn reference(m: &Model, dtype: DType, check: usize) -> Res<Reference> {
    let cpu = Device::cpu();
    let c = Ctx::new(&cpu, false);
    let out = forward(&c, &m.to(&cpu, dtype)?, &images(1, check, &cpu)?.to_dtype(dtype)?)?;
    Ok(Reference { out, budget: c.take_budget() })
}

/// Times one backend in one dtype and compares it with the cpu; returns whether it fails.
fn run(f: &Flags, cfg: &Config, m: &Model, dev: &Device, dtype: DType, r: &Reference, check: usize) -> Res<bool> {
    println!("# {} {dtype} up={}", dev.kind(), if cfg.up == Up::Nearest { "nearest" } else { "transpose" });
    let w = m.to(dev, dtype)?;
    let x = images(cfg.batch, cfg.size, dev)?.to_dtype(dtype)?;
    let c = Ctx::new(dev, false);
    let (t, _) = common::time(dev, f.get("runs", 5)?, || forward(&c, &w, &x))?;
    println!("#   images/s: {:.1}", cfg.batch as f64 / t.as_secs_f64());
    let got = forward(&c, &w, &images(1, check, dev)?.to_dtype(dtype)?)?;
    let what = format!("the [1, {IN}, {check}, {check}] output");
    let fails = dev.kind() != rocm_wgpu_ops::BackendKind::Cpu && common::compare(&got, &r.out, dtype, r.budget, &what)?;
    if f.profile {
        let c = Ctx::new(dev, true);
        forward(&c, &w, &x)?;
        c.print_profile();
    }
    common::model_line("unet", dev, dtype, t, &cfg.tag());
    Ok(fails)
}

fn main() -> ExitCode {
    common::exit("unet", main_())
}

/// Whether every f32 comparison passed.
fn main_() -> Res<bool> {
    let f = Flags::parse(USAGE, &["batch", "size", "width", "levels", "up", "check-size"])?;
    let base = Config {
        batch: f.get("batch", 8)?,
        size: f.get("size", 256)?,
        width: f.get("width", 32)?,
        levels: f.get("levels", 3)?,
        up: Up::Nearest,
    };
    let step = 1usize.checked_shl(base.levels as u32).unwrap_or(0);
    if base.levels == 0 || step == 0 || !base.size.is_multiple_of(step) || base.batch == 0 || base.width == 0 {
        return Err(
            format!("need levels >= 1 with 2^levels dividing size, batch and width >= 1: {}", base.tag()).into()
        );
    }
    let check = f.get("check-size", base.size.min(64))?;
    if check == 0 || !check.is_multiple_of(step) {
        return Err(format!("--check-size {check}: 2^levels = {step} must divide it").into());
    }
    let ups = f
        .list("up", "nearest,transpose")
        .iter()
        .map(|u| match u.as_str() {
            "nearest" => Ok(Up::Nearest),
            "transpose" => Ok(Up::Transpose),
            _ => Err(format!("--up {u}: expected nearest or transpose")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let devices = f.devices()?;
    let dtypes = f.dtypes()?;
    let mut ok = true;
    for up in ups {
        let cfg = Config { up, ..base };
        println!("# unet {}; compared with the cpu on one {check} x {check} image", cfg.tag());
        let model = Model::random(&cfg)?;
        let refs = dtypes.iter().map(|&d| Ok((d, reference(&model, d, check)?))).collect::<Res<Vec<_>>>()?;
        ok &= common::each(&devices, &refs, |dev, dtype, r| run(&f, &cfg, &model, dev, dtype, r, check))?;
    }
    Ok(ok)
}
