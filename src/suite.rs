//! Shape suites: `configs/suites/<name>.toml` lists the shapes a product cares about, so one
//! command tunes them all.
//!
//! ```toml
//! op = "gemv"
//! shapes = ["4096x4096", "256x65536"]
//! ```

use crate::problem::{Op, Shape, ShapeError};
use serde::Deserialize;
use std::path::Path;

/// How a suite file looks, for error messages.
const SUITE_FORM: &str = "a suite is `op = \"gemm\"` (or \"gemv\") and `shapes = [\"MxNxK\", ...]`, as in configs/suites/gemm.toml";

/// Why a suite file is unusable. Every message names the file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file could not be read.
    #[error("cannot read suite {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The path is a directory.
    #[error("suite {path} is a directory, not a file")]
    IsDirectory {
        /// The path.
        path: String,
    },
    /// The file is not UTF-8 text.
    #[error("suite {path} is not UTF-8 text: {SUITE_FORM}")]
    NotUtf8 {
        /// The path.
        path: String,
    },
    /// Malformed TOML, a missing or unknown field, or a value of the wrong type.
    #[error(
        "suite {path} is invalid (line {line}, column {column}): {message}. Fix it: {SUITE_FORM}"
    )]
    Toml {
        /// The path.
        path: String,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column of the problem, in characters (0 when unknown).
        column: usize,
        /// The parser's message, on one line.
        message: String,
    },
    /// The `op` is not one autotune knows.
    #[error("suite {path}: {source}")]
    Op {
        /// The path.
        path: String,
        /// Why.
        source: ShapeError,
    },
    /// A shape in the list is invalid.
    #[error("suite {path}, shape {index} of `shapes`: {source}")]
    Shape {
        /// The path.
        path: String,
        /// 1-based position in the list.
        index: usize,
        /// Why.
        source: ShapeError,
    },
    /// No shapes.
    #[error("suite {0} lists no shapes: add some, e.g. shapes = [\"2048x2048x2048\"]")]
    Empty(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    op: String,
    shapes: Vec<String>,
}

/// A parsed suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    /// The op every shape is tuned for.
    pub op: Op,
    /// The shapes, in file order, duplicates removed.
    pub shapes: Vec<Shape>,
}

impl Suite {
    /// Parses suite text; `path` names it in messages.
    pub fn from_toml_str(text: &str, path: &str) -> Result<Suite, SuiteError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let f: SuiteFile = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map_or((0, 0), |span| crate::db::line_column(text, span.start));
            SuiteError::Toml {
                path: path.to_string(),
                line,
                column,
                message: e.message().trim().trim_end_matches('.').replace('\n', "; "),
            }
        })?;
        let op: Op = f.op.parse().map_err(|source| SuiteError::Op {
            path: path.to_string(),
            source,
        })?;
        let mut shapes = Vec::new();
        for (i, s) in f.shapes.iter().enumerate() {
            let shape = Shape::parse(op, s).map_err(|source| SuiteError::Shape {
                path: path.to_string(),
                index: i + 1,
                source,
            })?;
            if !shapes.contains(&shape) {
                shapes.push(shape);
            }
        }
        if shapes.is_empty() {
            return Err(SuiteError::Empty(path.to_string()));
        }
        Ok(Suite { op, shapes })
    }

    /// Reads a suite file.
    pub fn load(path: &Path) -> Result<Suite, SuiteError> {
        let name = path.display().to_string();
        if path.is_dir() {
            return Err(SuiteError::IsDirectory { path: name });
        }
        let bytes = std::fs::read(path).map_err(|source| SuiteError::Io {
            path: name.clone(),
            source,
        })?;
        let text =
            String::from_utf8(bytes).map_err(|_| SuiteError::NotUtf8 { path: name.clone() })?;
        Self::from_toml_str(&text, &name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let s = Suite::from_toml_str(
            "op = \"gemv\"\nshapes = [\"4x8\", \"16x1x2\", \"4x8\"]",
            "t",
        )
        .unwrap();
        assert_eq!(s.op, Op::Gemv);
        assert_eq!(s.shapes.len(), 2);
        let e =
            Suite::from_toml_str("op = \"gemv\"\nshapes = [\"4x8\", \"4x2x8\"]", "t").unwrap_err();
        assert!(matches!(e, SuiteError::Shape { index: 2, .. }), "{e}");
        assert!(matches!(
            Suite::from_toml_str("op = \"gemm\"\nshapes = []", "t"),
            Err(SuiteError::Empty(_))
        ));
        assert!(matches!(
            Suite::from_toml_str("op = \"fft\"\nshapes = [\"1x1x1\"]", "t"),
            Err(SuiteError::Op { .. })
        ));
        assert!(Suite::from_toml_str("shapes = [\"1x1x1\"]", "t").is_err());
        // Parse errors are one line and carry the position.
        let e = Suite::from_toml_str("op = \"gemm\"\nshapes = [\n", "t").unwrap_err();
        assert!(matches!(e, SuiteError::Toml { line: 3, .. }), "{e:?}");
        assert!(!e.to_string().contains('\n'), "{e}");
        let e = Suite::from_toml_str("op = \"gemm\"\nshapes = \"1x1x1\"\n", "t").unwrap_err();
        assert!(
            matches!(
                e,
                SuiteError::Toml {
                    line: 2,
                    column: 10,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn shipped_suites_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/suites");
        for (name, op, n) in [
            ("gemm.toml", Op::Gemm, 8),
            ("gemv.toml", Op::Gemv, 8),
            ("mixed-24.toml", Op::Gemm, 24),
        ] {
            let s = Suite::load(&root.join(name)).unwrap();
            assert_eq!(s.op, op);
            assert!(s.shapes.len() >= n, "{name}");
        }
    }
}
