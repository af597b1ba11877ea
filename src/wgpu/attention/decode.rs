//! The decode pass of `sdpa` (`sdpa_decode` in `shaders/attention.wgsl`; ARCHITECTURE.md, the
//! attention family): up to [`ROWS`] query rows a kv head (decoding) against a key range, q, k and
//! v read as 16-byte words, in f32, f16 and bf16 where their rows are whole aligned words.

use super::super::repr::Repr;
use crate::spec::attention::Sdpa;
use std::fmt::Write;

/// The most query rows (`group x Lq`) the pass takes: all of them in one workgroup.
pub(super) const ROWS: u32 = 8;
/// The entries' row counts: a workgroup's rows rounded up to one of these, each an entry that
/// forms only that many rows' scores (one row's 16 dot products a word of k, not eight's).
pub(super) const ROW_COUNTS: [u32; 4] = [1, 2, 4, ROWS];
/// Invocations a workgroup, and keys a tile (one an invocation for the scores).
pub(super) const WG: u32 = 128;
/// Partial maxima a row (`RED` invocations a row each take `WG / RED` keys of the tile).
const RED: u32 = 16;
/// Words of k a key's invocation loads at a time, and of v a weighted-sum triple does.
const KB: u32 = 16;
const VB: u32 = 8;
/// Triples (key group, row, word of a v row) an invocation takes, and the most key groups.
const PN: u32 = 2;
const KHMAX: u32 = 32;
/// The longest q and k rows, in f32 quads (256 values), and v rows, in words.
const DQ: u32 = 64;
const VWORDS: u32 = PN * WG / ROWS;

const _: () = assert!(ROWS * RED == WG);

/// Values of a 16-byte word in `r` (8 halves or 4 floats), or `None` where the pass does not
/// take the type.
pub(super) fn per_word(r: Repr) -> Option<usize> {
    match r {
        Repr::F16 | Repr::F16Packed | Repr::BF16 => Some(8),
        Repr::F32 => Some(4),
        _ => None,
    }
}

/// Whether the pass takes these rows and widths: D up to 256 values and a v row up to
/// [`VWORDS`] words, both whole words.
pub(super) fn fits(r: Repr, p: &Sdpa) -> bool {
    let Some(ve) = per_word(r) else { return false };
    let whole = p.d > 0 && p.dv > 0 && p.d.is_multiple_of(ve) && p.dv.is_multiple_of(ve);
    let rows = p.hq / p.hkv * p.lq;
    whole && (1..=ROWS as usize).contains(&rows) && p.d <= 4 * DQ as usize && p.dv <= VWORDS as usize * ve
}

/// `const` lines of the pass for `r` (one of [`per_word`]'s): name and WGSL value.
pub(super) fn constants(r: Repr) -> Vec<(&'static str, String)> {
    let ve = per_word(r).unwrap_or(4) as u32;
    let qw = ve / 4;
    let u = |v: u32| format!("{v}u");
    vec![
        ("ROWS", u(ROWS)),
        ("BK", u(WG)),
        ("RED", u(RED)),
        ("PER", u(WG / RED)),
        ("KB", u(KB)),
        ("VB", u(VB)),
        ("PN", u(PN)),
        ("KHMAX", u(KHMAX)),
        ("VE", u(ve)),
        ("QW", u(qw)),
        ("DQ", u(DQ)),
        ("DW", u(DQ / qw)),
        ("QS", u((ROWS * DQ).max(WG * PN * qw))),
    ]
}

/// `quad(w, h)` for `r`: quad `h` of a 16-byte word `w` as f32.
fn quad(r: Repr) -> &'static str {
    match r {
        Repr::F32 => "fn quad(w: vec4<u32>, h: u32) -> vec4<f32> { return bitcast<vec4<f32>>(w); }",
        Repr::BF16 => {
            "fn quad(w: vec4<u32>, h: u32) -> vec4<f32> {\n    let a = w[2u * h];\n    let b = w[2u * h + 1u];\n    \
             return bitcast<vec4<f32>>(vec4<u32>(a << 16u, a & 0xffff0000u, b << 16u, b & 0xffff0000u));\n}"
        }
        Repr::F16 => {
            "fn quad(w: vec4<u32>, h: u32) -> vec4<f32> {\n    \
             return vec4<f32>(unpack2x16float(w[2u * h]), unpack2x16float(w[2u * h + 1u]));\n}"
        }
        // Without SHADER_F16 naga refuses unpack2x16float: the integer conversion.
        _ => {
            "fn quad(w: vec4<u32>, h: u32) -> vec4<f32> {\n    let a = w[2u * h];\n    let b = w[2u * h + 1u];\n    \
             return vec4<f32>(f16_to_f32(a & 0xffffu), f16_to_f32(a >> 16u), f16_to_f32(b & 0xffffu), f16_to_f32(b >> 16u));\n}"
        }
    }
}

/// Bytes of workgroup memory the pass declares (within WebGPU's 16 KiB).
pub(super) fn bytes(r: Repr) -> u32 {
    let qw = per_word(r).unwrap_or(4) as u32 / 4;
    16 * (ROWS * DQ).max(WG * PN * qw) + 4 * (ROWS * WG + ROWS * RED + 2 * ROWS + KHMAX * ROWS)
}

/// The pass's `quad` and entry for `r` and up to `rows` query rows: every row's score, loaded
/// word and accumulator its own variable, the loops over them unrolled here rather than left to
/// the driver (on the H200 the kernel with private arrays indexed in loops took 32 us, this one
/// 27, on a decode step of 32 heads over 4096 keys).
pub(super) fn entry(r: Repr, rows: u32) -> String {
    let qw = per_word(r).unwrap_or(4) as u32 / 4;
    let mut s = format!("{}\n", quad(r));
    s += "@compute @workgroup_size(WG)
fn sdpa_decode(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let g = wid.x + wid.y * nwg.x;
    if (g >= md[MA + 9u]) {
        return;
    }
    dec_setup(g, t);
    let kh_n = clamp(WG * PN / (d_rows * d_vw), 1u, KHMAX);
";
    for n in 0..PN {
        let _ = writeln!(s, "    let x{n} = t + {}u;", n * WG);
        for h in 0..qw {
            let _ = writeln!(s, "    var acc{n}_{h} = vec4<CT>();");
        }
        let _ = writeln!(s, "    var l{n} = CT(0);");
    }
    s += "    for (var j0 = d_kbegin; j0 < d_kend; j0 += BK) {
        // qs staged; the previous tile's readers of ps and the row statistics are done.
        workgroupBarrier();
        let j = j0 + t;
";
    for r in 0..rows {
        let _ = writeln!(s, "        var s{r} = CT(0);");
    }
    s += "        if (j < d_kend) {
            let kr = d_kbase + j * d_krow;
            for (var i0 = 0u; i0 < d_dw; i0 += KB) {
";
    for i in 0..KB {
        let _ = writeln!(s, "                var kw{i} = vec4<u32>();");
        let _ = writeln!(s, "                if (i0 + {i}u < d_dw) {{ kw{i} = k[kr + i0 + {i}u]; }}");
    }
    for i in 0..KB {
        let _ = writeln!(s, "                if (i0 + {i}u < d_dw) {{");
        for h in 0..qw {
            let _ = writeln!(s, "                    let kq{i}_{h} = quad(kw{i}, {h}u);");
            let _ = writeln!(s, "                    let o{i}_{h} = (i0 + {i}u) * QW + {h}u;");
            for r in 0..rows {
                let _ = writeln!(s, "                    s{r} += dot(qs[{}u + o{i}_{h}], kq{i}_{h});", r * DQ);
            }
        }
        s += "                }\n";
    }
    s += "            }\n        }\n";
    for r in 0..rows {
        let _ = writeln!(s, "        s{r} = dec_score({r}u, j, t, s{r});");
    }
    s += "        workgroupBarrier();\n        dec_max(t);\n        workgroupBarrier();\n";
    for r in 0..rows {
        let _ = writeln!(s, "        dec_weight({r}u, t, s{r});");
    }
    s += "        workgroupBarrier();\n";
    for n in 0..PN {
        let _ = writeln!(s, "        let a{n} = row_a[min((x{n} % (d_rows * d_vw)) / d_vw, ROWS - 1u)];");
        for h in 0..qw {
            let _ = writeln!(s, "        acc{n}_{h} *= a{n};");
        }
        let _ = writeln!(s, "        l{n} *= a{n};");
    }
    // Each triple's keys kh, kh + kh_n, ... of the tile, VB at a time for all its triples.
    s += "        for (var u0 = 0u; u0 < BK; u0 += VB * kh_n) {\n";
    for n in 0..PN {
        let _ = writeln!(s, "            let k{n} = u0 + x{n} / (d_rows * d_vw);");
        for e in 0..VB {
            let _ = writeln!(s, "            let vv{n}_{e} = dec_v(x{n}, kh_n, j0, k{n} + {e}u * kh_n);");
        }
    }
    for n in 0..PN {
        for e in 0..VB {
            let _ = writeln!(s, "            let p{n}_{e} = dec_p(x{n}, kh_n, j0, k{n} + {e}u * kh_n);");
            for h in 0..qw {
                let _ = writeln!(s, "            acc{n}_{h} += p{n}_{e} * quad(vv{n}_{e}, {h}u);");
            }
            let _ = writeln!(s, "            l{n} += p{n}_{e};");
        }
    }
    s += "        }\n    }\n    // The key groups' accumulators (in qs) and sums (in sums), added by key group 0's invocations.
    workgroupBarrier();\n";
    let hi = |n: u32| if qw == 2 { format!("acc{n}_1") } else { "vec4<CT>()".to_string() };
    for n in 0..PN {
        let _ = writeln!(s, "    dec_park(x{n}, kh_n, acc{n}_0, {}, l{n});", hi(n));
    }
    s += "    workgroupBarrier();\n";
    for n in 0..PN {
        let _ = writeln!(s, "    dec_out(x{n}, kh_n);");
    }
    s + "}\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::attention::MaskKind;

    fn sdpa(hq: usize, lq: usize, d: usize, dv: usize) -> Sdpa {
        Sdpa { b: 1, hq, hkv: 2, lq, lk: 300, d, dv, causal: true, scale: 0.5, mask: MaskKind::None }
    }

    #[test]
    fn the_pass_takes_few_rows_of_whole_words() {
        let cases = [
            (Repr::F16, sdpa(8, 1, 128, 128), true),
            (Repr::F16, sdpa(2, 1, 64, 64), true),
            (Repr::BF16, sdpa(16, 1, 256, 256), true),
            (Repr::F32, sdpa(8, 2, 128, 128), true),
            // Too many rows a kv head, a row past the widths, or not whole words.
            (Repr::F16, sdpa(8, 3, 128, 128), false),
            (Repr::F32, sdpa(8, 1, 128, 132), false),
            (Repr::F16, sdpa(8, 1, 264, 64), false),
            (Repr::F16, sdpa(8, 1, 60, 64), false),
            (Repr::F64, sdpa(8, 1, 64, 64), false),
        ];
        for (r, p, want) in cases {
            assert_eq!(fits(r, &p), want, "{r:?} {p:?}");
        }
    }

    #[test]
    fn the_pass_fits_webgpus_default_workgroup_memory() {
        for r in [Repr::F16, Repr::F32] {
            assert!(bytes(r) <= 16384, "{r:?}: {}", bytes(r));
        }
    }
}
