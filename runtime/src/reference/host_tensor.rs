//! The host tensor the reference kernels work on, and the compute domains
//! its elements are widened into.

use std::sync::Arc;

use ipuc_ir::numeric::{storage, ElementKind};
use rayon::prelude::*;

/// A dense row-major tensor in host memory: element kind, shape and little-endian
/// bytes. The bytes are shared (`Arc`), so reshapes and weights never copy.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// Element type.
    pub kind: ElementKind,
    /// Shape (outermost first); empty for a scalar.
    pub shape: Vec<usize>,
    /// `element_count * kind.byte_size()` bytes.
    pub data: Arc<[u8]>,
}

/// Elements widened for computation: every float kind but f64 computes in f32
/// (16- and 8-bit storage is rounded back on store), f64 in f64, and every
/// integer and bool kind exactly in i128.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// f32 compute (f32, f16, bf16, f8 storage).
    F32(Vec<f32>),
    /// f64 compute.
    F64(Vec<f64>),
    /// Exact integer compute (all integer kinds and bool).
    Int(Vec<i128>),
}

impl Values {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Int(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Below this many elements, loops stay on one thread (rayon's overhead dominates).
pub(crate) const PARALLEL_THRESHOLD: usize = 1 << 15;

impl HostTensor {
    /// A tensor from raw parts. Panics if the byte count does not match the shape:
    /// callers build tensors from data they own, so a mismatch is a programming error.
    pub fn new(kind: ElementKind, shape: Vec<usize>, data: Arc<[u8]>) -> HostTensor {
        assert_eq!(
            data.len(),
            shape.iter().product::<usize>() * kind.byte_size(),
            "byte count does not match shape {shape:?} of {kind}"
        );
        HostTensor { kind, shape, data }
    }

    /// Number of elements.
    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }

    /// Rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// An f32 tensor.
    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> HostTensor {
        HostTensor::from_values(ElementKind::F32, shape, Values::F32(values.to_vec()))
    }

    /// An i64 tensor.
    pub fn from_i64(shape: Vec<usize>, values: &[i64]) -> HostTensor {
        HostTensor::from_values(
            ElementKind::I64,
            shape,
            Values::Int(values.iter().map(|&v| i128::from(v)).collect()),
        )
    }

    /// The compute domain for elements of `kind`, with empty storage.
    pub fn domain_of(kind: ElementKind) -> Values {
        match kind {
            ElementKind::F64 => Values::F64(Vec::new()),
            k if k.is_float() => Values::F32(Vec::new()),
            _ => Values::Int(Vec::new()),
        }
    }

    /// Every element widened into its compute domain.
    pub fn values(&self) -> Values {
        let n = self.element_count();
        let (kind, data) = (self.kind, &self.data[..]);
        match kind {
            ElementKind::F32 => Values::F32(
                data.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            ),
            ElementKind::F64 => Values::F64(storage::load_all_f64(kind, data, n)),
            k if k.is_float() => Values::F32(
                (0..n)
                    .into_par_iter()
                    .map(|i| storage::load_f32(kind, data, i))
                    .collect(),
            ),
            _ => Values::Int(storage::load_all_i128(kind, data, n)),
        }
    }

    /// Every element widened into the compute domain of `kind` (which may differ
    /// from this tensor's kind): mixed-format contractions such as f16
    /// activations times f8 weights compute in the domain of their result kind.
    /// Each element converts once, from its exact value.
    pub fn values_in(&self, kind: ElementKind) -> Values {
        let (own, data) = (self.kind, &self.data[..]);
        let n = self.element_count();
        match (HostTensor::domain_of(own), HostTensor::domain_of(kind)) {
            (Values::F32(_), Values::F32(_))
            | (Values::F64(_), Values::F64(_))
            | (Values::Int(_), Values::Int(_)) => self.values(),
            (_, Values::F32(_)) => Values::F32(
                (0..n)
                    .into_par_iter()
                    .map(|i| storage::load_f32(own, data, i))
                    .collect(),
            ),
            (_, Values::F64(_)) => Values::F64(storage::load_all_f64(own, data, n)),
            (_, Values::Int(_)) => Values::Int(storage::load_all_i128(own, data, n)),
        }
    }

    /// Every element as f64 (for comparisons and tests).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        storage::load_all_f64(self.kind, &self.data, self.element_count())
    }

    /// Every element as i64 (floats truncated); for shape-like operands.
    pub fn to_i64_vec(&self) -> Vec<i64> {
        storage::load_all_i64(self.kind, &self.data, self.element_count())
    }

    /// Stores computed values as elements of `kind` (rounding once to the storage
    /// format; 8-bit floats saturate). Panics if the count does not match the shape.
    pub fn from_values(kind: ElementKind, shape: Vec<usize>, values: Values) -> HostTensor {
        HostTensor::from_values_saturating(kind, shape, values, true)
    }

    /// As [`HostTensor::from_values`], choosing the 8-bit float overflow rule.
    pub fn from_values_saturating(
        kind: ElementKind,
        shape: Vec<usize>,
        values: Values,
        saturate: bool,
    ) -> HostTensor {
        let n: usize = shape.iter().product();
        assert_eq!(
            values.len(),
            n,
            "value count does not match shape {shape:?}"
        );
        let size = kind.byte_size();
        let mut data = vec![0u8; n * size];
        match (&values, kind) {
            (Values::F32(v), ElementKind::F32) => {
                data.chunks_exact_mut(4)
                    .zip(v)
                    .for_each(|(c, x)| c.copy_from_slice(&x.to_le_bytes()));
            }
            (Values::F32(v), _) => {
                data.par_chunks_mut(size)
                    .zip(v.par_iter())
                    .for_each(|(c, &x)| {
                        storage::store_f64(kind, c, 0, f64::from(x), saturate);
                    })
            }
            (Values::F64(v), _) => data
                .chunks_mut(size)
                .zip(v)
                .for_each(|(c, &x)| storage::store_f64(kind, c, 0, x, saturate)),
            (Values::Int(v), _) => data
                .chunks_mut(size)
                .zip(v)
                .for_each(|(c, &x)| storage::store_i128(kind, c, 0, x)),
        }
        HostTensor {
            kind,
            shape,
            data: data.into(),
        }
    }

    /// A tensor of `kind` and `shape` whose bytes `fill` writes into the
    /// tensor's own shared buffer (zeroed first), so a kernel's result is
    /// never copied after it is computed.
    pub(crate) fn filled_with(
        kind: ElementKind,
        shape: Vec<usize>,
        fill: impl FnOnce(&mut [u8]),
    ) -> HostTensor {
        let bytes = shape.iter().product::<usize>() * kind.byte_size();
        let mut buffer = Arc::<[u8]>::new_uninit_slice(bytes);
        Arc::get_mut(&mut buffer)
            .expect("a fresh buffer has one owner")
            .iter_mut()
            .for_each(|b| {
                b.write(0);
            });
        // SAFETY: every byte was initialised just above.
        let mut data = unsafe { buffer.assume_init() };
        fill(Arc::get_mut(&mut data).expect("a fresh buffer has one owner"));
        HostTensor { kind, shape, data }
    }

    /// The same data with another shape of equal element count (no copy).
    pub fn with_shape(&self, shape: Vec<usize>) -> HostTensor {
        assert_eq!(
            shape.iter().product::<usize>(),
            self.element_count(),
            "reshape changes element count"
        );
        HostTensor {
            kind: self.kind,
            shape,
            data: self.data.clone(),
        }
    }
}
