//! The families cut into units a runtime compiler builds alone, so that a first kernel waits
//! for its unit and not for its whole family (NVRTC 13.5 on this project's 2-core host: a cold
//! GPT-2 small f16 forward 105 s with whole families, 31 s with units). Where a family was built
//! ahead of time (rocm's embedded code objects) no unit is compiled.
//!
//! A unit is the family's whole file with only some of its instantiation lines: a line
//! `NAME(stem, a, b, ..)` at the start of a line (an upper-case macro of the file, `RWO_`-named
//! ones included) makes `stem`'s kernels for each argument. The unit `stem.a` (a name that is
//! also a file name, in the kernel cache) keeps every such line of `stem` that has `a`, cut to
//! `NAME(stem, a)`, and drops the other lines; everything else (templates, kernels defined
//! directly) is in every unit. A kernel named `stem_..` belongs to the unit of the longest such
//! stem and the first `_`-separated word after it that is one of that stem's arguments
//! (`scaled_dot_product_attention_decode4_f16_keep`: `scaled_dot_product_attention.f16`); a
//! kernel defined directly (`RWO_KERNEL name(` at the start of a line) to the first unit; any
//! other to none: its family builds whole. The elementwise family's units come from the
//! expression table instead (`render::elementwise_units`: an op's functor and lines, a cast's, a
//! where's).

use super::{ELEMENTWISE_OPS, HIP_FILES, render};
use crate::spec::Family;
use std::sync::OnceLock;

/// A unit's name and its whole source.
pub type Unit = (String, String);

/// `family`'s units, as the runtimes compile them where nothing was built ahead of time (none
/// for a family without native kernels); each family's made at its first use.
pub fn unit_sources(family: Family) -> &'static [Unit] {
    static UNITS: [OnceLock<Vec<Unit>>; HIP_FILES.len()] = [const { OnceLock::new() }; HIP_FILES.len()];
    let Some(i) = HIP_FILES.iter().position(|(f, _)| *f == family) else { return &[] };
    let file = HIP_FILES[i].1;
    UNITS[i].get_or_init(|| match family {
        Family::Elementwise => render::elementwise_units()
            .into_iter()
            .map(|(name, ops)| (name, file.replace(ELEMENTWISE_OPS, &ops)))
            .collect(),
        _ => instantiation_units(file),
    })
}

/// The unit of `family` that holds `kernel`, if one does (else the family builds whole).
pub fn unit_of(family: Family, kernel: &str) -> Option<&'static Unit> {
    let units = unit_sources(family);
    let name = match family {
        Family::Elementwise => render::elementwise_unit_of(kernel, units)?,
        _ => instantiation_unit_of(kernel, units)?,
    };
    units.iter().find(|(n, _)| n == name)
}

/// An instantiation line `mac(stem, args..)`.
struct Line<'a> {
    mac: &'a str,
    stem: &'a str,
    args: Vec<&'a str>,
}

impl<'a> Line<'a> {
    fn parse(line: &'a str) -> Option<Line<'a>> {
        let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let (mac, rest) = line.split_once('(')?;
        let upper = mac.starts_with(|c: char| c.is_ascii_uppercase())
            && mac.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        let mut args = rest.strip_suffix(')')?.split(',').map(str::trim);
        let stem = args.next()?;
        let args: Vec<&str> = args.collect();
        (upper && word(stem) && !args.is_empty() && args.iter().all(|a| word(a))).then_some(Line { mac, stem, args })
    }
}

/// `source` cut into units `stem.arg` (see the module's comment), in the order of first use.
fn instantiation_units(source: &str) -> Vec<Unit> {
    let lines: Vec<(&str, Option<Line>)> = source.lines().map(|l| (l, Line::parse(l))).collect();
    let mut keys: Vec<(&str, &str)> = vec![];
    for inst in lines.iter().filter_map(|(_, i)| i.as_ref()) {
        for &a in &inst.args {
            if !keys.contains(&(inst.stem, a)) {
                keys.push((inst.stem, a));
            }
        }
    }
    keys.into_iter()
        .map(|(stem, arg)| {
            let text: String = lines
                .iter()
                .map(|(line, inst)| match inst {
                    None => format!("{line}\n"),
                    Some(i) if i.stem == stem && i.args.contains(&arg) => format!("{}({stem}, {arg})\n", i.mac),
                    Some(_) => "\n".to_string(),
                })
                .collect();
            (format!("{stem}.{arg}"), text)
        })
        .collect()
}

/// The name of the unit of `units` (from [`instantiation_units`]) holding `kernel`, if one does:
/// by its stem and argument, else (a kernel defined directly, `RWO_KERNEL name(` at the start of
/// a line: in every unit) the first.
fn instantiation_unit_of<'a>(kernel: &str, units: &'a [Unit]) -> Option<&'a str> {
    let keys = || units.iter().filter_map(|(n, _)| n.split_once('.').map(|(s, a)| (n.as_str(), s, a)));
    let stem = keys()
        .map(|(_, s, _)| s)
        .filter(|s| kernel.strip_prefix(s).is_some_and(|r| r.starts_with('_')))
        .max_by_key(|s| s.len());
    let instantiated = stem.and_then(|stem| {
        let rest = &kernel[stem.len() + 1..];
        rest.split('_').find_map(|word| keys().find(|&(_, s, a)| s == stem && a == word).map(|(n, ..)| n))
    });
    instantiated.or_else(|| {
        let (first, text) = units.first()?;
        let defines = |l: &str| {
            l.strip_prefix("RWO_KERNEL ").and_then(|l| l.strip_prefix(kernel)).is_some_and(|r| r.starts_with('('))
        };
        text.lines().any(defines).then_some(first.as_str())
    })
}
