//! The cooperative-matrix pass of `sdpa` (`sdpa_coop` in `shaders/attention.wgsl`; ARCHITECTURE.md,
//! the attention family): f16 attention on the 16 x 16 x 16 products the f16 GEMM runs on, where
//! q, k and v rows are whole aligned 16-byte words. Its entry is generated here so that every
//! fragment and accumulator is its own variable.

use crate::spec::attention::Sdpa;
use std::fmt::Write;

/// Query rows a workgroup (16 a subgroup, four subgroups of 32), keys a tile, invocations.
pub(super) const BQ: u32 = 64;
pub(super) const BK: u32 = 32;
pub(super) const WG: u32 = 128;

/// D and Dv padded: the kernel's width (64 or 128), or `None` where the pass cannot take them.
pub(super) fn width(p: &Sdpa) -> Option<u32> {
    let whole = p.d.is_multiple_of(8) && p.dv.is_multiple_of(8) && p.d > 0 && p.dv > 0;
    match p.d.max(p.dv) {
        _ if !whole => None,
        0..=64 => Some(64),
        65..=128 => Some(128),
        _ => None,
    }
}

/// Padding of a row in workgroup memory, in elements: 16 bytes of halves (the k and v tiles,
/// the weights), of floats (the scores), as the f16 GEMM's tiles (2.6x faster than unpadded).
const PAD_H: u32 = 8;
const PAD_F: u32 = 4;

// q's rows are staged in the k and v tiles; two output fragments park in a subgroup's scores.
const _: () = assert!(BQ <= 2 * BK && 2 * 256 <= 16 * (BK + PAD_F));

/// Bytes of workgroup memory the kernel of width `dp` declares: the k and v tiles (q's rows
/// staged there first), the subgroups' scores in f32 and their weights in f16, and the flag of a
/// tile's rescaling.
pub(super) fn bytes(dp: u32) -> u32 {
    2 * BK * (dp + PAD_H) * 2 + BQ * (BK + PAD_F) * 4 + BQ * (BK + PAD_H) * 2 + 4
}

/// `const` lines of the kernel of width `dp`: name and WGSL value.
pub(super) fn constants(dp: u32) -> [(&'static str, String); 7] {
    let u = |v: u32| format!("{v}u");
    [
        ("BQ", u(BQ)),
        ("BK", u(BK)),
        ("DP", u(dp)),
        ("KS", u(dp + PAD_H)),
        ("SS", u(BK + PAD_F)),
        ("PS", u(BK + PAD_H)),
        ("TW", u(BK * dp / 8 / WG)),
    ]
}

/// Two accumulators at a time through the subgroup's rows of ss (`{a}` and `{b}` their names):
/// the lines storing them there (rows of 16).
fn park(s: &mut String, indent: &str, a: &str, b: &str) {
    let _ = writeln!(s, "{indent}let {a}_at = sg * 16u * SS;\n{indent}coopStoreT({a}, &ss[{a}_at], 16u);");
    let _ = writeln!(s, "{indent}let {b}_at = {a}_at + 256u;\n{indent}coopStoreT({b}, &ss[{b}_at], 16u);");
}

/// The products of a tile's scores `Q K^T` (k's tile at 0 of kv) into the subgroup's rows of ss.
fn scores(f: u32) -> String {
    let mut s = String::new();
    for n in 0..BK / 16 {
        let _ = writeln!(s, "        var s{n} = coop_mat16x16<f32, C>();");
    }
    for kk in 0..f {
        for n in 0..BK / 16 {
            let _ = writeln!(s, "        let ki{n}_{kk} = {}u * KS + {}u;", 16 * n, 16 * kk);
            let _ = writeln!(s, "        let kb{n}_{kk} = coopLoad<coop_mat16x16<f16, B>>(&kv[ki{n}_{kk}], KS);");
            let _ = writeln!(s, "        s{n} = coopMultiplyAdd(q{kk}, kb{n}_{kk}, s{n});");
        }
    }
    for n in 0..BK / 16 {
        let _ = writeln!(s, "        let si{n} = sg * 16u * SS + {}u;", 16 * n);
        let _ = writeln!(s, "        coopStoreT(s{n}, &ss[si{n}], SS);");
    }
    s
}

/// A tile that raised some row's reference max past TAU: every accumulator through ss and back,
/// two at a time, its rows scaled by their lanes.
fn rescale(f: u32) -> String {
    let mut s = String::from("        if (workgroupUniformLoad(&c_flag) != 0u) {\n");
    for n in (0..f).step_by(2) {
        let (a, b) = (format!("o{n}"), format!("o{}", n + 1));
        s += "            workgroupBarrier();\n";
        park(&mut s, "            ", &a, &b);
        s += "            workgroupBarrier();\n            coop_rescale(sg, lane);\n            workgroupBarrier();\n";
        for x in [&a, &b] {
            let _ = writeln!(s, "            {x} = coopLoadT<coop_mat16x16<f32, C>>(&ss[{x}_at], 16u);");
        }
    }
    s + "            coop_rescaled(lid);\n        }\n"
}

/// `P V` added to the accumulators (v's tile at BK rows of kv).
fn products(f: u32) -> String {
    let mut s = String::new();
    for ks in 0..BK / 16 {
        let _ = writeln!(s, "        let pi{ks} = sg * 16u * PS + {}u;", 16 * ks);
        let _ = writeln!(s, "        let pa{ks} = coopLoadT<coop_mat16x16<f16, A>>(&ps[pi{ks}], PS);");
        for n in 0..f {
            let _ = writeln!(s, "        let vi{ks}_{n} = BK * KS + {}u * KS + {}u;", 16 * ks, 16 * n);
            let _ = writeln!(s, "        let vb{ks}_{n} = coopLoadT<coop_mat16x16<f16, B>>(&kv[vi{ks}_{n}], KS);");
            let _ = writeln!(s, "        o{n} = coopMultiplyAdd(pa{ks}, vb{ks}_{n}, o{n});");
        }
    }
    s
}

/// The entry of the kernel of width `dp`: q's fragments loaded once, one pass over the keys (each
/// tile staged, the next one fetched into registers while this one is computed), then the
/// output two fragments at a time.
pub(super) fn entry(dp: u32) -> String {
    let f = dp / 16;
    let mut s = String::from(
        "@compute @workgroup_size(WG)
fn sdpa_coop(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let g = wid.x + wid.y * nwg.x;
    if (g >= md[MA + 9u]) {
        return;
    }
    coop_setup(g, sg, lane);
    coop_rescaled(lid);
    coop_stage_q(lid);
    workgroupBarrier();
",
    );
    // naga's SPIR-V writer wants every pointer index bound by `let` first.
    for kk in 0..f {
        let _ = writeln!(s, "    let qi{kk} = sg * 16u * KS + {}u;", 16 * kk);
        let _ = writeln!(s, "    let q{kk} = coopLoadT<coop_mat16x16<f16, A>>(&kv[qi{kk}], KS);");
    }
    for n in 0..f {
        let _ = writeln!(s, "    var o{n} = coop_mat16x16<f32, C>();");
    }
    let (sc, rs, pr) = (scores(f), rescale(f), products(f));
    let _ = write!(
        s,
        "    if (c_kbegin < c_kend) {{
        coop_fetch(true, c_kbegin, lid);
        coop_fetch(false, c_kbegin, lid);
    }}
    for (var j0 = c_kbegin; j0 < c_kend; j0 += BK) {{
        workgroupBarrier();
        coop_put(true, lid);
        coop_put(false, lid);
        workgroupBarrier();
        if (j0 + BK < c_kend) {{
            coop_fetch(true, j0 + BK, lid);
            coop_fetch(false, j0 + BK, lid);
        }}
{sc}        workgroupBarrier();
        coop_weights(j0, sg, lane);
{rs}{pr}    }}
    coop_sum();
"
    );
    for n in (0..f).step_by(2) {
        s += "    workgroupBarrier();\n";
        park(&mut s, "    ", &format!("o{n}"), &format!("o{}", n + 1));
        let _ = writeln!(
            s,
            "    workgroupBarrier();\n    coop_out({n}u, 0u, sg, lane);\n    coop_out({}u, 1u, sg, lane);",
            n + 1
        );
    }
    s + "}\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::attention::MaskKind;

    fn sdpa(d: usize, dv: usize) -> Sdpa {
        Sdpa { b: 1, hq: 4, hkv: 2, lq: 20, lk: 30, d, dv, causal: true, scale: 0.5, mask: MaskKind::None }
    }

    #[test]
    fn widths_pad_whole_words_up_to_128() {
        let widths: Vec<_> = [(64, 64), (8, 16), (72, 64), (64, 128), (128, 128), (136, 64), (12, 16), (64, 0)]
            .map(|(d, dv)| width(&sdpa(d, dv)))
            .into();
        assert_eq!(widths, [Some(64), Some(64), Some(128), Some(128), Some(128), None, None, None]);
    }

    #[test]
    fn the_kernel_fits_webgpus_workgroup_limits_at_both_widths() {
        for dp in [64, 128] {
            // Tiles in whole passes of the workgroup.
            assert_eq!((BK * dp / 8) % WG, 0);
            assert!(bytes(dp) <= 32768, "{dp}: {}", bytes(dp));
        }
    }
}
