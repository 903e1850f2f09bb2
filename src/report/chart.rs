//! SVG bar charts of a [`Comparison`] and the Markdown report that shows them.
//!
//! Charts are drawn with `plotters`' SVG backend only: text is written as SVG `<text>` elements
//! that the viewer renders with its own sans-serif font, so no font file is needed here.
//! Labels are placed by hand (shape names centred under their group, values above their bar)
//! because plotters' automatic label placement does not know about groups of bars.

use super::gpus::{short_gpu_name, Cell, Comparison};
use crate::problem::Op;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChartError {
    /// plotters failed (it only fails on inconsistent geometry, which is a bug here).
    #[error("could not draw the chart {chart}: {message}")]
    Draw {
        /// The chart's file name.
        chart: String,
        /// What plotters said.
        message: String,
    },
    /// Nothing to draw.
    #[error("no {op} result to chart for the chosen GPUs")]
    Empty {
        /// The op.
        op: Op,
    },
}

/// Height of every chart, pixels; the width grows with the number of bars and the length of the
/// shape labels ([`chart_width`]).
const HEIGHT: u32 = 560;
/// Font size of the shape labels (plotters writes SVG font sizes as `size / 1.24` px).
const LABEL_FONT: u32 = 18;
/// Colours of the GPUs, in column order (the colour-blind-safe Okabe-Ito palette).
const COLORS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
];
const FONT: &str = "sans-serif";
/// Colour of the reference line (cuBLAS).
const REFERENCE: RGBColor = RGBColor(200, 30, 30);

/// One chart: what to plot per cell, and how to label it.
struct Spec<'a> {
    file: String,
    title: String,
    y_desc: String,
    /// The bar height of a cell.
    value: &'a dyn Fn(&Cell) -> f64,
    /// The label written above a bar.
    label: &'a dyn Fn(f64) -> String,
    /// A horizontal reference line and its label, e.g. cuBLAS at 1.0.
    reference: Option<(f64, &'a str)>,
}

/// The file name of a chart of `op`: `gemm-throughput.svg`, `gemv-vs-cublas.svg`.
pub fn chart_file(op: Op, kind: &str) -> String {
    format!("{}-{kind}.svg", op.name())
}

/// Grouped bars: per shape, one bar per GPU, of its throughput (TFLOP/s for gemm, GB/s for
/// gemv).
pub fn throughput_svg(c: &Comparison) -> Result<String, ChartError> {
    let (scale, unit) = match c.op {
        Op::Gemm => (1e-3, "TFLOP/s"),
        Op::Gemv => (1.0, "GB/s"),
    };
    let value = move |cell: &Cell| cell.throughput * scale;
    let label = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    draw(
        c,
        &Spec {
            file: chart_file(c.op, "throughput"),
            title: format!(
                "{}: throughput of the tuned kernel per shape ({unit}, higher is better)",
                c.op
            ),
            y_desc: unit.to_string(),
            value: &value,
            label: &label,
            reference: None,
        },
    )
}

/// Grouped bars: per shape, one bar per GPU, of cuBLAS time over the tuned kernel's time, with
/// a dashed line at 1.0 (as fast as cuBLAS).
pub fn vs_cublas_svg(c: &Comparison) -> Result<String, ChartError> {
    let value = |cell: &Cell| cell.vs_cublas;
    let label = |v: f64| format!("{v:.2}");
    draw(
        c,
        &Spec {
            file: chart_file(c.op, "vs-cublas"),
            title: format!(
                "{}: speed relative to cuBLAS per shape (above 1: faster than cuBLAS)",
                c.op
            ),
            y_desc: "x cuBLAS".to_string(),
            value: &value,
            label: &label,
            reference: Some((1.0, "cuBLAS (1.0)")),
        },
    )
}

/// A width that gives every group of bars room for its shape label (about 0.62 em per
/// character of digits and `x`) and each bar at least 52 px, and at least 900 px in all.
fn chart_width(c: &Comparison) -> u32 {
    let longest = c
        .rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    let label_px = longest as f64 * LABEL_FONT as f64 / 1.24 * 0.62;
    let group_px = (label_px + 26.0).max(c.gpus.len() as f64 * 52.0 / 0.8);
    let plot = c.rows.len() as f64 * group_px;
    (plot + 125.0).max(900.0).ceil() as u32
}

fn draw(c: &Comparison, spec: &Spec) -> Result<String, ChartError> {
    if c.is_empty() {
        return Err(ChartError::Empty { op: c.op });
    }
    let mut svg = String::new();
    let size = (chart_width(c), HEIGHT);
    draw_into(&mut svg, size, c, spec).map_err(|message| ChartError::Draw {
        chart: spec.file.clone(),
        message,
    })?;
    Ok(svg)
}

fn draw_into(
    svg: &mut String,
    size: (u32, u32),
    c: &Comparison,
    spec: &Spec,
) -> Result<(), String> {
    fn e(err: impl std::fmt::Display) -> String {
        err.to_string()
    }
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    root.fill(&WHITE).map_err(e)?;
    let (top, plot_area) = root.split_vertically(78);
    top.draw(&Text::new(
        spec.title.clone(),
        (size.0 as i32 / 2, 12),
        TextStyle::from((FONT, 24).into_font())
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(e)?;
    legend(&top, size.0, c, spec.reference.map(|(_, name)| name)).map_err(e)?;

    let n = c.rows.len();
    let g = c.gpus.len().max(1);
    let max = c
        .rows
        .iter()
        .flat_map(|r| r.cells.iter().flatten())
        .map(|cell| (spec.value)(cell))
        .fold(0.0f64, f64::max);
    let top_value = spec.reference.map_or(max, |(v, _)| max.max(v));
    let y_max = if top_value > 0.0 {
        top_value * 1.14
    } else {
        1.0
    };
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(10)
        .margin_right(25)
        .margin_top(10)
        .margin_bottom(10)
        .x_label_area_size(62)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n as f64, 0.0..y_max)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_desc(spec.y_desc.as_str())
        .x_desc(match c.op {
            Op::Gemm => "shape (M x N x K)",
            Op::Gemv => "shape (M x K)",
        })
        .axis_desc_style((FONT, 20))
        .y_label_style((FONT, 18))
        .y_label_formatter(&|v| {
            if y_max >= 20.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        })
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(e)?;

    // The reference line first, so that bars and value labels stay readable on top of it.
    if let Some((v, _)) = spec.reference {
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(0.0, v), (n as f64, v)],
                8,
                5,
                REFERENCE.stroke_width(2),
            )))
            .map_err(e)?;
    }

    // Shape names, centred under each group.
    for (i, row) in c.rows.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(
            row.label.clone(),
            (x, y + 8),
            TextStyle::from((FONT, LABEL_FONT).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(e)?;
    }

    // Bars, with their values above them where they fit.
    let group = 0.8;
    let width = group / g as f64;
    let bar_px = {
        let (a, _) = chart.backend_coord(&(0.0, 0.0));
        let (b, _) = chart.backend_coord(&(width, 0.0));
        b - a
    };
    let value_font = if bar_px >= 46 { 16 } else { 14 };
    for (i, row) in c.rows.iter().enumerate() {
        for (j, cell) in row.cells.iter().enumerate() {
            let x0 = i as f64 + (1.0 - group) / 2.0 + j as f64 * width;
            let x1 = x0 + width;
            let color = COLORS[j % COLORS.len()];
            match cell {
                Some(cell) => {
                    let v = (spec.value)(cell);
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x0, 0.0), (x1, v)],
                            color.filled(),
                        )))
                        .map_err(e)?;
                    let text = (spec.label)(v);
                    // About 0.45 em per character in a sans-serif font.
                    let text_px = (text.chars().count() as f64 * value_font as f64 * 0.45) as i32;
                    if text_px <= bar_px + 8 {
                        let (x, y) = chart.backend_coord(&((x0 + x1) / 2.0, v));
                        // A white box behind the text, in case the reference line runs there.
                        let h = (value_font as f64 / 1.24) as i32;
                        root.draw(&Rectangle::new(
                            [
                                (x - text_px / 2 - 2, y - 4 - h),
                                (x + text_px / 2 + 2, y - 2),
                            ],
                            WHITE.filled(),
                        ))
                        .map_err(e)?;
                        root.draw(&Text::new(
                            text,
                            (x, y - 3),
                            TextStyle::from((FONT, value_font).into_font())
                                .color(&RGBColor(40, 40, 40))
                                .pos(Pos::new(HPos::Center, VPos::Bottom)),
                        ))
                        .map_err(e)?;
                    }
                }
                None => {
                    let (x, y) = chart.backend_coord(&((x0 + x1) / 2.0, 0.0));
                    root.draw(&Text::new(
                        "n/a",
                        (x, y - 3),
                        TextStyle::from((FONT, 14).into_font())
                            .color(&RGBColor(120, 120, 120))
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    ))
                    .map_err(e)?;
                }
            }
        }
    }

    root.present().map_err(e)?;
    Ok(())
}

/// One coloured square and full name per GPU, then the reference line's sample and name, in a
/// row under the title.
fn legend(
    area: &DrawingArea<SVGBackend, Shift>,
    width: u32,
    c: &Comparison,
    reference: Option<&str>,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let font = 18;
    let names: Vec<&str> = c
        .gpus
        .iter()
        .map(|g| g.name.as_str())
        .chain(reference)
        .collect();
    // Estimated widths (about 0.5 em per character) to centre the row.
    let widths: Vec<i32> = names
        .iter()
        .map(|n| 34 + (n.chars().count() as f64 * font as f64 * 0.5) as i32 + 30)
        .collect();
    let total: i32 = widths.iter().sum();
    let mut x = (width as i32 - total).max(0) / 2;
    let y = 52;
    for (i, (name, w)) in names.iter().zip(&widths).enumerate() {
        if i < c.gpus.len() {
            let color = COLORS[i % COLORS.len()];
            area.draw(&Rectangle::new(
                [(x, y - 8), (x + 18, y + 10)],
                color.filled(),
            ))?;
        } else {
            area.draw(&DashedPathElement::new(
                vec![(x - 4, y + 1), (x + 26, y + 1)],
                8,
                5,
                REFERENCE.stroke_width(2),
            ))?;
        }
        area.draw(&Text::new(
            name.to_string(),
            (x + 34, y + 1),
            TextStyle::from((FONT, font).into_font())
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        x += w;
    }
    Ok(())
}

/// A file of a report: its name inside the report directory and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFile {
    /// File name, e.g. `report.md` or `gemm-throughput.svg`.
    pub name: String,
    /// Its text.
    pub contents: String,
}

/// The report of `comparisons` (one per op): `report.md` with the summary lines, then per op
/// both charts and the comparison table; followed by the SVG files it links. `source` names
/// the database in the text.
pub fn report(comparisons: &[Comparison], source: &str) -> Result<Vec<ReportFile>, ChartError> {
    let mut gpus: Vec<&str> = Vec::new();
    for c in comparisons {
        for g in &c.gpus {
            if !gpus.contains(&g.name.as_str()) {
                gpus.push(&g.name);
            }
        }
    }
    let mut md = String::from("# GPU comparison\n\n");
    let _ = writeln!(
        md,
        "{} from `{source}`, made by `autotune report` (autotune {}). Every number is the \
         database's record of the winning kernel: its median time, measured in the same process \
         as cuBLAS with L2 flushed between samples. Throughput is GFLOP/s for gemm and GB/s for \
         gemv (the fewest bytes the problem moves); % of peak is relative to each GPU's own FP32 \
         peak (gemm) or measured copy bandwidth (gemv).\n",
        gpus.join(" vs "),
        env!("CARGO_PKG_VERSION")
    );
    for c in comparisons {
        let _ = writeln!(md, "- {}", c.summary_line());
    }
    md.push('\n');
    let mut files = Vec::new();
    for (i, c) in comparisons.iter().enumerate() {
        let thr = throughput_svg(c)?;
        let vs = vs_cublas_svg(c)?;
        // Two tables of the same op (two suites) get numbered file names.
        let seen = comparisons[..i].iter().filter(|o| o.op == c.op).count();
        let kind = |k: &str| {
            if seen == 0 {
                k.to_string()
            } else {
                format!("{k}-{}", seen + 1)
            }
        };
        let (thr_name, vs_name) = (
            chart_file(c.op, &kind("throughput")),
            chart_file(c.op, &kind("vs-cublas")),
        );
        let short: Vec<&str> = c.gpus.iter().map(|g| short_gpu_name(&g.name)).collect();
        let _ = writeln!(md, "## {}\n", c.op);
        let _ = writeln!(
            md,
            "![{} throughput per shape, {}]({thr_name})\n",
            c.op,
            short.join(" vs ")
        );
        let _ = writeln!(
            md,
            "![{} x cuBLAS per shape, {}]({vs_name})\n",
            c.op,
            short.join(" vs ")
        );
        md.push_str(&c.markdown().replacen("### ", "### Table: ", 1));
        md.push('\n');
        files.push(ReportFile {
            name: thr_name,
            contents: thr,
        });
        files.push(ReportFile {
            name: vs_name,
            contents: vs,
        });
    }
    let mut out = vec![ReportFile {
        name: "report.md".to_string(),
        contents: md,
    }];
    out.extend(files);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Database;
    use crate::report::gpus::{compare_gpus, resolve_gpus};

    fn comparison(op: Op) -> Comparison {
        let db =
            Database::from_toml_str(include_str!("../../tests/data/h200-db.toml"), "h200").unwrap();
        let gpus = resolve_gpus(&db, "h200", &[]).unwrap();
        compare_gpus(&db, op, &gpus, None)
    }

    #[test]
    fn charts_are_svg_with_every_shape_and_gpu() {
        let c = comparison(Op::Gemv);
        let svg = throughput_svg(&c).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        // plotters writes each text on its own line between the tags.
        let text = |t: &str| format!(">\n{t}\n</text>");
        assert!(svg.contains(&text("NVIDIA H200")), "{svg}");
        for r in &c.rows {
            assert!(svg.contains(&text(&r.label)), "{} missing", r.label);
        }
        assert!(svg.contains(&text("GB/s")));
        // No font files: text is plain SVG text in the viewer's sans-serif font.
        assert!(svg.contains("font-family=\"sans-serif\""));
        let vs = vs_cublas_svg(&c).unwrap();
        assert!(vs.contains(&text("cuBLAS (1.0)")));
        // The dashed 1.0 line: many short red segments.
        assert!(vs.matches("stroke=\"#C81E1E\"").count() > 10, "{vs}");
    }

    #[test]
    fn report_links_every_chart() {
        let files = report(&[comparison(Op::Gemm), comparison(Op::Gemv)], "db.toml").unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "report.md",
                "gemm-throughput.svg",
                "gemm-vs-cublas.svg",
                "gemv-throughput.svg",
                "gemv-vs-cublas.svg"
            ]
        );
        let md = &files[0].contents;
        for n in &names[1..] {
            assert!(md.contains(&format!("]({n})")), "{n} not linked:\n{md}");
        }
        assert!(md.contains("from `db.toml`"));
        assert!(md.contains("### Table: gemm"));
        let twice = report(&[comparison(Op::Gemv), comparison(Op::Gemv)], "db").unwrap();
        assert_eq!(twice[3].name, "gemv-throughput-2.svg");
    }

    #[test]
    fn empty_comparison_is_an_error() {
        let db = Database::new();
        let c = compare_gpus(&db, Op::Gemm, &["X".to_string()], None);
        assert_eq!(throughput_svg(&c), Err(ChartError::Empty { op: Op::Gemm }));
    }

    #[test]
    fn long_labels_widen_the_chart() {
        let gemv = comparison(Op::Gemv);
        assert_eq!(chart_width(&gemv), 900.max(chart_width(&gemv)));
        let mut wide = gemv.clone();
        for r in &mut wide.rows {
            r.label = format!("{}x{}x{}", r.label, r.label, r.label);
        }
        assert!(chart_width(&wide) > chart_width(&gemv) + 8 * 100);
    }
}
