//! Loading a compiled kernel and launching it on a problem's buffers: the one path by which the
//! bench (tuning, verify, cross) and the product runtime run our kernels, so what is timed is
//! what ships.

use crate::cuda::baseline::FullArgs;
use crate::family::space::{Interface, Launch, WorkspaceZero};
use crate::problem::{Call, Op, Shape};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, CudaViewMut, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;

/// Loads a cubin (or NUL-terminated PTX, which the driver JIT-compiles) into `ctx` and looks
/// up `name`, raising the function's dynamic shared memory limit when it needs more than the
/// default 48 KiB.
pub fn load_function(
    ctx: &Arc<CudaContext>,
    cubin: &[u8],
    name: &str,
    dynamic_shared_bytes: u32,
) -> Result<CudaFunction, String> {
    let module = ctx
        .load_module(Ptx::from_binary(cubin.to_vec()))
        .map_err(|e| {
            let e = format!("{e:?}");
            if e.contains("UNSUPPORTED_PTX_VERSION") {
                format!("module load: {e}: this PTX is newer than the driver can JIT-compile; use an NVRTC no newer than the driver (set AUTOTUNE_NVRTC to its library)")
            } else {
                format!("module load: {e}")
            }
        })?;
    let func = module
        .load_function(name)
        .map_err(|e| format!("function {name} not found: {e:?}"))?;
    if dynamic_shared_bytes > 48 * 1024 {
        func.set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            dynamic_shared_bytes as i32,
        )
        .map_err(|e| format!("raising the dynamic shared memory limit: {e:?}"))?;
    }
    Ok(func)
}

/// Launches a kernel of `op`'s signature on `stream`: gemm `(M, N, K, A, B, C)`, gemv
/// `(M, K, A, x, y)`, then `workspace` when the family has one ([`Launch::workspace_bytes`]),
/// zeroing the output first when the family accumulates atomically, and the workspace first
/// when it must be zeroed every launch ([`WorkspaceZero::EveryLaunch`]; a workspace zeroed
/// `once` is the caller's to zero before its first use). Buffer lengths must match the shape
/// (the caller checks); a missing or short workspace is an error.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    stream: &Arc<CudaStream>,
    func: &CudaFunction,
    launch: Launch,
    op: Op,
    shape: Shape,
    call: &Call,
    a: &CudaSlice<f32>,
    b: &CudaSlice<f32>,
    out: &mut CudaViewMut<'_, f32>,
    workspace: Option<&mut CudaViewMut<'_, u8>>,
) -> Result<(), String> {
    let (m, n, k) = (shape.m as i32, shape.n as i32, shape.k as i32);
    let full = FullArgs::of(call)?;
    if !launch.interface.computes(&shape.form) {
        return Err(format!(
            "{}: {}",
            shape.label(op),
            crate::family::space::PLAIN_ONLY
        ));
    }
    let mut workspace = match (launch.workspace_bytes, workspace) {
        (None, _) => None,
        (Some(need), Some(w)) if w.len() as u64 >= need => Some(w),
        (Some(need), w) => {
            return Err(format!(
                "the kernel needs a workspace of {need} bytes, but {}",
                w.map_or("none was given".to_string(), |w| format!(
                    "the one given has {} bytes",
                    w.len()
                ))
            ))
        }
    };
    if launch.zero_output {
        stream
            .memset_zeros(out)
            .map_err(|e| format!("zeroing the output: {e:?}"))?;
    }
    if let (Some(w), Some(need)) = (workspace.as_deref_mut(), launch.workspace_bytes) {
        if launch.workspace_zero == WorkspaceZero::EveryLaunch && need > 0 {
            // `need` fits: it is at most the workspace's length.
            stream
                .memset_zeros(&mut w.slice_mut(..need as usize))
                .map_err(|e| format!("zeroing the workspace: {e:?}"))?;
        }
    }
    let cfg = LaunchConfig {
        grid_dim: launch.grid,
        block_dim: launch.block,
        shared_mem_bytes: launch.dynamic_shared_bytes,
    };
    let mut lb = stream.launch_builder(func);
    match op {
        Op::Gemm => {
            lb.arg(&m).arg(&n).arg(&k);
        }
        Op::Gemv => {
            lb.arg(&m).arg(&k);
        }
    }
    lb.arg(a).arg(b).arg(out);
    if launch.interface == Interface::Full {
        match op {
            Op::Gemm => {
                lb.arg(&full.lda).arg(&full.ldb).arg(&full.ldc);
            }
            Op::Gemv => {
                lb.arg(&full.lda);
            }
        }
        lb.arg(&full.stride_a)
            .arg(&full.stride_b)
            .arg(&full.stride_c);
        lb.arg(&full.batch).arg(&full.alpha).arg(&full.beta);
    }
    if let Some(w) = workspace {
        lb.arg(w);
    }
    // SAFETY: the argument list matches the op's kernel signature (plus the workspace of a
    // family that declares one, at least as long as it asks for), and every template
    // bounds-checks against M, N, K.
    unsafe { lb.launch(cfg) }
        .map(|_| ())
        .map_err(|e| format!("launch {launch:?}: {e:?}"))
}
