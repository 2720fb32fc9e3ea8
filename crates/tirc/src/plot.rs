//! SVG charts for `tirc bench --plot` and `tirc tune --plot` (plotters'
//! SVG backend: text is left to the viewer's fonts, so nothing is needed to
//! draw here).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One named line of points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.05).max(1e-9);
    (if from_zero { lo } else { lo - pad }, hi + pad)
}

/// A tick label: integers without decimals, large values in thousands.
fn short(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{:.0}k", v / 1e3)
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Lines with markers over a shared x axis, to `path` as SVG.
pub fn lines(path: &std::path::Path, title: &str, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (760, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let (x0, x1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), false);
    let (y0, y1) = range(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), true);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(42)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut pts: Vec<(f64, f64)> =
            s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled()))).map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Points (no lines), one panel per group side by side, each with its own
/// x axis: `tirc tune --plot`'s time against each parameter.
/// One panel of [`scatter_panels`]: its x axis name, the points, and for a
/// parameter of text values, the value at each integer x.
pub struct Panel {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub categories: Option<Vec<String>>,
}

pub fn scatter_panels(path: &std::path::Path, title: &str, y_desc: &str, panels: &[Panel]) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let n = panels.len().max(1);
    let root = SVGBackend::new(path, ((300 * n).max(420) as u32, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root.titled(title, ("sans-serif", 18)).map_err(|x| e(&x))?;
    let areas = root.split_evenly((1, n));
    // Times span decades between the best and the worst candidates: a log
    // scale keeps the best ones apart.
    let ys = || panels.iter().flat_map(|p| p.points.iter().map(|q| q.1)).filter(|y| y.is_finite() && *y > 0.0);
    let y0 = ys().fold(f64::INFINITY, f64::min);
    let y1 = ys().fold(0.0, f64::max);
    let (y0, y1) = if y0.is_finite() { (y0 / 1.2, y1 * 1.2) } else { (0.1, 1.0) };
    for (panel, area) in panels.iter().zip(areas.iter()) {
        let (x0, x1) = match &panel.categories {
            Some(c) => (-0.5, c.len() as f64 - 0.5),
            None => range(panel.points.iter().map(|p| p.0), false),
        };
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(|x| e(&x))?;
        // Text values are written at their positions inside the panel; the
        // axis has no numbers then.
        let ticks = if panel.categories.is_some() { 0 } else { 10 };
        chart
            .configure_mesh()
            .x_desc(panel.name.as_str())
            .y_desc(y_desc)
            .x_labels(ticks)
            .x_label_formatter(&|v| short(*v))
            .y_label_formatter(&|v| format!("{v:.3}"))
            .draw()
            .map_err(|x| e(&x))?;
        if let Some(c) = &panel.categories {
            let style = ("sans-serif", 12).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series(
                    c.iter().enumerate().map(|(i, name)| Text::new(name.clone(), (i as f64, y0 * 1.05), style.clone())),
                )
                .map_err(|x| e(&x))?;
        }
        chart
            .draw_series(
                panel
                    .points
                    .iter()
                    .filter(|p| p.0.is_finite() && p.1.is_finite() && p.1 > 0.0)
                    .map(|p| Circle::new(*p, 4, COLORS[0].mix(0.7).filled())),
            )
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("tirc-plot-{}-{name}", std::process::id()))
    }

    #[test]
    fn lines_draw_every_series_with_its_legend_and_markers() {
        let p = tmp("lines.svg");
        let series = [
            Series { name: "tirc step6".into(), points: vec![(1024.0, 30e3), (2048.0, 44e3), (4096.0, 46e3)] },
            Series { name: "cuBLAS".into(), points: vec![(1024.0, 35e3), (2048.0, 50e3), (4096.0, 52e3)] },
        ];
        lines(&p, "matmul on H100", "size", "GFLOPS", &series).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        for text in ["matmul on H100", "tirc step6", "cuBLAS", "GFLOPS", "size"] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert_eq!(svg.matches("<circle").count(), 6, "one marker per point");
        assert!(svg.matches("<polyline").count() >= 2);
    }

    #[test]
    fn a_series_with_no_finite_point_still_draws_an_empty_chart() {
        let p = tmp("empty.svg");
        lines(&p, "t", "x", "y", &[Series { name: "none".into(), points: vec![(1.0, f64::NAN)] }]).unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().starts_with("<svg"));
    }

    #[test]
    fn scatter_panels_draw_one_panel_per_parameter() {
        let p = tmp("panels.svg");
        let panels = vec![
            Panel { name: "BM".into(), points: vec![(32.0, 1.5), (64.0, 1.2), (128.0, 1.9)], categories: None },
            Panel {
                name: "order".into(),
                points: vec![(0.0, 1.5), (1.0, 1.2), (1.0, 1.9)],
                categories: Some(vec!["standard".into(), "k_innermost".into()]),
            },
        ];
        scatter_panels(&p, "step2: 3 candidates", "time (ms)", &panels).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("BM") && svg.contains("order") && svg.contains("step2: 3 candidates"));
        assert!(svg.contains("k_innermost"), "text values label their axis");
        assert_eq!(svg.matches("<circle").count(), 6);
    }
}
