//! SVG charts for `tirc bench --plot` and `tirc tune --plot` (plotters'
//! SVG backend: text is left to the viewer's fonts, so nothing is needed to
//! draw here).

use plotters::prelude::*;

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
    chart.configure_mesh().x_desc(x_desc).y_desc(y_desc).draw().map_err(|x| e(&x))?;
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled()))).map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Points (no lines), one panel per group side by side, each with its own
/// x axis: `tirc tune --plot`'s time against each parameter.
pub fn scatter_panels(
    path: &std::path::Path,
    title: &str,
    y_desc: &str,
    panels: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| format!("drawing {}: {e}", path.display());
    let n = panels.len().max(1);
    let root = SVGBackend::new(path, ((300 * n).max(420) as u32, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root.titled(title, ("sans-serif", 18)).map_err(|x| e(&x))?;
    let areas = root.split_evenly((1, n));
    let (y0, y1) = range(panels.iter().flat_map(|p| p.1.iter().map(|q| q.1)), true);
    for ((name, pts), area) in panels.iter().zip(areas.iter()) {
        let (x0, x1) = range(pts.iter().map(|p| p.0), false);
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|x| e(&x))?;
        chart.configure_mesh().x_desc(name.as_str()).y_desc(y_desc).draw().map_err(|x| e(&x))?;
        chart
            .draw_series(
                pts.iter()
                    .filter(|p| p.0.is_finite() && p.1.is_finite())
                    .map(|p| Circle::new(*p, 4, COLORS[0].filled())),
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
            ("BM".to_string(), vec![(32.0, 1.5), (64.0, 1.2), (128.0, 1.9)]),
            ("TM".to_string(), vec![(4.0, 1.5), (8.0, 1.2), (8.0, 1.9)]),
        ];
        scatter_panels(&p, "step2: 3 candidates", "time (ms)", &panels).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("BM") && svg.contains("TM") && svg.contains("step2: 3 candidates"));
        assert_eq!(svg.matches("<circle").count(), 6);
    }
}
