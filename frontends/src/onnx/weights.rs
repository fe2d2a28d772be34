//! Weight roles and synthetic weights for models whose weight file is missing.
//!
//! A graph-only export (such as the so400m fixture) declares every initializer but
//! its data file is absent. To compile or run such a model anyway, the loader can
//! synthesise the weights (`--weights=zeros|random`). Random weights imitate the
//! fixtures' scale so numerics stay in a realistic range:
//!
//! | role | values |
//! |---|---|
//! | [`WeightRole::Weight`] | N(0, 0.02) |
//! | [`WeightRole::Bias`] | N(0, 0.02) |
//! | [`WeightRole::NormScale`] | 1 + N(0, 0.1) |
//! | [`WeightRole::NormBias`] | N(0, 0.02) |
//!
//! Integer initializers (shape constants, indices) cannot be guessed: they become
//! zeros with a warning.
//!
//! Each initializer draws from its own ChaCha8 stream seeded by the user's seed and
//! a stable (FNV-1a) hash of the initializer's name, so values do not depend on file
//! order or thread count and are the same on every platform.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use ipuc_ir::attributes::filled_bytes;
use ipuc_ir::numeric::{storage, ElementKind};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::graph::Node;

/// What the graph uses an initializer for, decided from its first consumer.
///
/// Heuristic (first consumer in node order wins):
/// - input 1 of `LayerNormalization`/`BatchNormalization`/`InstanceNormalization`/
///   `GroupNormalization` → `NormScale`, input 2 → `NormBias`;
/// - input 2 of `Conv`/`ConvTranspose`/`Gemm` → `Bias`;
/// - an operand of `Add` whose other operand is produced by `MatMul`/`Gemm`/`Conv`
///   → `Bias`;
/// - decomposed LayerNorm (opset < 17 exports): an operand of `Mul` whose other
///   operand is produced by `Div` → `NormScale`, and an operand of `Add` whose other
///   operand is that `Mul`'s output → `NormBias`;
/// - everything else → `Weight`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WeightRole {
    /// A weight matrix, kernel or table.
    #[default]
    Weight,
    /// An additive bias.
    Bias,
    /// A normalisation scale (gamma).
    NormScale,
    /// A normalisation shift (beta).
    NormBias,
}

/// What to do when an initializer's external data file is missing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WeightsPolicy {
    /// Fail with an error naming the file and initializer.
    #[default]
    Require,
    /// Fill missing weights with zeros.
    Zeros,
    /// Fill missing weights with seeded random values by role (module docs).
    Random {
        /// Seed of the generator.
        seed: u64,
    },
}

/// Infers the role of every value used as a node input (callers look up
/// initializers in the result).
pub(crate) fn infer_roles(nodes: &[Node]) -> HashMap<&str, WeightRole> {
    let producer: HashMap<&str, &Node> = nodes
        .iter()
        .flat_map(|n| n.outputs.iter().map(move |o| (o.as_str(), n)))
        .collect();
    let produced_by = |value: &str, ops: &[&str]| {
        producer
            .get(value)
            .is_some_and(|n| ops.contains(&n.op_type.as_str()))
    };
    let mut roles: HashMap<&str, WeightRole> = HashMap::new();
    for node in nodes {
        for (index, input) in node.inputs.iter().enumerate() {
            if input.is_empty() || roles.contains_key(input.as_str()) {
                continue;
            }
            let other = node
                .inputs
                .get(1 - index.min(1))
                .map(String::as_str)
                .unwrap_or("");
            let role = match (node.op_type.as_str(), index) {
                (
                    "LayerNormalization"
                    | "BatchNormalization"
                    | "InstanceNormalization"
                    | "GroupNormalization",
                    1,
                ) => WeightRole::NormScale,
                (
                    "LayerNormalization"
                    | "BatchNormalization"
                    | "InstanceNormalization"
                    | "GroupNormalization",
                    2,
                ) => WeightRole::NormBias,
                ("Conv" | "ConvTranspose" | "Gemm", 2) => WeightRole::Bias,
                ("Add", 0 | 1) if produced_by(other, &["MatMul", "Gemm", "Conv"]) => {
                    WeightRole::Bias
                }
                ("Mul", 0 | 1) if produced_by(other, &["Div"]) => WeightRole::NormScale,
                ("Add", 0 | 1)
                    if producer.get(other).is_some_and(|n| {
                        n.op_type == "Mul"
                            && n.inputs
                                .iter()
                                .any(|i| roles.get(i.as_str()) == Some(&WeightRole::NormScale))
                    }) =>
                {
                    WeightRole::NormBias
                }
                _ => WeightRole::Weight,
            };
            roles.insert(input, role);
        }
    }
    roles
}

/// Synthesises `count` elements of `kind` for initializer `name` under `policy`
/// (which must not be `Require`).
pub(crate) fn synthesize(
    name: &str,
    kind: ElementKind,
    count: usize,
    role: WeightRole,
    policy: WeightsPolicy,
) -> Bytes {
    let mut data = vec![0u8; count * kind.byte_size()];
    fill_synthesized(name, kind, role, policy, &mut data);
    data.into()
}

/// Writes the values [`synthesize`] would return into `data` (which holds
/// zeros, `count * kind.byte_size()` bytes), so a caller can synthesise straight
/// into its own buffer.
pub(crate) fn fill_synthesized(
    name: &str,
    kind: ElementKind,
    role: WeightRole,
    policy: WeightsPolicy,
    data: &mut [u8],
) {
    let WeightsPolicy::Random { seed } = policy else {
        return;
    };
    if !kind.is_float() {
        tracing::warn!(initializer = name, %kind, "cannot synthesise random integer weights; using zeros");
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ fnv1a(name.as_bytes()));
    let (mean, std_dev) = match role {
        WeightRole::NormScale => (1.0, 0.1),
        WeightRole::Weight | WeightRole::Bias | WeightRole::NormBias => (0.0, 0.02),
    };
    let normal = Normal::new(mean, std_dev).expect("finite positive standard deviation");
    if kind == ElementKind::F32 {
        // The common case, written directly (a 1.7 GB model is mostly f32).
        for chunk in data.chunks_exact_mut(4) {
            let v: f64 = normal.sample(&mut rng);
            chunk.copy_from_slice(&(v as f32).to_le_bytes());
        }
    } else {
        for i in 0..data.len() / kind.byte_size() {
            storage::store_f64(kind, data, i, normal.sample(&mut rng), true);
        }
    }
}

/// One large initializer for [`synthesize_all`].
pub(crate) struct SynthesisJob<'a> {
    /// The initializer's name (its stream's seed).
    pub name: &'a str,
    /// Its element kind.
    pub kind: ElementKind,
    /// Its role (the distribution).
    pub role: WeightRole,
    /// Its size in bytes.
    pub len: usize,
}

/// A new buffer for each job (in order) holding what [`fill_synthesized`]
/// writes, made on the host's threads ([`filled_bytes`]): each initializer
/// draws from its own stream, so the values are the same whatever the
/// thread count and order (so400m's 1.7 GB of random f32 weights: its
/// import was mostly this sampling, one value at a time).
pub(crate) fn synthesize_all(jobs: &[SynthesisJob<'_>], policy: WeightsPolicy) -> Vec<Arc<[u8]>> {
    let lens: Vec<usize> = jobs.iter().map(|j| j.len).collect();
    filled_bytes(&lens, |i, data| {
        let j = &jobs[i];
        fill_synthesized(j.name, j.kind, j.role, policy, data);
    })
}

/// 64-bit FNV-1a: a stable hash (std's hashers may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
