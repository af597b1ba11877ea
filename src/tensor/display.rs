//! `{}` of a tensor: its values as nested rows, PyTorch's number formats, the middle of long
//! dims elided, then the `{:?}` line (shape, dtype, device). One readback of what is shown.

use super::Tensor;
use crate::{CpuStorage, Result, with_storage};
use std::fmt::{self, Write};

/// Past this many elements, dims longer than twice [`EDGE`] show their ends only (PyTorch's
/// and candle's threshold).
const THRESHOLD: usize = 1000;
/// Entries shown at each end of an elided dim.
const EDGE: usize = 3;
/// Lines of a row wrap before this width.
const LINE_WIDTH: usize = 80;
/// Digits after the point by default (`{:.2}` asks for others).
const PRECISION: usize = 4;

impl fmt::Display for Tensor {
    /// The values, then the `{:?}` line. A readback: blocks until the GPU is done; in a browser,
    /// on WebGPU, use [`Tensor::to_string_async`]. A failed readback prints its error instead of
    /// the values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match crate::block::block_on_result("to_string", self.formatted(f.precision())) {
            Ok(text) => f.write_str(&text),
            Err(e) => write!(f, "<values unavailable: {e}>\n{self:?}"),
        }
    }
}

impl Tensor {
    /// The text `{}` prints, without blocking: the form that works in a browser.
    ///
    /// ```
    /// use rocm_wgpu_ops::{Device, Tensor};
    /// # pollster::block_on(async {
    /// let t = Tensor::from_vec(vec![1f32, 2.5, -3.], 3, &Device::auto_async().await?)?;
    /// let text = t.to_string_async().await?;
    /// assert_eq!(text.lines().next(), Some("[ 1.0000,  2.5000, -3.0000]"));
    /// # Ok::<(), rocm_wgpu_ops::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn to_string_async(&self) -> Result<String> {
        self.formatted(None).await
    }

    async fn formatted(&self, precision: Option<usize>) -> Result<String> {
        let elide = self.elem_count() > THRESHOLD;
        let mut shown = self.clone();
        let mut cut = vec![false; self.rank()];
        for (d, c) in cut.iter_mut().enumerate() {
            let n = self.dims()[d];
            if elide && n > 2 * EDGE {
                shown = Tensor::cat(&[shown.narrow(d, 0, EDGE)?, shown.narrow(d, n - EDGE, EDGE)?], d)?;
                *c = true;
            }
        }
        let data = shown.to_cpu_storage_async().await?;
        let cells = cells(&data, precision.unwrap_or(PRECISION));
        let width = cells.iter().map(String::len).max().unwrap_or(0);
        let mut out = String::new();
        if self.elem_count() == 0 {
            out.push_str("[]");
        } else {
            let layout = Nest { dims: shown.dims(), cut: &cut, cells: &cells, width };
            layout.write(&mut out, 0, 0);
        }
        let _ = write!(out, "\n{self:?}");
        Ok(out)
    }
}

/// Every element's text: integers as they are; floats in one of PyTorch's formats, chosen over
/// the finite values shown: whole numbers as `3.`, a range past 10^3 (or values past 10^8 or
/// below 10^-4) in scientific notation, else `precision` digits after the point.
fn cells(data: &CpuStorage, precision: usize) -> Vec<String> {
    if !data.dtype().is_float() {
        return with_storage!(data, v => v.iter().map(|x| x.to_string()).collect());
    }
    let v = data.to_f64_vec();
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let whole = finite.iter().all(|x| x.fract() == 0.0);
    let mags: Vec<f64> = finite.iter().map(|x| x.abs()).filter(|&x| x != 0.0).collect();
    let (lo, hi) = mags.iter().fold((f64::INFINITY, 0f64), |(lo, hi), &m| (lo.min(m), hi.max(m)));
    let sci = !mags.is_empty() && (hi > 1e8 || (!whole && (hi / lo > 1e3 || lo < 1e-4)));
    v.iter()
        .map(|&x| match x {
            x if x.is_nan() => "nan".to_string(),
            x if x.is_infinite() => if x > 0.0 { "inf" } else { "-inf" }.to_string(),
            x if sci => scientific(x, precision),
            x if whole => format!("{x:.0}."),
            x => format!("{x:.precision$}"),
        })
        .collect()
}

/// `x` as PyTorch writes it in scientific notation: `1.2346e-05`.
fn scientific(x: f64, precision: usize) -> String {
    let s = format!("{x:.precision$e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// The shown elements' texts in their nested rows.
struct Nest<'a> {
    dims: &'a [usize],
    cut: &'a [bool],
    cells: &'a [String],
    width: usize,
}

impl Nest<'_> {
    /// Writes dims `d..` of the block whose first element is `cells[at]`, its rows indented
    /// past the `d` brackets before them.
    fn write(&self, out: &mut String, d: usize, at: usize) {
        out.push('[');
        if d == self.dims.len() {
            // A rank-0 tensor: its one element in brackets, as candle shows it.
            out.push_str(&self.cells[at]);
            out.push(']');
            return;
        }
        let n = self.dims[d];
        let inner: usize = self.dims[d + 1..].iter().product();
        let last = d + 1 == self.dims.len();
        let per_line = ((LINE_WIDTH.saturating_sub(d + 1)) / (self.width + 2)).max(1);
        let mut items = 0;
        for i in 0..n {
            if i > 0 {
                out.push(',');
                if last {
                    items += 1;
                    if items % per_line == 0 {
                        self.newline(out, d, 1);
                    } else {
                        out.push(' ');
                    }
                } else {
                    self.newline(out, d, self.dims.len() - d - 1);
                }
            }
            if self.cut[d] && i == EDGE {
                out.push_str("...,");
                if last {
                    items += 1;
                    out.push(' ');
                } else {
                    self.newline(out, d, self.dims.len() - d - 1);
                }
            }
            if last {
                let cell = &self.cells[at + i];
                let _ = write!(out, "{cell:>w$}", w = self.width);
            } else {
                self.write(out, d + 1, at + i * inner);
            }
        }
        out.push(']');
    }

    /// `lines` line breaks (a blank line between blocks of rank 3 and up, as PyTorch), then the
    /// indent of the entries of dim `d`.
    fn newline(&self, out: &mut String, d: usize, lines: usize) {
        for _ in 0..lines.max(1) {
            out.push('\n');
        }
        out.extend(std::iter::repeat_n(' ', d + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Device};

    fn show(t: &Tensor) -> String {
        t.to_string()
    }

    #[test]
    fn small_tensors_print_every_value() -> Result<()> {
        let dev = Device::cpu();
        let x = Tensor::arange(0f32, 6.0, &dev)?.reshape((2, 3))?;
        assert_eq!(show(&x), "[[0., 1., 2.],\n [3., 4., 5.]]\nTensor[[2, 3], f32, cpu]");
        let y = Tensor::from_vec(vec![1.5f64, -0.25, 1e-5], 3, &dev)?;
        assert_eq!(show(&y), "[ 1.5000e+00, -2.5000e-01,  1.0000e-05]\nTensor[[3], f64, cpu]");
        assert_eq!(format!("{:.2}", y.narrow(0, 0, 2)?), "[ 1.50, -0.25]\nTensor[[2], f64, cpu]");
        let z = Tensor::from_vec(vec![f32::NAN, f32::INFINITY, 2.0], 3, &dev)?;
        assert_eq!(show(&z), "[nan, inf,  2.]\nTensor[[3], f32, cpu]");
        let u = Tensor::arange(0u8, 8, &dev)?.reshape((2, 2, 2))?;
        assert_eq!(show(&u), "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]\nTensor[[2, 2, 2], u8, cpu]");
        assert_eq!(show(&Tensor::full(7i64, (), DType::I64, &dev)?), "[7]\nTensor[[], i64, cpu]");
        assert_eq!(show(&Tensor::zeros((0, 3), DType::F16, &dev)?), "[]\nTensor[[0, 3], f16, cpu]");
        Ok(())
    }

    #[test]
    fn long_dims_show_their_ends() -> Result<()> {
        let dev = Device::cpu();
        let x = Tensor::arange(0u32, 2000, &dev)?.reshape((100, 20))?;
        let want = "\
[[   0,    1,    2, ...,   17,   18,   19],
 [  20,   21,   22, ...,   37,   38,   39],
 [  40,   41,   42, ...,   57,   58,   59],
 ...,
 [1940, 1941, 1942, ..., 1957, 1958, 1959],
 [1960, 1961, 1962, ..., 1977, 1978, 1979],
 [1980, 1981, 1982, ..., 1997, 1998, 1999]]
Tensor[[100, 20], u32, cpu]";
        assert_eq!(show(&x), want);
        let long = Tensor::arange(0u32, 30, &dev)?;
        // 19 entries of 4 characters fill a line of 80.
        let want = "[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17, 18,\n 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]\nTensor[[30], u32, cpu]";
        assert_eq!(show(&long), want);
        Ok(())
    }
}
