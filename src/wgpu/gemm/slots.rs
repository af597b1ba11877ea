//! Which metadata word of a GEMM-family kernel holds what: one table, from which the host writes
//! the words (`Gemm::meta`) and every kernel's source gets a `const` per word
//! (`const MD_A_OFFSET: u32 = 7u;`), so `shaders/matmul.wgsl`, `shaders/conv.wgsl` and the
//! generated entries read them by name (`gmeta(MD_K)`) and cannot disagree with the host.
//! Indices count from `EXTRA` (the words before it are `Spec::meta`'s).

/// A metadata word: its WGSL name and its index after `EXTRA`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Slot {
    pub name: &'static str,
    pub at: usize,
}

const fn slot(name: &'static str, at: usize) -> Slot {
    Slot { name, at }
}

/// Rows of C (M).
pub(crate) const M: Slot = slot("MD_M", 0);
/// Columns of C (N).
pub(crate) const N: Slot = slot("MD_N", 1);
/// The depth (K).
pub(crate) const K: Slot = slot("MD_K", 2);
/// Tile rows per batch (the matrix-vector kernels: 1).
pub(crate) const TILE_ROWS: Slot = slot("MD_TILE_ROWS", 3);
/// Tile columns per batch (the matrix-vector kernels: column blocks).
pub(crate) const TILE_COLS: Slot = slot("MD_TILE_COLS", 4);
/// Tiles per batch.
pub(crate) const TILES: Slot = slot("MD_TILES", 5);
/// Batches (the product of the batch sizes).
pub(crate) const BATCHES: Slot = slot("MD_BATCHES", 6);
/// A's offset, its stride along M and along K.
pub(crate) const A_OFFSET: Slot = slot("MD_A_OFFSET", 7);
pub(crate) const A_OUTER: Slot = slot("MD_A_OUTER", 8);
pub(crate) const A_K: Slot = slot("MD_A_K", 9);
/// B's offset, its stride along N and along K (a gathered B: its offset only).
pub(crate) const B_OFFSET: Slot = slot("MD_B_OFFSET", 10);
pub(crate) const B_OUTER: Slot = slot("MD_B_OUTER", 11);
pub(crate) const B_K: Slot = slot("MD_B_K", 12);
/// C's strides along M and N, where B is not gathered (the matrix-vector kernels write a
/// transposed problem through them).
pub(crate) const C_M: Slot = slot("MD_C_M", 13);
pub(crate) const C_N: Slot = slot("MD_C_N", 14);
/// A convolution's gathered image (`shaders/conv.wgsl`), in the words of C's strides and after:
/// input height and width, output width, window height and width, stride, padding, dilation
/// (the window, stride and dilation are kernel constants too), the image's C, H and W strides.
pub(crate) const CONV_IH: Slot = slot("MD_CONV_IH", 13);
pub(crate) const CONV_IW: Slot = slot("MD_CONV_IW", 14);
pub(crate) const CONV_OW: Slot = slot("MD_CONV_OW", 15);
pub(crate) const CONV_KH: Slot = slot("MD_CONV_KH", 16);
pub(crate) const CONV_KW: Slot = slot("MD_CONV_KW", 17);
pub(crate) const CONV_SH: Slot = slot("MD_CONV_SH", 18);
pub(crate) const CONV_SW: Slot = slot("MD_CONV_SW", 19);
pub(crate) const CONV_PH: Slot = slot("MD_CONV_PH", 20);
pub(crate) const CONV_PW: Slot = slot("MD_CONV_PW", 21);
pub(crate) const CONV_DH: Slot = slot("MD_CONV_DH", 22);
pub(crate) const CONV_DW: Slot = slot("MD_CONV_DW", 23);
pub(crate) const CONV_CS: Slot = slot("MD_CONV_CS", 24);
pub(crate) const CONV_HS: Slot = slot("MD_CONV_HS", 25);
pub(crate) const CONV_WS: Slot = slot("MD_CONV_WS", 26);
/// A norm computed in a matrix-vector product's prologue (`nn::rows`; never with a gather, so
/// in the words of the convolution's): the weight's offset and stride, the bias's, then eps.
pub(crate) const PRO_PARAMS: Slot = slot("MD_PRO_PARAMS", 15);
pub(crate) const PRO_EPS: Slot = slot("MD_PRO_EPS", 19);
// The prologue's four parameter words and eps lie past C's strides, before K's parts.
const _: () = assert!(C_N.at < PRO_PARAMS.at && PRO_PARAMS.at + 4 <= PRO_EPS.at && PRO_EPS.at < PARTS.at);

/// Parts of K (split-K: each part's products go to its own f32 slice of the output, which the
/// sum adds; one part: the whole of K, into C) and K per part.
pub(crate) const PARTS: Slot = slot("MD_PARTS", 29);
pub(crate) const PART_K: Slot = slot("MD_PART_K", 30);
/// The batch rank R, followed by the R batch sizes, A's R batch strides and B's.
pub(crate) const RANK: Slot = slot("MD_RANK", 31);
/// Split-K's sum (its own words): the elements of C and the parts.
pub(crate) const SUM_N: Slot = slot("MD_SUM_N", 0);
pub(crate) const SUM_PARTS: Slot = slot("MD_SUM_PARTS", 1);

/// Every slot, each emitted into every GEMM-family kernel.
pub(crate) const ALL: [Slot; 36] = [
    M, N, K, TILE_ROWS, TILE_COLS, TILES, BATCHES, A_OFFSET, A_OUTER, A_K, B_OFFSET, B_OUTER, B_K, C_M, C_N, CONV_IH,
    CONV_IW, CONV_OW, CONV_KH, CONV_KW, CONV_SH, CONV_SW, CONV_PH, CONV_PW, CONV_DH, CONV_DW, CONV_CS, CONV_HS,
    CONV_WS, PRO_PARAMS, PRO_EPS, PARTS, PART_K, RANK, SUM_N, SUM_PARTS,
];

/// The WGSL `const` of every slot.
pub(crate) fn wgsl() -> String {
    ALL.iter().map(|s| format!("const {}: u32 = {}u;\n", s.name, s.at)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Family;
    use crate::wgpu::kernel::family_source;
    use crate::wgpu::repr::Caps;

    /// The `gmeta(..)` arguments of `src` that start with a digit (a slot by number).
    fn bare(src: &str) -> Vec<String> {
        src.match_indices("gmeta(")
            .map(|(i, _)| src[i..].split(')').next().unwrap_or_default().to_string())
            .filter(|call| call["gmeta(".len()..].starts_with(|c: char| c.is_ascii_digit()))
            .collect()
    }

    #[test]
    fn slots_have_distinct_names_and_only_the_gather_overlaps_c_and_the_prologue() {
        let names: std::collections::HashSet<_> = ALL.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), ALL.len());
        assert!(ALL.iter().all(|s| s.name.starts_with("MD_")));
        // The GEMM's words (the sum's are its own): one word each, but a gathered B's words
        // take C's strides' places (a gathered problem's C is contiguous).
        let gemm: Vec<Slot> = ALL.iter().copied().filter(|s| !s.name.starts_with("MD_SUM_")).collect();
        for (i, a) in gemm.iter().enumerate() {
            for b in &gemm[i + 1..] {
                let gathered = |s: &Slot| s.name.starts_with("MD_CONV_");
                let c = |s: &Slot| *s == C_M || *s == C_N;
                // A norm before the product (never with a gather) takes the gather's words.
                let pro = |s: &Slot| *s == PRO_PARAMS || *s == PRO_EPS;
                let allowed = ((gathered(a) && (c(b) || pro(b))) || ((c(a) || pro(a)) && gathered(b))) && a != b;
                assert!(a.at != b.at || allowed, "{} and {} share word {}", a.name, b.name, a.at);
            }
            // A gather's words lie from C's strides up to the parts of K.
            assert!(!a.name.starts_with("MD_CONV_") || (C_M.at..PARTS.at).contains(&a.at), "{}", a.name);
        }
    }

    #[test]
    fn kernels_name_every_metadata_word_they_read() {
        for f in [Family::Matmul, Family::Conv] {
            assert_eq!(bare(family_source(f)), Vec::<String>::new(), "{f:?}");
        }
        assert_eq!(bare("gmeta(MD_K) gmeta(13u) gmeta(MD_RANK + 1u)"), ["gmeta(13u"]);
        let caps = Caps { f16: true, f64: true, i64: false, subgroup: false };
        let specs = [crate::wgpu::matmul::shader_variants(caps), crate::wgpu::conv::shader_variants(caps)].concat();
        assert!(specs.len() > 50);
        for (name, spec) in specs {
            let src = spec.map(|s| s.source()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(bare(&src), Vec::<String>::new(), "{name}");
            assert!(src.contains(&wgsl()), "{name}: the slots' constants");
        }
    }
}
