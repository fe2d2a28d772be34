//! Test data: ONNX test data sets (`input_K.pb`, `output_K.pb`), binding
//! their tensors to a function's parameters, synthesised inputs, and writing
//! tensors back as `.pb` files.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use ipuc_frontends::onnx::{read_test_data_set, write_tensor_pb, NamedTensor, Tensor};
use ipuc_ir::location::LocKind;
use ipuc_ir::numeric::ElementKind;
use ipuc_ir::{Context, OpId};
use ipuc_runtime::reference::interpreter::{describe, element_kind_of, matches_type};
use ipuc_runtime::reference::{HostTensor, Values};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A tensor with the name it was stored or declared under (may be empty).
#[derive(Clone, Debug)]
pub struct Named {
    /// The name.
    pub name: String,
    /// The data.
    pub tensor: HostTensor,
}

/// One set of inputs, with the expected outputs when known.
#[derive(Clone, Debug)]
pub struct DataSet {
    /// The directory name (`test_data_set_0`), or `synthesized`.
    pub name: String,
    /// The inputs, in file order.
    pub inputs: Vec<Named>,
    /// The expected outputs (empty when none are stored).
    pub expected: Vec<Named>,
    /// Whether the inputs were synthesised rather than read.
    pub synthesized: bool,
}

/// `set` (one image) as a batch of `n` images: every input and stored
/// output repeated along its leading dimension, which must be 1 (`--batch
/// N` with `--input`: each image of the batch is the data set's, judged
/// against its stored outputs).
pub fn repeat_batch(set: DataSet, n: u32) -> Result<DataSet, String> {
    let DataSet {
        name: set_name,
        inputs,
        expected,
        synthesized,
    } = set;
    let repeat = |named: Vec<Named>, what: &str| -> Result<Vec<Named>, String> {
        named
            .into_iter()
            .map(|Named { name, tensor }| match tensor.shape.first() {
                Some(1) => {
                    let mut shape = tensor.shape.clone();
                    shape[0] = n as usize;
                    let data = tensor.data.repeat(n as usize);
                    Ok(Named {
                        name,
                        tensor: HostTensor::new(tensor.kind, shape, data.into()),
                    })
                }
                _ => Err(format!(
                    "data set {set_name}: --batch {n} repeats a data set of one image, but {what} `{name}` has shape {:?} (leading dimension not 1)",
                    tensor.shape
                )),
            })
            .collect()
    };
    Ok(DataSet {
        inputs: repeat(inputs, "input")?,
        expected: repeat(expected, "output")?,
        name: set_name,
        synthesized,
    })
}

/// The data sets read for a run of `batch` images: each repeated
/// ([`repeat_batch`]) for more than one, as read otherwise.
pub fn for_batch(
    read: Option<Vec<DataSet>>,
    batch: Option<crate::import::Batch>,
) -> Result<Option<Vec<DataSet>>, String> {
    match batch {
        Some(crate::import::Batch::Images(n)) if n > 1 => read
            .map(|sets| sets.into_iter().map(|s| repeat_batch(s, n)).collect())
            .transpose(),
        _ => Ok(read),
    }
}

fn to_host(t: NamedTensor) -> Named {
    let NamedTensor { name, tensor } = t;
    Named {
        name,
        tensor: HostTensor::new(tensor.kind, tensor.dims, tensor.data[..].into()),
    }
}

/// The frontend tensor of a host tensor (for writing `.pb` files).
pub fn to_onnx(t: &HostTensor) -> Tensor {
    Tensor::new(t.kind, t.shape.clone(), Bytes::copy_from_slice(&t.data))
        .expect("host tensors hold exactly their shape's bytes")
}

fn read_set(dir: &Path) -> Result<DataSet, String> {
    let (inputs, expected) = read_test_data_set(dir).map_err(|e| e.to_string())?;
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(DataSet {
        name,
        inputs: inputs.into_iter().map(to_host).collect(),
        expected: expected.into_iter().map(to_host).collect(),
        synthesized: false,
    })
}

/// The data sets in `dir`: `dir` itself when it holds `input_0.pb` or
/// `output_0.pb`, else its `test_data_set_*` subdirectories in numeric order.
pub fn discover(dir: &Path) -> Result<Vec<DataSet>, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    if dir.join("input_0.pb").exists() || dir.join("output_0.pb").exists() {
        return Ok(vec![read_set(dir)?]);
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read '{}': {e}", dir.display()))?;
    let mut sets: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let index = name.strip_prefix("test_data_set_")?.parse::<u64>().ok()?;
            Some((index, e.path()))
        })
        .collect();
    if sets.is_empty() {
        return Err(format!(
            "{}: holds neither input_K.pb/output_K.pb files nor test_data_set_* directories",
            dir.display()
        ));
    }
    sets.sort();
    sets.iter().map(|(_, p)| read_set(p)).collect()
}

/// The declared names of `func`'s parameters: a name location on the block
/// argument (`loc("pixel_values")`) or an `onnx.name` argument attribute.
pub fn parameter_names(ctx: &Context, func: OpId) -> Vec<Option<String>> {
    let Some(body) = ipuc_dialects::func::entry_block(ctx, func) else {
        return Vec::new();
    };
    let arg_attrs = ctx.attr(func, "arg_attrs").and_then(|a| a.as_array());
    ctx.block_args(body)
        .iter()
        .enumerate()
        .map(|(i, &arg)| {
            let from_loc = ctx.value_loc(arg).and_then(|l| match l.kind() {
                LocKind::Name { name, .. } => Some(name.to_string()),
                _ => None,
            });
            let from_attr = || {
                arg_attrs?
                    .get(i)?
                    .as_dictionary()?
                    .get("onnx.name")?
                    .as_str()
                    .map(str::to_string)
            };
            from_loc.or_else(from_attr)
        })
        .collect()
}

/// The function's inputs from `inputs` (the data set's, or those a bound
/// ONNX model still takes): by name when every input and every parameter is
/// named (and the names agree), else by position. Each is checked against its
/// parameter's type, and `set`'s expected outputs against the results, before
/// anything runs.
pub fn bind(
    ctx: &Context,
    func: OpId,
    set: &DataSet,
    inputs: &[&Named],
) -> Result<Vec<HostTensor>, String> {
    let params = parameter_names(ctx, func);
    if params.len() != inputs.len() {
        return Err(format!(
            "data set {} holds {} input(s), but the function takes {}",
            set.name,
            inputs.len(),
            params.len()
        ));
    }
    let named = params.iter().all(Option::is_some) && inputs.iter().all(|t| !t.name.is_empty());
    let ordered: Vec<&Named> = if named {
        params
            .iter()
            .map(|p| {
                let p = p.as_deref().expect("all parameters are named");
                inputs.iter().copied().find(|t| t.name == p).ok_or_else(|| {
                    format!(
                        "data set {} has no input named '{p}' (it has: {})",
                        set.name,
                        inputs
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?
    } else {
        inputs.to_vec()
    };
    check_signature(ctx, func, set, &ordered)?;
    Ok(ordered.into_iter().map(|t| t.tensor.clone()).collect())
}

/// Checks `inputs` (in parameter order) against the parameter types and the
/// set's expected outputs against the result types: counts, element types
/// and static dimensions.
fn check_signature(
    ctx: &Context,
    func: OpId,
    set: &DataSet,
    inputs: &[&Named],
) -> Result<(), String> {
    let Some(body) = ipuc_dialects::func::entry_block(ctx, func) else {
        return Ok(());
    };
    let label = |t: &Named, what: &str, k: usize| {
        if t.name.is_empty() {
            format!("{what} #{k}")
        } else {
            format!("{what} #{k} ('{}')", t.name)
        }
    };
    for (k, (&arg, t)) in ctx.block_args(body).iter().zip(inputs).enumerate() {
        let ty = ctx.value_type(arg);
        if !matches_type(&t.tensor, ty) {
            return Err(format!(
                "data set {}: {} is {}, but the function's parameter #{k} is {ty}",
                set.name,
                label(t, "input", k),
                describe(&t.tensor)
            ));
        }
    }
    if set.expected.is_empty() {
        return Ok(());
    }
    let results: Vec<ipuc_ir::Type> = ctx
        .attr(func, "function_type")
        .and_then(|a| a.as_type())
        .and_then(|t| t.function_signature())
        .map(|(_, results)| results.to_vec())
        .unwrap_or_default();
    if results.len() != set.expected.len() {
        return Err(format!(
            "data set {} holds {} expected output(s), but the function returns {}",
            set.name,
            set.expected.len(),
            results.len()
        ));
    }
    for (k, (ty, t)) in results.iter().zip(&set.expected).enumerate() {
        if !matches_type(&t.tensor, ty) {
            return Err(format!(
                "data set {}: expected {} is {}, but the function's result #{k} is {ty}",
                set.name,
                label(t, "output", k),
                describe(&t.tensor)
            ));
        }
    }
    Ok(())
}

/// One synthesised input: floats uniform in [-1, 1), integers and booleans zero.
pub fn synthesize_tensor(rng: &mut ChaCha8Rng, kind: ElementKind, shape: Vec<usize>) -> HostTensor {
    let n: usize = shape.iter().product();
    let values = match HostTensor::domain_of(kind) {
        Values::F32(_) => Values::F32((0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()),
        Values::F64(_) => Values::F64((0..n).map(|_| rng.random_range(-1.0f64..1.0)).collect()),
        Values::Int(_) => Values::Int(vec![0; n]),
    };
    HostTensor::from_values(kind, shape, values)
}

/// Inputs for `func` from a seeded generator: floats uniform in [-1, 1),
/// integers and booleans zero. Every parameter needs a static tensor type.
pub fn synthesize(ctx: &Context, func: OpId, seed: u64) -> Result<DataSet, String> {
    let body = ipuc_dialects::func::entry_block(ctx, func)
        .ok_or_else(|| "the function has no body".to_string())?;
    let names = parameter_names(ctx, func);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut inputs = Vec::new();
    for (i, &arg) in ctx.block_args(body).iter().enumerate() {
        let ty = ctx.value_type(arg);
        let shape: Vec<usize> = ty
            .shape()
            .filter(|_| ty.is_tensor() && ty.has_static_shape())
            .ok_or_else(|| {
                format!("parameter #{i} has type '{ty}'; synthesised inputs need static tensor types (pass --input)")
            })?
            .iter()
            .map(|&d| d as usize)
            .collect();
        let kind = ty
            .element_type()
            .and_then(element_kind_of)
            .ok_or_else(|| format!("parameter #{i} has unsupported element type in '{ty}'"))?;
        inputs.push(Named {
            name: names[i].clone().unwrap_or_default(),
            tensor: synthesize_tensor(&mut rng, kind, shape),
        });
    }
    Ok(DataSet {
        name: "synthesized".into(),
        inputs,
        expected: Vec::new(),
        synthesized: true,
    })
}

/// Writes `tensors` as `<prefix>_K.pb` into `dir` (created if missing).
pub fn write_tensors(dir: &Path, prefix: &str, tensors: &[Named]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    for (k, t) in tensors.iter().enumerate() {
        let path = dir.join(format!("{prefix}_{k}.pb"));
        write_tensor_pb(&path, &t.name, &to_onnx(&t.tensor)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, shape: Vec<usize>, values: &[f32]) -> Named {
        Named {
            name: name.into(),
            tensor: HostTensor::from_f32(shape, values),
        }
    }

    #[test]
    fn a_data_sets_image_repeats_into_a_batch() {
        let set = DataSet {
            name: "test_data_set_0".into(),
            inputs: vec![named("x", vec![1, 2], &[1.0, 2.0])],
            expected: vec![named("y", vec![1, 1, 3], &[3.0, 4.0, 5.0])],
            synthesized: false,
        };
        let three = repeat_batch(set.clone(), 3).unwrap();
        assert_eq!(three.inputs[0].tensor.shape, [3, 2]);
        assert_eq!(three.inputs[0].tensor.kind, ElementKind::F32);
        assert_eq!(
            three.inputs[0].tensor,
            HostTensor::from_f32(vec![3, 2], &[1.0, 2.0, 1.0, 2.0, 1.0, 2.0])
        );
        assert_eq!(three.expected[0].tensor.shape, [3, 1, 3]);
        assert_eq!(three.name, "test_data_set_0");
        // A data set of two images is not one image to repeat.
        let two = DataSet {
            inputs: vec![named("x", vec![2, 1], &[1.0, 2.0])],
            ..set
        };
        let err = repeat_batch(two, 3).unwrap_err();
        assert!(
            err.contains(
                "--batch 3 repeats a data set of one image, but input `x` has shape [2, 1]"
            ),
            "{err}"
        );
    }
}
