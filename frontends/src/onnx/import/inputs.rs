//! Static types for the graph's runtime inputs: declared shapes, with
//! symbolic dimensions fixed by `--input-shape` or defaulted when batch-like.

use ipuc_ir::Type;

use super::constants::element_type;
use super::ImportError;
use crate::onnx::{Dim, Graph, ValueInfo, ValueType};

/// Whether an unresolved dimension is batch-like and defaults to the batch
/// (1 unless `--batch` says): the leading dimension of an input, or any
/// dimension whose name mentions `batch`.
fn is_batch_like(index: usize, dim: &Dim) -> bool {
    index == 0 || matches!(dim, Dim::Symbolic(name) if name.to_ascii_lowercase().contains("batch"))
}

fn describe(dim: &Dim) -> String {
    match dim {
        Dim::Fixed(n) => n.to_string(),
        Dim::Symbolic(name) => format!("`{name}`"),
        Dim::Unknown => "?".to_string(),
    }
}

fn shape_text(dims: &[i64]) -> String {
    dims.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// The static type of every runtime input, in graph order, checked against
/// `overrides` (which must each name a runtime input); batch-like symbolic
/// dimensions they leave take `batch` (1 if `None`; given above 1, at
/// least one must, else the model's batch is not the option's to set).
pub(crate) fn resolve_input_types(
    graph: &Graph,
    overrides: &[(String, Vec<i64>)],
    batch: Option<i64>,
) -> Result<Vec<(String, Type)>, ImportError> {
    let runtime: Vec<&ValueInfo> = graph.runtime_inputs().collect();
    for (name, _) in overrides {
        if !runtime.iter().any(|v| &v.name == name) {
            let names: Vec<String> = runtime.iter().map(|v| format!("`{}`", v.name)).collect();
            return Err(ImportError::Input {
                input: name.clone(),
                detail: format!(
                    "--input-shape names no graph input (the model's inputs: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            });
        }
    }
    if let Some(b) = batch.filter(|&b| b < 1) {
        return Err(ImportError::Input {
            input: String::new(),
            detail: format!("--batch {b}: the batch must be at least 1"),
        });
    }
    let mut batched = false;
    let types = runtime
        .iter()
        .map(|info| {
            let given = overrides
                .iter()
                .rev()
                .find(|(n, _)| *n == info.name)
                .map(|(_, s)| s.as_slice());
            let (ty, took) = input_type(info, given, batch.unwrap_or(1))?;
            batched |= took;
            Ok((info.name.clone(), ty))
        })
        .collect::<Result<Vec<_>, ImportError>>()?;
    match batch {
        Some(b) if !batched && b != 1 => Err(ImportError::Input {
            input: runtime.first().map_or_else(String::new, |v| v.name.clone()),
            detail: format!(
                "--batch {b}: no input has a symbolic batch dimension left to set (the model fixes its inputs' shapes, or --input-shape gives them); give the shapes with --input-shape instead"
            ),
        }),
        _ => Ok(types),
    }
}

/// `info`'s static type, and whether a batch-like dimension took `batch`.
fn input_type(
    info: &ValueInfo,
    given: Option<&[i64]>,
    batch: i64,
) -> Result<(Type, bool), ImportError> {
    let err = |detail: String| ImportError::Input {
        input: info.name.clone(),
        detail,
    };
    let (kind, declared) = match &info.ty {
        ValueType::Tensor { kind, shape } => (*kind, shape.as_deref()),
        ValueType::Unsupported(what) => {
            return Err(err(format!(
                "has type {what}; ipuc imports tensor inputs only"
            )))
        }
        ValueType::Unspecified => {
            return Err(err(
                "has no declared type; ipuc needs the element type".into()
            ))
        }
    };
    let element = element_type(kind);
    if let Some(given) = given {
        if let Some(&d) = given.iter().find(|&&d| d < 0) {
            return Err(err(format!(
                "--input-shape {}: dimension {d} is negative",
                shape_text(given)
            )));
        }
        if let Some(declared) = declared {
            if declared.len() != given.len() {
                return Err(err(format!(
                    "--input-shape {} has rank {}, but the input is declared with rank {}",
                    shape_text(given),
                    given.len(),
                    declared.len()
                )));
            }
            for (i, (d, &g)) in declared.iter().zip(given).enumerate() {
                if let Dim::Fixed(n) = d {
                    if *n as i64 != g {
                        return Err(err(format!(
                            "--input-shape {} sets dimension {i} to {g}, but the model fixes it to {n}",
                            shape_text(given)
                        )));
                    }
                }
            }
        }
        return Ok((Type::tensor(given, element), false));
    }
    let Some(declared) = declared else {
        return Err(err(
            "has no declared shape; give one with --input-shape NAME=D0xD1x...".into(),
        ));
    };
    let mut shape = Vec::with_capacity(declared.len());
    let mut took = false;
    for (i, d) in declared.iter().enumerate() {
        shape.push(match d {
            Dim::Fixed(n) => *n as i64,
            d if is_batch_like(i, d) => {
                took = true;
                batch
            }
            d => {
                return Err(err(format!(
                    "dimension {i} ({}) is not static; fix it with --input-shape {}={}",
                    describe(d),
                    info.name,
                    declared
                        .iter()
                        .enumerate()
                        .map(|(j, d)| match d {
                            Dim::Fixed(n) => n.to_string(),
                            _ if j == i => "N".to_string(),
                            _ if is_batch_like(j, d) => "1".to_string(),
                            _ => "N".to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("x")
                )))
            }
        });
    }
    Ok((Type::tensor(&shape, element), took))
}
