//! Overrides of the WGSL tuning tables (`random.rs`, `sort.rs`, `matmul.rs`, `attention`) for
//! one device, from `RWO_WGPU_TUNE` (`random_mul=pieces,sdpa_coop=off`): one build
//! can then time every variant of an entry on a GPU. Without it, each family's table decides. One
//! entry is a limit rather than a table's: `max_binding=BYTES` lowers the largest buffer a kernel
//! binds, so that tensors past it (stored in parts, ops split: `tensor/parts.rs`) can be tested
//! small.

use super::random::Mul;
use crate::{Error, Result};

/// The entries a device overrides (`None`: the family's table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tune {
    /// `random_mul=wide|pieces`: how Philox's 32 x 32 -> 64-bit products are formed
    /// (`wide` needs SHADER_INT64).
    pub random_mul: Option<Mul>,
    /// `sort_pairs=8|16`: (key, index) pairs each argsort invocation holds in registers.
    pub sort_pairs: Option<u32>,
    /// `gemm_split=on|off`: whether matmuls of too few workgroups take K in parts (split-K),
    /// and matrix-vector products of few columns split K deeper within a workgroup.
    pub gemm_split: Option<bool>,
    /// `gemm_epilogue=on|off`: whether a matmul's product is deferred, so that the elementwise
    /// ops on it run in its kernel (with fusion on).
    pub gemm_epilogue: Option<bool>,
    /// `norm_prologue=on|off`: whether a few rows' norm read by a matrix-vector product is
    /// deferred, so that the product computes it (with fusion and epilogues on).
    pub norm_prologue: Option<bool>,
    /// `sdpa_coop=on|off`: whether f16 attention may run on cooperative matrices.
    pub sdpa_coop: Option<bool>,
    /// `sdpa_decode=on|off`: whether few query rows a kv head may take the decode pass.
    pub sdpa_decode: Option<bool>,
    /// `qmatvec_shuffle=on|off`: whether q4_K matrix-vector lanes share scales by subgroup shuffles.
    pub qmatvec_shuffle: Option<bool>,
    /// `submit=thread|inline`: whether batches submitted while the recording goes on are handed
    /// to a thread that submits them (native targets; a browser submits inline).
    pub submit_thread: Option<bool>,
    /// For tests (no `RWO_WGPU_TUNE` setting): the submitting thread waits this long before
    /// each batch, so that work reaching the queue out of order shows in results.
    pub submit_delay: Option<std::time::Duration>,
    /// `max_binding=BYTES` (at least 256): the largest tensor buffer a kernel binds, if lower
    /// than the adapter's limit (larger tensors are stored in parts; a kernel's scratch and
    /// metadata keep the adapter's limit).
    pub max_binding: Option<u64>,
    /// For tests (no `RWO_WGPU_TUNE` setting): pipelines held in memory before the cache starts
    /// again from empty, if fewer than the default's 1024.
    pub max_pipelines: Option<usize>,
}

impl Tune {
    /// The overrides a setting names; an unknown name or value is an error naming the known ones.
    pub fn parse(setting: Option<&str>) -> Result<Tune> {
        let mut t = Tune::default();
        let items = setting.map(str::trim).filter(|s| !s.is_empty()).into_iter().flat_map(|s| s.split(','));
        for item in items {
            match item.trim().split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("random_mul", "wide")) => t.random_mul = Some(Mul::Wide),
                Some(("random_mul", "pieces")) => t.random_mul = Some(Mul::Pieces),
                Some(("sort_pairs", v @ ("8" | "16"))) => t.sort_pairs = v.parse().ok(),
                Some(("gemm_split", v @ ("on" | "off"))) => t.gemm_split = Some(v == "on"),
                Some(("gemm_epilogue", v @ ("on" | "off"))) => t.gemm_epilogue = Some(v == "on"),
                Some(("norm_prologue", v @ ("on" | "off"))) => t.norm_prologue = Some(v == "on"),
                Some(("sdpa_coop", v @ ("on" | "off"))) => t.sdpa_coop = Some(v == "on"),
                Some(("sdpa_decode", v @ ("on" | "off"))) => t.sdpa_decode = Some(v == "on"),
                Some(("qmatvec_shuffle", v @ ("on" | "off"))) => t.qmatvec_shuffle = Some(v == "on"),
                Some(("submit", v @ ("thread" | "inline"))) => t.submit_thread = Some(v == "thread"),
                Some(("max_binding", v)) if v.parse::<u64>().is_ok_and(|b| b >= 256) => t.max_binding = v.parse().ok(),
                _ => {
                    return Err(Error::BackendUnavailable {
                        kind: "wgpu".into(),
                        reason: format!(
                            "RWO_WGPU_TUNE: unknown setting {item:?}; known: random_mul=wide|pieces, sort_pairs=8|16, \
                             gemm_split=on|off, gemm_epilogue=on|off, norm_prologue=on|off, sdpa_coop=on|off, \
                             sdpa_decode=on|off, \
                             qmatvec_shuffle=on|off, submit=thread|inline, max_binding=BYTES (>= 256)"
                        ),
                    });
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_unknown_ones_are_refused() {
        assert_eq!(Tune::parse(None), Ok(Tune::default()));
        assert_eq!(Tune::parse(Some(" ")), Ok(Tune::default()));
        let t = Tune::parse(Some(
            "random_mul=pieces, sort_pairs=8,gemm_split=off,gemm_epilogue=off,norm_prologue=off,sdpa_coop=off,sdpa_decode=off,\
             qmatvec_shuffle=off,submit=inline,max_binding=65536",
        ))
        .unwrap_or_default();
        let want = Tune {
            random_mul: Some(Mul::Pieces),
            sort_pairs: Some(8),
            gemm_split: Some(false),
            gemm_epilogue: Some(false),
            norm_prologue: Some(false),
            sdpa_coop: Some(false),
            sdpa_decode: Some(false),
            qmatvec_shuffle: Some(false),
            submit_thread: Some(false),
            submit_delay: None,
            max_binding: Some(65536),
            max_pipelines: None,
        };
        assert_eq!(t, want);
        for bad in [
            "random_mul=fast",
            "sort_pairs=32",
            "sort_pairs",
            "block=4096",
            "gemm_split=2",
            "sdpa_coop=1",
            "max_binding=100",
            "submit=async",
        ] {
            assert!(matches!(Tune::parse(Some(bad)), Err(Error::BackendUnavailable { .. })), "{bad}");
        }
    }
}
