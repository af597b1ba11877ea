//! The f16 GEMM on cooperative matrices (wgpu's `EXPERIMENTAL_COOPERATIVE_MATRIX`, tensor
//! cores on NVIDIA): 16 x 16 x 16 products of f16 with f32 accumulators. A workgroup of
//! subgroups of 32 takes a `bm x bn` tile of C, each subgroup `wm x wn` matrices of 16 x 16 of
//! it; A and B pass through workgroup memory, fetched a step ahead into registers or not
//! ([`CoopTiles::pipe`]). The entry is generated here so that every accumulator is its own
//! variable.

use super::codegen::{Variant, k_loop, operand};
use super::tiles::{CoopTiles, Load, SUBGROUP, TILE};
use crate::spec::matmul::MatmulOp;
use crate::wgpu::kernel::{Spec, section};
use crate::wgpu::repr::{Caps, Repr};
use crate::{BackendKind, Error, Result};
use std::fmt::Write;

/// `spec` (bindings and element code in place) completed as the coop kernel `t`.
pub(super) fn specialise(mut spec: Spec, caps: Caps, t: &CoopTiles, v: &Variant, src: &str) -> Result<Spec> {
    let bad = |msg: String| Error::Backend { backend: BackendKind::Wgpu, msg };
    if !t.is_valid() {
        return Err(Error::InvalidParam {
            op: MatmulOp::Matmul.name(),
            msg: format!("cooperative tile configuration {t}"),
        });
    }
    if Repr::of(v.dtype, caps, MatmulOp::Matmul.name())? != Repr::F16 {
        return Err(bad(format!("the cooperative-matrix kernel takes f16 with SHADER_F16, not {}", v.dtype)));
    }
    spec.workgroup = t.workgroup();
    spec.enables.push("wgpu_cooperative_matrix");
    let (_, sn) = t.subgroups();
    for (name, val) in [("BM", t.bm), ("BN", t.bn), ("BK", t.bk), ("WM", t.wm), ("WN", t.wn), ("SGN", sn)] {
        spec = spec.constant(name, format!("{val}u"));
    }
    spec = spec.code(section(src, "coop_common")).code(section(src, "coop_epilogue"));
    for (a, ot, load) in [(true, t.bm, v.a), (false, t.bn, v.b)] {
        let p = if a { "A" } else { "B" };
        let (ss, sz) = t.layout(ot, load);
        // Vectors of eight halves per invocation, or groups of four gathered.
        let nv = ot * t.bk / if load == Load::Gather { 4 } else { CoopTiles::VEC as u32 } / t.workgroup();
        for (name, val) in [("OT", ot), ("SS", ss), ("SZ", sz), ("NV", nv)] {
            spec = spec.code(format!("const {p}_{name}: u32 = {val}u;"));
        }
        let x = if a { "a" } else { "b" };
        spec = spec.code(format!("var<workgroup> {x}_sh: array<f16, {}u>;", t.buffers() * sz));
        if load == Load::Gather && (a || v.gather.is_none()) {
            spec = spec.code(operand(src, "strided_gather", a));
        }
        let sec = match load {
            Load::KVec => "coop_kvec",
            Load::OVec => "coop_ovec",
            Load::Gather => "coop_gather",
        };
        spec = spec.code(operand(src, sec, a));
        if load == Load::Gather {
            spec = spec.code(operand(src, "gather_fetch", a));
        } else {
            spec = spec.code(operand(src, "vec_setup", a)).code(operand(src, "coop_put", a));
        }
    }
    spec = spec.code(format!("var<workgroup> c_sh: array<f32, {}u>;", TILE * TILE * t.workgroup() / SUBGROUP));
    Ok(spec.code(entry(t, v.a, v.b)))
}

/// The kernel's entry, every fragment and accumulator unrolled, for operands loaded as `a`
/// and `b` (which decides how each is held: see `shaders/matmul.wgsl`).
fn entry(t: &CoopTiles, a: Load, b: Load) -> String {
    let mut s = String::from(
        "@compute @workgroup_size(WG)
fn coop(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let flat = group_index(wid, nwg);
    let per = gmeta(MD_TILES) * gmeta(MD_BATCHES);
    let live = flat < per * gmeta(MD_PARTS);
    let last = min(flat, per * gmeta(MD_PARTS) - 1u);
    let part = last / per;
    let tile = tile_of(last % per);
    let off = batch_offsets(tile.x);
    let k0 = part * gmeta(MD_PART_K);
    k_hi = k_end(k0);
    let m0 = tile.y * BM;
    let n0 = tile.z * BN;
    let wm0 = (sg / SGN) * (16u * WM);
    let wn0 = (sg % SGN) * (16u * WN);
    a_setup(m0, off.x, lid);
    b_setup(n0, off.y, lid);
",
    );
    for i in 0..t.wm {
        for j in 0..t.wn {
            let _ = writeln!(s, "    var acc{i}_{j} = coop_mat16x16<f32, C>();");
        }
    }
    let mut step = String::from("        for (var kk = 0u; kk < BK; kk += 16u) {\n");
    // A held along K is row-major (coopLoadT), B held along K column-major (coopLoad), and
    // the other way round held along the outer dim.
    for (x, p, w0, n, load) in [("a", "A", "wm0", t.wm, a), ("b", "B", "wn0", t.wn, b)] {
        let f = if (x == "a") == (load == Load::KVec) { "coopLoadT" } else { "coopLoad" };
        for i in 0..n {
            let at = if load == Load::KVec {
                format!("{x}b + ({w0} + {}u) * {p}_SS + kk", 16 * i)
            } else {
                format!("{x}b + kk * {p}_SS + {w0} + {}u", 16 * i)
            };
            // naga's SPIR-V writer wants every pointer index bound by `let` first.
            let _ = writeln!(step, "            let {x}i{i} = {at};");
            let _ = writeln!(step, "            let {x}{i} = {f}<coop_mat16x16<f16, {p}>>(&{x}_sh[{x}i{i}], {p}_SS);");
        }
    }
    for i in 0..t.wm {
        for j in 0..t.wn {
            let _ = writeln!(step, "            acc{i}_{j} = coopMultiplyAdd(a{i}, b{j}, acc{i}_{j});");
        }
    }
    step += "        }\n";
    s += &k_loop(t.pipe, ["A_SZ", "B_SZ"], &step);
    s += "    let base = (part * gmeta(MD_BATCHES) + tile.x) * gmeta(MD_M) * gmeta(MD_N);
    let at = sg * 256u;
";
    for i in 0..t.wm {
        for j in 0..t.wn {
            let _ = writeln!(
                s,
                "    coopStoreT(acc{i}_{j}, &c_sh[at], 16u);\n    workgroupBarrier();\n    \
                 c_tile(base, m0 + wm0 + {}u, n0 + wn0 + {}u, at, lane, live);\n    workgroupBarrier();",
                16 * i,
                16 * j
            );
        }
    }
    s + "}\n"
}
