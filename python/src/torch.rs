//! The PyTorch fast path ([`Runtime::torch_call`]): a cached call on PyTorch tensors, read,
//! looked up and checked here without the interpreter.
//!
//! Each tensor's dtype, device, shape, strides and address are read through its attributes,
//! and the call's key (op, flags, scalars, each tensor's type, shape and strides) is looked up
//! in [`TorchHits`], a Rust map that learns each key from the Python side's plan cache
//! (`Tuned._plans`, the one source of plans) the first time the key is seen there. Building
//! the cache's Python tuple key and looking it up in the dict on every call, as before, cost
//! about 2 us a call on an H200 host (results/runs/session46).

use crate::{Plan, Runtime};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString, PyTuple};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// PyTorch's objects the tensor fast path compares with and calls, and the Python side's plan
/// cache it learns keys from, handed over once ([`Runtime::use_torch`]).
pub(crate) struct TorchApi {
    pub(crate) float32: Py<PyAny>,
    pub(crate) strided: Py<PyAny>,
    /// The exact tensor types whose views the extension trusts (`torch.Tensor`,
    /// `torch.nn.Parameter`: the Python side's `_torch_state["trusted"]`); a key holds the
    /// index of its tensors' types here.
    pub(crate) types: Vec<Py<PyAny>>,
    /// `torch._C._cuda_getCurrentRawStream` (or what stands for it): the current stream of
    /// a GPU, asked on every call.
    pub(crate) raw_stream: Py<PyAny>,
    /// `Tuned._plans`: key -> (plan, swapped, len0, len1, out_len, out_shape, like, trusted).
    pub(crate) plans: Py<PyDict>,
    /// The process sees one GPU, this runtime's: no tensor is asked its GPU.
    pub(crate) one_gpu: bool,
}

/// What the fast path reads of one tensor.
#[derive(Clone, Copy, Default)]
struct TensorInfo {
    data: u64,
    sizes: [i64; 3],
    strides: [i64; 3],
    ndim: i32,
    /// The CUDA ordinal.
    device: i32,
}

/// A fast, non-cryptographic hash for [`CallKey`] (the keys are the program's own calls).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Slices of integers (the sizes and strides) come here whole: a word at a time.
        let words = bytes.chunks_exact(8);
        let rest = words.remainder();
        for w in words {
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            self.write_u64(u64::from_le_bytes(word));
        }
        for b in rest {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

/// A cached call's key as the Python side's (`Tuned._cached`): the op, the flags, the scalars'
/// bits, and per tensor its type's index in [`TorchApi::types`], rank, sizes and strides.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CallKey {
    gemv: bool,
    flags: [bool; 2],
    scalars: [u64; 2],
    tensors: [(u8, i32, [i64; 3], [i64; 3]); 3],
}

/// A key's entry of the Python side's plan cache, as the launch needs it (the extents are the
/// plan's).
#[derive(Clone, Copy)]
pub(crate) struct Hit {
    plan: Plan,
    swapped: bool,
    trusted: u8,
}

/// The keys learned from the Python side's plan cache; cleared with it ([`Runtime::plans`]'s
/// clear_plans), since its plans' indices end there.
pub(crate) type TorchHits = HashMap<CallKey, Hit, BuildHasherDefault<KeyHasher>>;

impl Runtime {
    /// [`Runtime::torch_call`]'s reading and checks: the plan, the addresses in the runtime's
    /// order (A, B or x, out) and the trusted mask of a call it may launch; `None` where the
    /// Python side decides (an `Err` reading a tensor means the same).
    pub(crate) fn torch_hit(
        &self,
        py: Python<'_>,
        api: &TorchApi,
        [op, ta, tb, alpha, beta]: [&Bound<'_, PyAny>; 5],
        tensors: [&Bound<'_, PyAny>; 3],
    ) -> PyResult<Option<(Plan, [u64; 3], u8)>> {
        if !(ta.is_exact_instance_of::<PyBool>() && tb.is_exact_instance_of::<PyBool>()) {
            return Ok(None);
        }
        let mut scalars = [0u64; 2];
        for (x, bits) in [alpha, beta].into_iter().zip(scalars.iter_mut()) {
            // -0.0 keys as 0.0, but the plan's descriptor carries the sign of the first call.
            if !x.is_exact_instance_of::<PyFloat>() {
                return Ok(None);
            }
            *bits = x.extract::<f64>()?.to_bits();
            if *bits == (-0.0f64).to_bits() {
                return Ok(None);
            }
        }
        let gemv = match op.cast::<PyString>()?.to_cow()?.as_ref() {
            "gemm" => false,
            "gemv" => true,
            _ => return Ok(None),
        };
        let mut infos = [TensorInfo::default(); 3];
        let mut key = CallKey {
            gemv,
            flags: [ta.is_truthy()?, tb.is_truthy()?],
            scalars,
            tensors: [(0, 0, [0; 3], [0; 3]); 3],
        };
        for ((t, info), k) in tensors
            .iter()
            .zip(infos.iter_mut())
            .zip(key.tensors.iter_mut())
        {
            let tp = t.get_type();
            let Some(ty) = api.types.iter().position(|k| tp.is(k.bind(py))) else {
                return Ok(None);
            };
            let Some(read) = self.read_attributes(py, api, t)? else {
                return Ok(None);
            };
            if usize::try_from(read.device).ok() != Some(self.ordinal) {
                return Ok(None);
            }
            *info = read;
            *k = (ty as u8, read.ndim, read.sizes, read.strides);
        }
        let found = self.hits.read().ok().and_then(|h| h.get(&key).copied());
        let hit = match found {
            Some(hit) => hit,
            None => match self.learn(py, api, [op, ta, tb, alpha, beta], tensors, &infos)? {
                Some(hit) => {
                    if let Ok(mut hits) = self.hits.write() {
                        hits.insert(key, hit);
                    }
                    hit
                }
                None => return Ok(None),
            },
        };
        let [pa, pb, pc] = infos.map(|i| i.data);
        let (p0, p1) = if hit.swapped { (pb, pa) } else { (pa, pb) };
        let (_, _, lens) = hit.plan.operands();
        let end = pc.saturating_add(4 * lens[2] as u64);
        let overlaps = |p: u64, len: usize| p < end && pc < p.saturating_add(4 * len as u64);
        if (p0 | p1 | pc) & 15 != 0 || overlaps(p0, lens[0]) || overlaps(p1, lens[1]) {
            return Ok(None);
        }
        Ok(Some((hit.plan, [p0, p1, pc], hit.trusted)))
    }

    /// A tensor read through Python's attributes (dtype, is_cuda, layout, shape, stride(),
    /// data_ptr(), and get_device() unless the process sees one GPU); `None` for one the fast
    /// path does not take (another dtype or layout, not on a GPU, more than 3 dimensions).
    fn read_attributes(
        &self,
        py: Python<'_>,
        api: &TorchApi,
        t: &Bound<'_, PyAny>,
    ) -> PyResult<Option<TensorInfo>> {
        if !(t.getattr(intern!(py, "dtype"))?.is(api.float32.bind(py))
            && t.getattr(intern!(py, "is_cuda"))?.is_truthy()?
            && t.getattr(intern!(py, "layout"))?.is(api.strided.bind(py)))
        {
            return Ok(None);
        }
        let shape = t.getattr(intern!(py, "shape"))?;
        let shape = shape.cast::<PyTuple>()?;
        let stride = t.call_method0(intern!(py, "stride"))?;
        let stride = stride.cast::<PyTuple>()?;
        let n = shape.len();
        if n > 3 || stride.len() != n {
            return Ok(None);
        }
        let mut info = TensorInfo {
            ndim: n as i32,
            ..TensorInfo::default()
        };
        for i in 0..n {
            info.sizes[i] = shape.get_item(i)?.extract()?;
            info.strides[i] = stride.get_item(i)?.extract()?;
        }
        info.device = if api.one_gpu {
            self.ordinal as i32
        } else {
            t.call_method0(intern!(py, "get_device"))?.extract()?
        };
        info.data = t.call_method0(intern!(py, "data_ptr"))?.extract()?;
        Ok(Some(info))
    }

    /// The Python side's plan cache's entry for this call, looked up under the key it keeps
    /// (`(op, ta, tb, alpha, beta, (type, shape, strides) x 3)`; a tuple of ints finds the
    /// `torch.Size` it stored), or `None`.
    fn learn(
        &self,
        py: Python<'_>,
        api: &TorchApi,
        scalars: [&Bound<'_, PyAny>; 5],
        tensors: [&Bound<'_, PyAny>; 3],
        infos: &[TensorInfo; 3],
    ) -> PyResult<Option<Hit>> {
        let mut items: Vec<Bound<'_, PyAny>> = scalars.iter().map(|x| (*x).clone()).collect();
        for (t, info) in tensors.iter().zip(infos) {
            let n = info.ndim as usize;
            items.push(
                PyTuple::new(
                    py,
                    [
                        t.get_type().into_any(),
                        PyTuple::new(py, &info.sizes[..n])?.into_any(),
                        PyTuple::new(py, &info.strides[..n])?.into_any(),
                    ],
                )?
                .into_any(),
            );
        }
        let key = PyTuple::new(py, items)?;
        let Some(entry) = api.plans.bind(py).get_item(key)? else {
            return Ok(None);
        };
        let entry = entry.cast_into::<PyTuple>()?;
        let plan = self.plan(entry.get_item(0)?.extract()?)?;
        Ok(Some(Hit {
            plan,
            swapped: entry.get_item(1)?.extract()?,
            trusted: entry.get_item(7)?.extract()?,
        }))
    }
}
