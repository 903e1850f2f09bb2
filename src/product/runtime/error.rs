//! Why a tuned call could not be made.

use crate::cuda::device::DeviceError;
use crate::cuda::nvrtc;
use crate::db::DbError;
use crate::family::catalog::CatalogError;
use crate::problem::{Op, ShapeError};
use crate::product::desc::DescError;

/// Why a tuned call could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The database could not be read.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The built-in families could not be loaded.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The device could not be queried.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The shape is invalid.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// The call's descriptor does not fit its buffers (nothing was launched).
    #[error(transparent)]
    Desc(#[from] DescError),
    /// A buffer is shorter than the shape needs.
    #[error("{op} {shape}: buffer {buffer} has {got} elements, the shape needs {need}")]
    BufferLength {
        /// The op.
        op: Op,
        /// The shape label.
        shape: String,
        /// Which buffer.
        buffer: &'static str,
        /// Its length.
        got: usize,
        /// The length the shape needs.
        need: usize,
    },
    /// The chosen config is not in its family's space any more, or cannot launch here.
    #[error("{op} {shape}: config {family} {params} cannot be launched: {reason}")]
    Config {
        /// The op.
        op: Op,
        /// The shape label.
        shape: String,
        /// The family.
        family: String,
        /// Its parameters.
        params: String,
        /// Why.
        reason: String,
    },
    /// NVRTC failed.
    #[error(transparent)]
    Compile(#[from] nvrtc::CompileError),
    /// Loading or launching failed.
    #[error("{op} {shape}: kernel {kernel}: {reason}")]
    Launch {
        /// The op.
        op: Op,
        /// The shape label.
        shape: String,
        /// The kernel.
        kernel: String,
        /// The driver's error.
        reason: String,
    },
}
