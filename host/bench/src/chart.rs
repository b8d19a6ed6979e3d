//! Line charts of the curves (SVG), drawn with plotters: a series per side (raw librdkafka,
//! sluice) against the parameter that grows.

use std::path::Path;

use anyhow::anyhow;
use plotters::prelude::*;

/// One line of a chart: its label and its points (x, y).
pub(crate) struct Series<'a> {
    pub(crate) label: &'a str,
    pub(crate) points: Vec<(f64, f64)>,
}

/// How the x axis is scaled.
#[derive(Clone, Copy)]
pub(crate) enum Axis {
    Linear,
    /// For parameters that grow by factors (event size, spans per request).
    Log,
}

/// Writes an SVG line chart of `series` to `path`: y from 0 to the highest point.
pub(crate) fn line_chart(
    path: &Path,
    title: &str,
    (x_label, x_axis): (&str, Axis),
    y_label: &str,
    series: &[Series<'_>],
) -> anyhow::Result<()> {
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = xs().fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    anyhow::ensure!(x_min <= x_max, "a chart without points: {title}");
    // Room either side so the end points are not on the frame.
    let (x_min, x_max) = match x_axis {
        Axis::Linear => {
            let pad = ((x_max - x_min) * 0.05).max(0.5);
            (x_min - pad, x_max + pad)
        }
        Axis::Log => (x_min / 1.3, x_max * 1.3),
    };
    let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    let root = SVGBackend::new(path, (720, 420)).into_drawing_area();
    let drawn = (|| -> Result<(), Box<dyn std::error::Error>> {
        root.fill(&WHITE)?;
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        // Both arms draw the same way; only the x coordinate type differs.
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_label)
                    .y_desc(y_label)
                    .y_label_formatter(&|y| short(*y))
                    .x_label_formatter(&|x| short(*x))
                    .draw()?;
                for (i, s) in series.iter().enumerate() {
                    let color = Palette99::pick(i).to_rgba();
                    chart
                        .draw_series(LineSeries::new(
                            s.points.iter().copied(),
                            color.stroke_width(2),
                        ))?
                        .label(s.label)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperRight)
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()?;
            }};
        }
        match x_axis {
            Axis::Linear => draw!(builder.build_cartesian_2d(x_min..x_max, 0.0..y_max)?),
            Axis::Log => draw!(builder.build_cartesian_2d((x_min..x_max).log_scale(), 0.0..y_max)?),
        }
        root.present()?;
        Ok(())
    })();
    drawn.map_err(|e| anyhow!("drawing {}: {e}", path.display()))
}

/// 1500 → "1.5k", 2000000 → "2M": axis labels that fit.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map_or(s.clone(), str::to_owned)
}
