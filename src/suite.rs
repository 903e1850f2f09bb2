//! Shape suites: `configs/suites/<name>.toml` lists the shapes a product cares about, so one
//! command tunes them all.
//!
//! ```toml
//! op = "gemv"
//! shapes = ["4096x4096", "256x65536"]
//! ```

use crate::shape::{Op, Shape, ShapeError};
use serde::Deserialize;
use std::path::Path;

/// Why a suite file is unusable.
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
    /// Malformed TOML or fields.
    #[error("suite {path} is invalid: {message}")]
    Toml {
        /// The path.
        path: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A shape in the list is invalid.
    #[error("suite {path}, shape {index}: {source}")]
    Shape {
        /// The path.
        path: String,
        /// 1-based position in the list.
        index: usize,
        /// Why.
        source: ShapeError,
    },
    /// No shapes.
    #[error("suite {0} lists no shapes")]
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
        let f: SuiteFile = toml::from_str(text).map_err(|e| SuiteError::Toml {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        let op: Op = f.op.parse().map_err(|source| SuiteError::Shape {
            path: path.to_string(),
            index: 0,
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
        let text = std::fs::read_to_string(path).map_err(|source| SuiteError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml_str(&text, &path.display().to_string())
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
        assert!(Suite::from_toml_str("op = \"gemm\"\nshapes = []", "t").is_err());
        assert!(Suite::from_toml_str("op = \"fft\"\nshapes = [\"1x1x1\"]", "t").is_err());
        assert!(Suite::from_toml_str("shapes = [\"1x1x1\"]", "t").is_err());
    }

    #[test]
    fn shipped_suites_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/suites");
        for (name, op, n) in [("gemm.toml", Op::Gemm, 8), ("gemv.toml", Op::Gemv, 8)] {
            let s = Suite::load(&root.join(name)).unwrap();
            assert_eq!(s.op, op);
            assert!(s.shapes.len() >= n, "{name}");
        }
    }
}
