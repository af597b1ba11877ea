//! Model files (src/io/): GGUF and safetensors round trips on every backend, files written by
//! the reference writers (gguf-py, safetensors' numpy API: `tests/vectors/gen_gguf.py`) read
//! value for value and rewritten byte for byte, and the errors of malformed files.

use crate::{cpu, rand_tensor, suite, tests};
use half::{bf16, f16};
use rocm_wgpu_ops::io::{Gguf, GgufArray as A, GgufValue as V, GgufWriter, ModelTensor, Safetensors, safetensors};
use rocm_wgpu_ops::spec::quant::GgmlType;
use rocm_wgpu_ops::{CpuStorage, DType, Device, Error, QTensor, Result, Shape, Tensor};
use std::collections::HashMap;

suite!(
    gguf_round_trip_keeps_metadata_bytes_and_values,
    gguf_reads_gguf_py_and_writes_its_bytes,
    safetensors_round_trip_of_every_dtype,
    safetensors_reads_numpy_files_and_writes_their_bytes,
    #[cfg(not(target_family = "wasm"))]
    files_are_memory_mapped,
);

tests!(gguf_rejects_bad_files, gguf_writer_rejects_what_gguf_cannot_hold, safetensors_rejects_bad_files);

const TINY_GGUF: &[u8] = include_bytes!("../vectors/io/tiny.gguf");
const TINY_SAFETENSORS: &[u8] = include_bytes!("../vectors/io/tiny.safetensors");
const I32_SAFETENSORS: &[u8] = include_bytes!("../vectors/io/i32.safetensors");
const Q4_K: &[u8] = include_bytes!("../vectors/quant/q4_K.blocks");
const Q6_K: &[u8] = include_bytes!("../vectors/quant/q6_K.blocks");

fn kv(k: &str, v: V) -> (String, V) {
    (k.to_string(), v)
}

/// Metadata of every value type, arrays of every item type (empty, nested) among them.
fn every_value() -> Vec<(String, V)> {
    vec![
        kv("v.u8", V::U8(255)),
        kv("v.i8", V::I8(-128)),
        kv("v.u16", V::U16(65535)),
        kv("v.i16", V::I16(-32768)),
        kv("v.u32", V::U32(u32::MAX)),
        kv("v.i32", V::I32(i32::MIN)),
        kv("v.f32", V::F32(f32::MIN_POSITIVE)),
        kv("v.bool", V::Bool(false)),
        kv("v.string", "ünïcödé ✓".into()),
        kv("v.empty", "".into()),
        kv("v.u64", V::U64(u64::MAX)),
        kv("v.i64", V::I64(i64::MIN)),
        kv("v.f64", V::F64(std::f64::consts::PI)),
        kv("a.u8", V::Array(A::U8(vec![0, 255]))),
        kv("a.i8", V::Array(A::I8(vec![-1]))),
        kv("a.u16", V::Array(A::U16(vec![7; 3]))),
        kv("a.i16", V::Array(A::I16(vec![-7, 7]))),
        kv("a.u32", V::Array(A::U32(vec![1, 2, 3]))),
        kv("a.i32", V::Array(A::I32(vec![-5]))),
        kv("a.f32", V::Array(A::F32(vec![0.5, -1e30]))),
        kv("a.bool", V::Array(A::Bool(vec![true, false]))),
        kv("a.string", V::Array(A::String(vec!["x".into(), "".into(), "yz".into()]))),
        kv("a.u64", V::Array(A::U64(vec![u64::MAX]))),
        kv("a.i64", V::Array(A::I64(vec![i64::MIN, 0]))),
        kv("a.f64", V::Array(A::F64(vec![1e300]))),
        kv("a.empty", V::Array(A::F32(vec![]))),
        kv(
            "a.nested",
            V::Array(A::Array(vec![A::Array(vec![A::U8(vec![1]), A::String(vec!["deep".into()])]), A::I64(vec![])])),
        ),
    ]
}

/// Tensors of every dtype GGUF and the device hold (a transposed view, a scalar, an empty one)
/// and blocks of several types.
async fn gguf_tensors(dev: &Device) -> Result<Vec<(String, ModelTensor)>> {
    let mut out = vec![];
    for (i, &dtype) in crate::float_dtypes(dev).iter().chain(&[DType::I64]).enumerate() {
        let t = rand_tensor(dev, dtype, &[3, 5], 40 + i as u64, -100.0, 100.0)?.t()?;
        out.push((format!("t.{dtype}"), ModelTensor::Plain(t)));
    }
    out.push(("scalar".into(), ModelTensor::Plain(Tensor::from_vec(vec![2.5f32], (), dev)?)));
    out.push(("empty".into(), ModelTensor::Plain(Tensor::zeros([0, 3], DType::F16, dev)?)));
    let x = rand_tensor(dev, DType::F32, &[2, 64], 7, -3.0, 3.0)?;
    for ty in [GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q5_1] {
        out.push((format!("q.{ty}"), ModelTensor::Quantized(QTensor::quantize_async(&x, ty).await?)));
    }
    out.push(("q.q4_K".into(), ModelTensor::Quantized(QTensor::from_bytes(GgmlType::Q4_K, [3, 256], Q4_K, dev)?)));
    out.push(("q.q6_K".into(), ModelTensor::Quantized(QTensor::from_bytes(GgmlType::Q6_K, [1, 768], Q6_K, dev)?)));
    Ok(out)
}

fn writer(metadata: &[(String, V)], tensors: &[(String, ModelTensor)]) -> Result<GgufWriter> {
    let mut w = GgufWriter::new();
    for (k, v) in metadata {
        w.metadata(k, v.clone());
    }
    for (name, t) in tensors {
        match t {
            ModelTensor::Plain(t) => w.tensor(name, t)?,
            ModelTensor::Quantized(q) => w.qtensor(name, q)?,
        };
    }
    Ok(w)
}

/// Asserts two tensors hold the same type, shape, bytes and (for blocks) dequantized values.
async fn same_tensor(got: &ModelTensor, want: &ModelTensor, what: &str) -> Result<()> {
    assert_eq!((got.ty(), got.shape()), (want.ty(), want.shape()), "{what}");
    assert_eq!(got.to_bytes_async().await?, want.to_bytes_async().await?, "{what}: bytes");
    if let (ModelTensor::Quantized(g), ModelTensor::Quantized(w)) = (got, want) {
        let (g, w) = (g.dequantize(DType::F32)?, w.dequantize(DType::F32)?);
        assert_eq!(g.to_vec_async::<f32>().await?, w.to_vec_async::<f32>().await?, "{what}: values");
    }
    Ok(())
}

/// Written, read back (as v3 and as v2) and written again: the same metadata, infos, values
/// and bytes; data aligned to 32, or to `general.alignment`.
async fn gguf_round_trip_keeps_metadata_bytes_and_values(dev: &Device) -> Result<()> {
    let tensors = gguf_tensors(dev).await?;
    for align in [None, Some(64u32), Some(1)] {
        let mut metadata = every_value();
        if let Some(a) = align {
            metadata.insert(3, kv("general.alignment", V::U32(a)));
        }
        let bytes = writer(&metadata, &tensors)?.to_bytes_async().await?;
        let mut v2 = bytes.clone();
        v2[4..8].copy_from_slice(&2u32.to_le_bytes());
        for (version, file) in [(3, &bytes), (2, &v2)] {
            let g = Gguf::read(file)?;
            assert_eq!((g.version(), g.metadata()), (version, &metadata[..]));
            let alignment = align.map_or(32, u64::from);
            assert_eq!(g.alignment(), alignment);
            assert!(g.data_offset().is_multiple_of(alignment));
            let names: Vec<&str> = g.tensors().iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, tensors.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>());
            // The device reads the first file; the others are about parsing (and a browser's
            // readbacks are slow): the cpu reads them.
            let on = if align.is_none() && version == 3 { dev.clone() } else { cpu() };
            let loaded = g.all_tensors(file, &on)?;
            for ((name, got), (_, want)) in loaded.iter().zip(&tensors) {
                assert!(g.tensor_info(name).is_some_and(|t| t.offset.is_multiple_of(alignment)), "{name}");
                same_tensor(got, want, name).await?;
            }
            let again = writer(g.metadata(), &loaded)?.to_bytes_async().await?;
            assert_eq!(&again[8..], &bytes[8..], "v{version} rewritten");
        }
    }
    Ok(())
}

/// The test values of gen_gguf.py: (i * 0.37) mod 5 - 2.5, as f32.
fn f32_values(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i as f64 * 0.37) % 5.0 - 2.5) as f32).collect()
}

/// The metadata gen_gguf.py gives gguf-py, in its order.
fn gguf_py_metadata() -> Vec<(String, V)> {
    vec![
        kv("general.architecture", "llama".into()),
        kv("general.alignment", V::U32(64)),
        kv("t.u8", V::U8(200)),
        kv("t.i8", V::I8(-100)),
        kv("t.u16", V::U16(60000)),
        kv("t.i16", V::I16(-30000)),
        kv("t.u32", V::U32(4_000_000_000)),
        kv("t.i32", V::I32(-2_000_000_000)),
        kv("t.f32", V::F32(1.5)),
        kv("t.bool", V::Bool(true)),
        kv("t.string", "h\u{e9}llo \u{2713}".into()),
        kv("t.u64", V::U64((1 << 63) + 5)),
        kv("t.i64", V::I64(-(1 << 62))),
        kv("t.f64", V::F64(-0.1)),
        kv("t.strings", V::Array(A::String(vec!["a".into(), "bc".into(), "".into()]))),
        kv("t.u16s", V::Array(A::U16(vec![1, 2, 65535]))),
        kv("t.f64s", V::Array(A::F64(vec![0.5, -1e300]))),
        kv("t.bools", V::Array(A::Bool(vec![true, false, true]))),
        kv("t.nested", V::Array(A::Array(vec![A::I32(vec![1, 2]), A::I32(vec![3]), A::I32(vec![-4, 5, 6])]))),
    ]
}

/// gguf-py's file: its metadata, infos and values, and our writer's file of the same content is
/// byte-identical to it (`RWO_WRITE_VECTORS` set: written as tests/vectors/io/ours.gguf for
/// gen_gguf.py to read with gguf-py).
async fn gguf_reads_gguf_py_and_writes_its_bytes(dev: &Device) -> Result<()> {
    let g = Gguf::read(TINY_GGUF)?;
    assert_eq!((g.version(), g.metadata(), g.alignment()), (3, &gguf_py_metadata()[..], 64));
    let infos: Vec<(&str, &[usize], u32)> = g.tensors().iter().map(|t| (&*t.name, t.shape.dims(), t.type_id)).collect();
    let want: &[(&str, &[usize], u32)] = &[
        ("f32", &[2, 3], 0),
        ("f16", &[2, 2, 2], 1),
        ("bf16", &[2, 4], 30),
        ("f64", &[3], 28),
        ("i64", &[2, 2], 27),
        ("q8_0", &[2, 32], 8),
        ("q4_K", &[1, 256], 12),
    ];
    assert_eq!(infos, want);
    let load = |name: &str| g.tensor(TINY_GGUF, name, dev);
    let x = f32_values(8);
    assert_eq!(load("f32")?.plain()?.to_vec_async::<f32>().await?, x[..6]);
    let half: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    assert_eq!(load("f16")?.plain()?.flatten_all()?.to_vec_async::<f16>().await?, half);
    let brain: Vec<bf16> = x.iter().map(|v| bf16::from_bits((v.to_bits() >> 16) as u16)).collect();
    assert_eq!(load("bf16")?.plain()?.flatten_all()?.to_vec_async::<bf16>().await?, brain);
    if crate::float_dtypes(dev).contains(&DType::F64) {
        assert_eq!(load("f64")?.plain()?.to_vec_async::<f64>().await?, [0.0, 1.0 / 3.0, 2.0 / 3.0]);
    }
    assert_eq!(load("i64")?.plain()?.flatten_all()?.to_vec_async::<i64>().await?, [-(1 << 40), 7, 0, 1 << 62]);
    let q8 = load("q8_0")?.quantized()?;
    let ours = QTensor::quantize_async(&Tensor::from_vec(f32_values(64), [2, 32], dev)?, GgmlType::Q8_0).await?;
    assert_eq!(q8.to_bytes_async().await?, ours.to_bytes_async().await?, "q8_0: gguf-py's blocks are ggml's");
    assert_eq!(load("q4_K")?.quantized()?.to_bytes_async().await?, Q4_K[..144]);
    let loaded = g.all_tensors(TINY_GGUF, dev)?;
    let ours = writer(g.metadata(), &loaded)?.to_bytes_async().await?;
    #[cfg(not(target_family = "wasm"))]
    if std::env::var_os("RWO_WRITE_VECTORS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/io/ours.gguf");
        std::fs::write(path, &ours).map_err(|e| Error::Io { path: path.into(), msg: e.to_string() })?;
    }
    assert!(ours == TINY_GGUF, "our writer's file differs from gguf-py's");
    Ok(())
}

/// Every dtype, from any layout, with string metadata: read back with the same names, dtypes,
/// shapes and values, and written again byte for byte.
async fn safetensors_round_trip_of_every_dtype(dev: &Device) -> Result<()> {
    let mut tensors = vec![];
    for (i, &dtype) in
        DType::ALL.iter().filter(|&&d| !d.is_float() || crate::float_dtypes(dev).contains(&d)).enumerate()
    {
        tensors.push((format!("w.{dtype}"), rand_tensor(dev, dtype, &[4, 3], i as u64, -50.0, 300.0)?.t()?));
    }
    tensors.push(("scalar".into(), Tensor::from_vec(vec![-1i64], (), dev)?));
    tensors.push(("empty".into(), Tensor::zeros([2, 0], DType::BF16, dev)?));
    let named: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let metadata = HashMap::from([("format".to_string(), "pt".to_string()), ("ünï".into(), "✓".into())]);
    let bytes = safetensors::write_async(&named, Some(metadata.clone())).await?;
    // One key: the crate writes metadata in a HashMap's order, which two maps may not share.
    let one = || Some(HashMap::from([("format".to_string(), "pt".to_string())]));
    let bytes_one = safetensors::write_async(&named, one()).await?;
    let file = Safetensors::read(&bytes)?;
    assert_eq!(file.metadata(), Some(&metadata));
    let mut names = file.names();
    names.sort();
    let mut want: Vec<String> = tensors.iter().map(|(n, _)| n.clone()).collect();
    want.sort();
    assert_eq!(names, want);
    for (name, t) in &tensors {
        let got = file.tensor(&bytes, name, dev)?;
        assert_eq!((got.dtype(), got.shape()), (t.dtype(), t.shape()), "{name}");
        assert_eq!(got.to_cpu_storage_async().await?, t.to_cpu_storage_async().await?, "{name}");
    }
    let loaded = file.all_tensors(&bytes, dev)?;
    let named: Vec<(&str, &Tensor)> = loaded.iter().map(|(n, t)| (n.as_str(), t)).collect();
    assert!(safetensors::write_async(&named, one()).await? == bytes_one, "rewritten");
    Ok(())
}

/// The numpy-written file: metadata and values; ours of the same content is byte-identical;
/// an i32 tensor (a dtype the crate lacks) is a clear error.
async fn safetensors_reads_numpy_files_and_writes_their_bytes(dev: &Device) -> Result<()> {
    let file = Safetensors::read(TINY_SAFETENSORS)?;
    let meta = file.metadata().cloned().unwrap_or_default();
    assert_eq!(meta, HashMap::from([("format".to_string(), "np".to_string())]));
    let load = |name: &str| file.tensor(TINY_SAFETENSORS, name, dev);
    assert_eq!(load("f32")?.to_vec2_async::<f32>().await?, [f32_values(6)[..3].to_vec(), f32_values(6)[3..].to_vec()]);
    let half: Vec<f16> = f32_values(4).iter().map(|&v| f16::from_f32(v)).collect();
    assert_eq!(load("f16")?.to_vec_async::<f16>().await?, half);
    if crate::float_dtypes(dev).contains(&DType::F64) {
        assert_eq!(load("f64")?.to_vec_async::<f64>().await?, [0.0, 1.0 / 3.0, 2.0 / 3.0]);
    }
    assert_eq!(load("u8")?.to_vec_async::<u8>().await?, [0, 1, 255]);
    assert_eq!(
        (load("u32")?.dims().to_vec(), load("u32")?.flatten_all()?.to_vec_async::<u32>().await?),
        (vec![1, 2], vec![0, 4_000_000_000])
    );
    assert_eq!(load("i64")?.to_vec_async::<i64>().await?, [-(1 << 40), 7]);
    let loaded = file.all_tensors(TINY_SAFETENSORS, dev)?;
    let named: Vec<(&str, &Tensor)> = loaded.iter().map(|(n, t)| (n.as_str(), t)).collect();
    assert!(safetensors::write_async(&named, Some(meta)).await? == TINY_SAFETENSORS, "ours differs from numpy's");
    let i32s = Safetensors::read(I32_SAFETENSORS)?;
    let e = i32s.tensor(I32_SAFETENSORS, "x", dev).err();
    assert_eq!(e, Some(Error::UnsupportedFileType { format: "safetensors", tensor: "x".into(), ty: "I32".into() }));
    Ok(())
}

/// Both formats written to disk and read back through a memory map.
#[cfg(not(target_family = "wasm"))]
async fn files_are_memory_mapped(dev: &Device) -> Result<()> {
    let dir = std::env::temp_dir();
    let path = |ext: &str| dir.join(format!("rwo-io-{}-{}.{ext}", std::process::id(), dev.kind()));
    let io = |e: std::io::Error| Error::Io { path: "temp".into(), msg: e.to_string() };
    let (g, s) = (path("gguf"), path("safetensors"));
    std::fs::write(&g, TINY_GGUF).map_err(io)?;
    // SAFETY: the file is this test's own and nothing changes it while it is mapped.
    let file = unsafe { rocm_wgpu_ops::io::GgufFile::open(&g)? };
    assert_eq!((file.bytes(), file.gguf()), (TINY_GGUF, &Gguf::read(TINY_GGUF)?));
    assert_eq!(file.tensor("i64", dev)?.plain()?.flatten_all()?.to_vec::<i64>()?, [-(1 << 40), 7, 0, 1 << 62]);
    let x = Tensor::from_vec(vec![1u8, 2, 3], [3], dev)?;
    safetensors::write_file(&s, &[("x", &x)], None)?;
    // SAFETY: as above.
    let file = unsafe { rocm_wgpu_ops::io::SafetensorsFile::open(&s)? };
    assert_eq!((file.header().names(), file.tensor("x", dev)?.to_vec::<u8>()?), (vec!["x".to_string()], vec![1, 2, 3]));
    drop(file);
    std::fs::remove_file(&g).and(std::fs::remove_file(&s)).map_err(io)?;
    let missing = unsafe { rocm_wgpu_ops::io::GgufFile::open(&g) }.err();
    assert!(matches!(missing, Some(Error::Io { .. })), "{missing:?}");
    Ok(())
}

/// A GGUF file built field by field.
#[derive(Clone)]
struct Raw(Vec<u8>);

impl Raw {
    fn new(version: u32, tensors: u64, kvs: u64) -> Raw {
        Raw(b"GGUF".to_vec()).u32(version).u64(tensors).u64(kvs)
    }
    fn u32(mut self, v: u32) -> Raw {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Raw {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Raw {
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, s: &str) -> Raw {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }
    /// A tensor info: dims innermost first, as in the file.
    fn info(self, name: &str, ne: &[u64], ty: u32, offset: u64) -> Raw {
        let r = ne.iter().fold(self.str(name).u32(ne.len() as u32), |r, &d| r.u64(d));
        r.u32(ty).u64(offset)
    }
    /// Zeros to a multiple of 32, then `n` bytes of data.
    fn data(mut self, n: usize) -> Raw {
        self.0.resize(self.0.len().next_multiple_of(32) + n, 0);
        self
    }
}

fn gguf_err(bytes: &[u8]) -> Error {
    Gguf::read(bytes).err().unwrap_or_else(|| panic!("a {}-byte file read without error", bytes.len()))
}

/// Each malformed GGUF is its own error, never a panic.
fn gguf_rejects_bad_files() -> Result<()> {
    assert_eq!(gguf_err(b""), Error::BadMagic { format: "gguf", found: vec![] });
    assert_eq!(gguf_err(b"GGML\x03\0\0\0"), Error::BadMagic { format: "gguf", found: b"GGML".to_vec() });
    for version in [0, 1, 4, 3 << 24] {
        let e = gguf_err(&Raw::new(version, 0, 0).0);
        assert!(matches!(e, Error::UnsupportedVersion { version: v, .. } if v == version), "{e}");
    }
    let e = gguf_err(&Raw::new(3, 0, u64::MAX).0);
    assert!(matches!(e, Error::BadCount { count: u64::MAX, offset: 16, .. }), "{e}");
    let e = gguf_err(&Raw::new(3, 1 << 60, 0).0);
    assert!(matches!(e, Error::BadCount { count: 0x1000_0000_0000_0000, offset: 8, .. }), "{e}");
    let kv1 = Raw::new(3, 0, 1);
    let e = gguf_err(&kv1.clone().u64(1000).bytes(&[b'a'; 20]).0);
    assert!(matches!(e, Error::Truncated { offset: 32, needed: 1000, len: 52, .. }), "{e}");
    let e = gguf_err(&kv1.clone().u64(2).bytes(b"\xff\xfe").u32(4).u32(1).0);
    assert!(matches!(e, Error::NotUtf8 { offset: 32, .. }), "{e}");
    let e = gguf_err(&kv1.clone().str("k").u32(13).u32(0).0);
    assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("unknown value type 13")), "{e}");
    let e = gguf_err(&kv1.clone().str("k").u32(7).bytes(&[2]).0);
    assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("bool byte 2")), "{e}");
    let e = gguf_err(&kv1.clone().str("k").u32(9).u32(10).u64(1 << 61).u64(0).0);
    assert!(matches!(e, Error::BadCount { count: 0x2000_0000_0000_0000, remaining: 8, .. }), "{e}");
    let e = gguf_err(&kv1.clone().str("k").u32(9).u32(4).u64(2).u32(1).0);
    assert!(matches!(e, Error::BadCount { count: 2, offset: 41, remaining: 4, .. }), "{e}");
    let e = gguf_err(&kv1.clone().str("k").u32(9).u32(8).u64(1).u64(100).bytes(b"abc").0);
    assert!(matches!(e, Error::Truncated { offset: 57, needed: 100, len: 60, .. }), "{e}");
    let nested = |depth: usize| (0..depth).fold(kv1.clone().str("k").u32(9), |r, _| r.u32(9).u64(1)).u32(0).u64(0);
    Gguf::read(&nested(7).data(0).0)?;
    let e = gguf_err(&nested(7).0);
    assert!(matches!(&e, Error::Truncated { what, .. } if what.contains("padding before the data")), "{e}");
    let e = gguf_err(&nested(8).0);
    assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("nested deeper")), "{e}");
    let twice = Raw::new(3, 0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2);
    assert!(matches!(gguf_err(&twice.0), Error::BadFile { msg, .. } if msg.contains("given twice")));
    for align in [V::U32(48), V::U32(0), V::U64(32)] {
        let mut r = kv1.clone().str("general.alignment").u32(align.type_id());
        r = if let V::U64(a) = align { r.u64(a) } else { r.u32(align.to_u64().unwrap_or(0) as u32) };
        let e = gguf_err(&r.0);
        assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("power of two")), "{e}");
    }

    let t1 = |ne: &[u64], ty: u32, offset: u64, data: usize| Raw::new(3, 1, 0).info("w", ne, ty, offset).data(data).0;
    let e = gguf_err(&t1(&[4], 0, 0, 8));
    assert_eq!(e, Error::DataOutOfRange { format: "gguf", tensor: "w".into(), start: 0, end: 16, len: 8 });
    let e = gguf_err(&t1(&[8], 0, u64::MAX - 31, 16));
    assert!(matches!(e, Error::DataOutOfRange { start: 0xffff_ffff_ffff_ffe0, end: u64::MAX, len: 16, .. }), "{e}");
    let e = gguf_err(&t1(&[4], 0, 4, 32));
    assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("not a multiple of the alignment 32")), "{e}");
    let e = gguf_err(&t1(&[1, 1, 1, 1, 1], 0, 0, 4));
    assert!(matches!(e, Error::BadCount { count: 5, .. }), "{e}");
    let e = gguf_err(&t1(&[16, 2], 8, 0, 64));
    assert!(matches!(e, Error::BlockShape { ty: "q8_0", block: 32, .. }), "{e}");
    // Dims that fit a 32-bit usize (wasm32) whose product does not fit the address space.
    let e = gguf_err(&t1(&[1 << 31, 1 << 31], 0, 0, 64));
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e}");
    // A dim past a 32-bit usize is refused there as such; natively its 2^42 bytes are past the
    // data.
    let e = gguf_err(&t1(&[1 << 40], 0, 0, 64));
    if usize::BITS == 32 {
        assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("past usize")), "{e}");
    } else {
        assert!(matches!(e, Error::DataOutOfRange { .. }), "{e}");
    }
    let overlap = Raw::new(3, 2, 0).info("a", &[16], 0, 0).info("b", &[4], 0, 32).data(64).0;
    let e = gguf_err(&overlap);
    assert_eq!(e, Error::TensorBytes { format: "gguf", tensor: "a".into(), expected: 64, got: 32 });
    let same_name = Raw::new(3, 2, 0).info("a", &[4], 0, 0).info("a", &[4], 0, 32).data(64).0;
    assert!(matches!(gguf_err(&same_name), Error::BadFile { msg, .. } if msg.contains("given twice")));

    // Types read only when the tensor is: an id ggml does not have, one the crate lacks.
    let dev = cpu();
    for (ty, want) in [
        (99, Error::UnknownBlockType { id: 99 }),
        (9, Error::UnknownBlockType { id: 9 }),
        (26, Error::UnsupportedFileType { format: "gguf", tensor: "w".into(), ty: "i32".into() }),
    ] {
        let file = t1(&[4], ty, 0, 16);
        let g = Gguf::read(&file)?;
        assert_eq!(g.tensor(&file, "w", &dev).err(), Some(want));
    }
    let file = t1(&[4], 0, 0, 16);
    let g = Gguf::read(&file)?;
    assert_eq!(g.tensor(&file, "v", &dev).err(), Some(Error::MissingTensor { format: "gguf", name: "v".into() }));
    let e = g.tensor(&file[..file.len() - 1], "w", &dev).err();
    assert!(matches!(e, Some(Error::DataOutOfRange { end: 16, len: 15, .. })), "{e:?}");

    // Every prefix of a good file fails until its last tensor's data is whole.
    let good = GgufWriter::new()
        .metadata("a", V::Array(A::String(vec!["s".into()])))
        .tensor("x", &Tensor::from_vec(vec![1f32, 2.], [2], &dev)?)?
        .to_bytes()?;
    let whole = Gguf::read(&good)?.data_offset() as usize + 8;
    for n in 0..good.len() {
        match (Gguf::read(&good[..n]), n) {
            (Ok(_), n) => assert!(n >= whole, "{n} bytes read"),
            (Err(Error::BadMagic { .. }), 0..4) => {}
            (Err(Error::Truncated { .. } | Error::BadCount { .. }), 4..) => {}
            (Err(Error::DataOutOfRange { .. }), _) => assert!(n < whole),
            (Err(e), n) => panic!("{n} bytes: {e}"),
        }
    }
    Ok(())
}

/// A dtype GGUF has no type for, a name given twice, a rank ggml cannot read, a bad alignment.
fn gguf_writer_rejects_what_gguf_cannot_hold() -> Result<()> {
    let dev = cpu();
    let mut w = GgufWriter::new();
    let u8s = Tensor::from_vec(vec![1u8], [1], &dev)?;
    let e = w.tensor("b", &u8s).err();
    assert_eq!(e, Some(Error::UnsupportedFileType { format: "gguf", tensor: "b".into(), ty: "u8".into() }));
    let x = Tensor::zeros([1, 1, 1, 1, 1], DType::F32, &dev)?;
    assert!(matches!(w.tensor("x", &x), Err(Error::BadFile { msg, .. }) if msg.contains("rank 5")));
    w.tensor("x", &x.squeeze(0)?)?;
    assert!(matches!(w.tensor("x", &x.squeeze(0)?), Err(Error::BadFile { msg, .. }) if msg.contains("given twice")));
    w.metadata("general.alignment", V::U32(3));
    assert!(matches!(w.to_bytes(), Err(Error::BadFile { msg, .. }) if msg.contains("power of two")));
    w.metadata("general.alignment", V::U32(8));
    let nine = (0..9).fold(A::U8(vec![]), |a, _| A::Array(vec![a]));
    w.metadata("deep", V::Array(nine));
    assert!(matches!(w.to_bytes(), Err(Error::BadFile { msg, .. }) if msg.contains("nested deeper")));
    Ok(())
}

/// A safetensors file of `header` (JSON) and `data` bytes of data.
fn st(header: &[u8], data: usize) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header);
    b.resize(b.len() + data, 0);
    b
}

fn st_err(bytes: &[u8]) -> Error {
    Safetensors::read(bytes).err().unwrap_or_else(|| panic!("a {}-byte file read without error", bytes.len()))
}

/// Each malformed safetensors file is its own error, never a panic.
fn safetensors_rejects_bad_files() -> Result<()> {
    let f = "safetensors";
    assert!(matches!(st_err(b"\x01\x02"), Error::Truncated { needed: 8, len: 2, .. }));
    let e = st_err(&u64::MAX.to_le_bytes());
    assert!(matches!(e, Error::BadCount { count: u64::MAX, .. }), "{e}");
    let mut short = 100u64.to_le_bytes().to_vec();
    short.extend_from_slice(b"{}");
    assert!(matches!(st_err(&short), Error::Truncated { offset: 8, needed: 100, len: 10, .. }));
    let e = st_err(&st(b"{\"\xff\": 1}", 0));
    assert!(matches!(e, Error::NotUtf8 { offset: 8, .. }), "{e}");
    assert!(matches!(st_err(&st(b"{bad json", 0)), Error::BadFile { .. }));
    let x = |offsets: &str| format!(r#"{{"x":{{"dtype":"F32","shape":[2,3],"data_offsets":{offsets}}}}}"#).into_bytes();
    Safetensors::read(&st(&x("[0,24]"), 24))?;
    let (start, e) = (8 + x("[0,24]").len() as u64, st_err(&st(&x("[0,24]"), 20)));
    assert_eq!(
        e,
        Error::Truncated { format: f, what: "the data section".into(), offset: start, needed: 24, len: start + 20 }
    );
    let e = st_err(&st(&x("[0,24]"), 30));
    assert!(matches!(&e, Error::BadFile { msg, .. } if msg.contains("6 bytes follow")), "{e}");
    assert_eq!(
        st_err(&st(&x("[0,20]"), 20)),
        Error::TensorBytes { format: f, tensor: "x".into(), expected: 24, got: 20 }
    );
    let file = st(&x("[0,24]"), 24);
    let g = Safetensors::read(&file)?;
    assert_eq!(g.tensor(&file, "y", &cpu()).err(), Some(Error::MissingTensor { format: f, name: "y".into() }));
    assert!(matches!(g.tensor(&file[..70], "x", &cpu()), Err(Error::DataOutOfRange { end: 24, len: 5, .. })));
    let x = cpu_tensor()?;
    let e = safetensors::write(&[("x", &x), ("x", &x)], None).err();
    assert!(matches!(e, Some(Error::BadFile { msg, .. }) if msg.contains("given twice")));
    Ok(())
}

fn cpu_tensor() -> Result<Tensor> {
    Tensor::from_cpu(CpuStorage::F32(vec![1.0]), Shape::new(vec![1]), &cpu())
}
