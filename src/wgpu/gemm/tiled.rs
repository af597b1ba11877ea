//! The tiled GEMM and the matrix-vector kernels (`shaders/matmul.wgsl`) specialised for a
//! configuration: constants, the operands' loader sections, and the generated inner products,
//! epilogue and entry of the tiled kernel (every register index a constant).

use super::codegen::{Variant, k_loop, operand, run4_code};
use super::tiles::{Load, MatVec, MvTiles, Tiles};
use crate::spec::matmul::MatmulOp;
use crate::wgpu::kernel::Spec;
use crate::{Error, Result};
use std::fmt::Write;

/// `spec` (bindings and element code in place) completed as the tiled kernel `t` for problems
/// of `shape`, the operand sections taken from `src`.
pub(super) fn specialise(mut spec: Spec, t: &Tiles, shape: &Variant, src: &str) -> Result<Spec> {
    if !t.is_valid() {
        return Err(Error::InvalidParam { op: MatmulOp::Matmul.name(), msg: format!("tile configuration {t}") });
    }
    spec.workgroup = t.workgroup();
    let consts = [("BM", t.bm), ("BN", t.bn), ("BK", t.bk), ("TM", t.tm), ("TN", t.tn)];
    for (name, v) in consts.into_iter().chain([("TX", t.bn / t.tn), ("TY", t.bm / t.tm)]) {
        spec = spec.constant(name, format!("{v}u"));
    }
    for (a, ot, load) in [(true, t.bm, shape.a), (false, t.bn, shape.b)] {
        let p = if a { "A" } else { "B" };
        let (sz4, s4) = t.layout(ot, load == Load::KVec);
        let nv = ot * t.bk / (4 * t.workgroup());
        for (name, v) in [("OT", ot), ("S4", s4), ("SZ4", sz4), ("NV", nv)] {
            spec = spec.code(format!("const {p}_{name}: u32 = {v}u;"));
        }
        if load == Load::Gather && (a || shape.gather.is_none()) {
            spec = spec.code(operand(src, "strided_gather", a));
        }
        let common = if load == Load::Gather { "gather_fetch" } else { "vec_setup" };
        spec = spec.code(operand(src, common, a));
        spec = spec.code(operand(src, &load.section("tiled"), a));
    }
    Ok(spec.code(micro(t, shape.a == Load::KVec, shape.b == Load::KVec)).code(entry()))
}

/// `spec` completed as the matrix-vector kernel `v` for problems of `shape`.
pub(super) fn specialise_matvec(mut spec: Spec, v: &MatVec, shape: &Variant) -> Result<Spec> {
    let MvTiles { ks, lanes, unroll } = v.tiles;
    if !v.tiles.is_valid() {
        return Err(Error::InvalidParam {
            op: MatmulOp::Matmul.name(),
            msg: format!("matrix-vector split {}", v.tiles),
        });
    }
    spec.workgroup = lanes * ks;
    spec = spec.constant("MV_M", format!("{}u", v.m)).constant("KS", format!("{ks}u"));
    spec = spec.constant(if v.rows { "RW" } else { "CW" }, format!("{lanes}u"));
    spec = spec.constant("MV_U", format!("{unroll}u"));
    let vec_a = shape.a == Load::KVec;
    let vec_b = if v.rows { shape.b == Load::KVec } else { shape.b == Load::OVec };
    Ok(spec.code(run4_code("a", vec_a)).code(run4_code("b", vec_b)))
}

/// The tiled kernel's entry: a BM x BN tile of C per workgroup (tiles swept by `tile_of`), K in
/// steps of BK through two workgroup buffers ([`k_loop`]'s double buffering), `micro` on each
/// step's buffers and `epilogue` at the end (both generated for the way each operand is held).
fn entry() -> String {
    let head = "var<workgroup> a_s4: array<vec4<T>, 2u * A_SZ4>;
var<workgroup> b_s4: array<vec4<T>, 2u * B_SZ4>;
var<private> acc: array<vec4<T>, TM * TN / 4u>;

@compute @workgroup_size(WG)
fn tiled(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = group_index(wid, nwg);
    let per = gmeta(MD_TILES) * gmeta(MD_BATCHES);
    if (g >= per * gmeta(MD_PARTS)) {
        return;
    }
    let part = g / per;
    let tile = tile_of(g % per);
    let off = batch_offsets(tile.x);
    let m0 = tile.y * BM;
    let n0 = tile.z * BN;
    let tx = lid % TX;
    let ty = lid / TX;
    let k0 = part * gmeta(MD_PART_K);
    k_hi = k_end(k0);
    a_setup(m0, off.x, lid);
    b_setup(n0, off.y, lid);
";
    let steps = k_loop(2, ["A_SZ4", "B_SZ4"], "        micro(ab, bb, tx, ty);\n");
    format!("{head}{steps}    epilogue(part * gmeta(MD_BATCHES) + tile.x, m0, n0, tx, ty);\n}}\n")
}

/// The inner products of the tiled kernel over one buffer (`ab`, `bb`: its first vector in
/// each operand), four K at a time, unrolled so that every register index is a constant, and
/// the epilogue. Invocation (tx, ty) holds rows `(g TY + ty) 4 + q` and columns
/// `(h TX + tx) 4 + c` of the tile; `a_k`/`b_k`: the operand is held along K.
fn micro(t: &Tiles, a_k: bool, b_k: bool) -> String {
    let (gm, gn) = (t.tm / 4, t.tn / 4);
    let lane = |c: u32| ["x", "y", "z", "w"][c as usize];
    let row = |r: u32| format!("({}u * TY + ty) * 4u + {}u", r / 4, r % 4);
    let col = |j: u32| format!("({}u * TX + tx) * 4u + {}u", j / 4, j % 4);
    let mut s = String::from(
        "fn micro(ab: u32, bb: u32, tx: u32, ty: u32) {
    for (var kq = 0u; kq < BK / 4u; kq++) {
",
    );
    if a_k {
        for r in 0..t.tm {
            let _ = writeln!(s, "        let a{r} = a_s4[ab + ({}) * A_S4 + kq];", row(r));
        }
    } else {
        for c in 0..4 {
            for g in 0..gm {
                let _ = writeln!(s, "        let a{g}_{c} = a_s4[ab + (kq * 4u + {c}u) * A_S4 + {g}u * TY + ty];");
            }
        }
    }
    if b_k {
        for j in 0..t.tn {
            let _ = writeln!(s, "        let b{j} = b_s4[bb + ({}) * B_S4 + kq];", col(j));
        }
    } else {
        for c in 0..4 {
            for h in 0..gn {
                let _ = writeln!(s, "        let b{h}_{c} = b_s4[bb + (kq * 4u + {c}u) * B_S4 + {h}u * TX + tx];");
            }
        }
    }
    for c in 0..4 {
        for h in 0..gn {
            let bv = if b_k {
                let l = lane(c);
                format!("vec4<T>(b{}.{l}, b{}.{l}, b{}.{l}, b{}.{l})", 4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3)
            } else {
                format!("b{h}_{c}")
            };
            let _ = writeln!(s, "        let bv{h}_{c} = {bv};");
        }
        for r in 0..t.tm {
            let a = if a_k { format!("a{r}.{}", lane(c)) } else { format!("a{}_{c}.{}", r / 4, lane(r % 4)) };
            for h in 0..gn {
                let i = r * gn + h;
                let _ = writeln!(s, "        acc[{i}] = fma(vec4<T>({a}), bv{h}_{c}, acc[{i}]);");
            }
        }
    }
    s += "    }\n}\n";
    s += "fn epilogue(b: u32, m0: u32, n0: u32, tx: u32, ty: u32) {\n";
    s += "    let mn = gmeta(MD_M);\n    let nn = gmeta(MD_N);\n    let base = b * mn * nn;\n";
    for r in 0..t.tm {
        let _ = writeln!(s, "    let row{r} = m0 + {};", row(r));
        let _ = writeln!(s, "    if (row{r} < mn) {{");
        for h in 0..gn {
            let _ = writeln!(
                s,
                "        c_row4(base + row{r} * nn, n0 + ({h}u * TX + tx) * 4u, nn, 1u, acc[{}]);",
                r * gn + h
            );
        }
        s += "    }\n";
    }
    s + "}\n"
}
