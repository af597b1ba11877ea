//! The main job's `bench` results as an SVG chart: one panel per family (its own linear axis, so
//! cases of very different magnitudes stay readable), one group per case, one bar per backend
//! with its figure written at its end. SVG only (plotters without fonts: SVG leaves text to the
//! viewer, so no system font library is needed).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One case's figures, one per backend that ran it (`"cuda"`, `"wgpu"`, `"torch"`, ...).
pub struct Group {
    pub case: String,
    pub bars: Vec<(String, f64)>,
}

/// The cases of one family, in one unit (`GB/s` or `TFLOP/s`).
pub struct Panel {
    pub title: String,
    pub unit: &'static str,
    pub groups: Vec<Group>,
}

const WIDTH: u32 = 1100;
/// Room for the case names left of the bars (12 px text, names up to ~48 characters).
const LABELS: u32 = 330;
const BAR: f64 = 13.0;
const GAP: f64 = 10.0;
const HEADER: u32 = 30;
const PANEL_CHROME: u32 = 70;

/// Colours by backend: the two native runtimes alike, so native against WGSL reads at a glance.
fn colour(backend: &str) -> RGBColor {
    match backend {
        "cuda" | "rocm" => RGBColor(0xd6, 0x27, 0x28),
        "wgpu" => RGBColor(0x1f, 0x77, 0xb4),
        "torch" => RGBColor(0x7f, 0x7f, 0x7f),
        _ => RGBColor(0x2c, 0xa0, 0x2c),
    }
}

fn legend_name(backend: &str) -> String {
    match backend {
        "cuda" | "rocm" => format!("{backend} (native)"),
        "wgpu" => "wgpu (WGSL)".into(),
        "cpu" => "cpu (reference)".into(),
        other => other.into(),
    }
}

/// `2828`, `48.3`, `0.72`, `0.000512`: three significant figures (all digits of a larger whole
/// number), no exponent.
fn figure(v: f64) -> String {
    let decimals = if v > 0.0 { (2.0 - v.log10().floor()).max(0.0) as usize } else { 0 };
    format!("{v:.decimals$}")
}

fn panel_height(panel: &Panel, backends: usize) -> u32 {
    PANEL_CHROME + (panel.groups.len() as f64 * (backends as f64 * BAR + GAP)).ceil() as u32
}

/// Writes the chart to `path`: `lines` (the devices, torch's version) under a title, a legend of
/// `backends` in bar order, then the panels.
pub fn write(path: &Path, lines: &[String], backends: &[String], panels: &[Panel]) -> Result<(), String> {
    let top = HEADER * (1 + lines.len() as u32) + 10;
    let height = top + panels.iter().map(|p| panel_height(p, backends.len())).sum::<u32>();
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    draw(&root, top, lines, backends, panels).map_err(|e| format!("{}: {e}", path.display()))?;
    root.present().map_err(|e| format!("{}: {e}", path.display()))
}

type Drawn = Result<(), DrawingAreaErrorKind<std::io::Error>>;

fn draw(
    root: &DrawingArea<SVGBackend, Shift>,
    top: u32,
    lines: &[String],
    backends: &[String],
    panels: &[Panel],
) -> Drawn {
    root.fill(&WHITE)?;
    root.draw(&Text::new("rocm-wgpu-ops bench", (10, 8), ("sans-serif", 20).into_font()))?;
    for (i, line) in lines.iter().enumerate() {
        root.draw(&Text::new(line.as_str(), (10, 8 + HEADER as i32 * (i as i32 + 1)), ("sans-serif", 13)))?;
    }
    // The legend, on the title's line at the right.
    let mut x = WIDTH as i32 - 10 - 150 * backends.len() as i32;
    for b in backends {
        root.draw(&Rectangle::new([(x, 10), (x + 14, 24)], colour(b).filled()))?;
        root.draw(&Text::new(legend_name(b), (x + 20, 10), ("sans-serif", 14)))?;
        x += 150;
    }
    let mut rest = root.clone().shrink((0, top), (WIDTH, root.dim_in_pixel().1 - top));
    for panel in panels {
        let (area, below) = rest.split_vertically(panel_height(panel, backends.len()));
        draw_panel(root, &area, backends, panel)?;
        rest = below;
    }
    Ok(())
}

fn draw_panel(
    root: &DrawingArea<SVGBackend, Shift>,
    area: &DrawingArea<SVGBackend, Shift>,
    backends: &[String],
    panel: &Panel,
) -> Drawn {
    let slot = backends.len() as f64 * BAR + GAP;
    let rows = panel.groups.len() as f64 * slot;
    let max = panel.groups.iter().flat_map(|g| g.bars.iter().map(|b| b.1)).fold(0.0, f64::max);
    // Room right of the longest bar for its figure.
    let right = if max > 0.0 { max * 1.12 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{} ({})", panel.title, panel.unit), ("sans-serif", 16))
        .margin_left(LABELS)
        .margin_right(20)
        .x_label_area_size(30)
        .build_cartesian_2d(0.0..right, rows..0.0)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .y_labels(0)
        .x_desc(panel.unit)
        .label_style(("sans-serif", 12))
        .draw()?;
    let value_style = TextStyle::from(("sans-serif", 11)).pos(Pos::new(HPos::Left, VPos::Center));
    let name_style = TextStyle::from(("sans-serif", 12)).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, group) in panel.groups.iter().enumerate() {
        let y = i as f64 * slot + GAP / 2.0;
        for (backend, v) in &group.bars {
            let Some(j) = backends.iter().position(|b| b == backend) else { continue };
            let (y0, y1) = (y + j as f64 * BAR, y + (j + 1) as f64 * BAR - 1.0);
            chart.draw_series([Rectangle::new([(0.0, y0), (*v, y1)], colour(backend).filled())])?;
            let (px, py) = chart.backend_coord(&(*v, (y0 + y1) / 2.0));
            root.draw(&Text::new(figure(*v), (px + 4, py), value_style.clone()))?;
        }
        let (px, py) = chart.backend_coord(&(0.0, y + (slot - GAP) / 2.0));
        root.draw(&Text::new(group.case.as_str(), (px - 8, py), name_style.clone()))?;
    }
    Ok(())
}
