//! Binding a model's runtime inputs to data before import, as onnxruntime
//! binds them at run time: ipuc compiles static shapes, so
//!
//! - every input fed at run time takes its shape from the data (dynamic
//!   dimensions such as `batch` become the data's sizes), and
//! - an input whose *value* fixes a shape (a `Reshape` target, `Slice`
//!   bounds, `Range` limits, reduction axes, ...) becomes a constant holding
//!   the data, exactly as if the model had been exported with it.
//!
//! Which inputs need their value is found by walking back from the operator
//! inputs the importer reads as constants ([`value_positions`]) through the
//! nodes that compute them (and the outer-scope values their subgraphs
//! read); the walk stops at inputs of which only the shape or type matters
//! (`Shape`, `Size`, `CastLike`'s target, ...).
//!
//! The data is checked against the graph's declared inputs first (count,
//! element types, ranks, fixed dimensions), so a wrong data set is an error
//! naming the input, not a failed run.

use std::collections::{HashMap, HashSet};

use super::ImportError;
use crate::onnx::{
    Dim, Graph, Initializer, Model, NamedTensor, ValueType, WeightRole, WeightSource,
};

/// The inputs of `op_type` that the importer reads as constant values (a
/// shape, axes, sizes, bounds, counts), by position. Positions past a node's
/// inputs do not matter, so older opsets that take these as attributes need
/// no entry of their own.
pub fn value_positions(op_type: &str) -> &'static [usize] {
    match op_type {
        "ConstantOfShape" => &[0],
        "Reshape" | "Expand" | "Tile" | "Split" | "Squeeze" | "Unsqueeze" | "Upsample" | "TopK"
        | "OneHot" | "Trilu" | "CumSum" | "CumProd" | "Compress" | "CenterCropPad"
        | "AffineGrid" => &[1],
        "MaxUnpool" => &[1, 2],
        "ReduceMax" | "ReduceMean" | "ReduceSum" | "ReduceMin" | "ReduceProd" | "ReduceL1"
        | "ReduceL2" | "ReduceLogSum" | "ReduceLogSumExp" | "ReduceSumSquare" => &[1],
        "Range" => &[0, 1, 2],
        "RNN" | "GRU" | "LSTM" => &[4],
        "ReverseSequence" => &[1],
        "TensorScatter" => &[2],
        "Slice" => &[1, 2, 3, 4],
        "Pad" => &[1, 2, 3],
        "Resize" => &[1, 2, 3],
        "Dropout" => &[1, 2],
        "Col2Im" => &[1, 2],
        "DFT" => &[1, 2],
        "STFT" => &[1, 3],
        "HannWindow" | "HammingWindow" | "BlackmanWindow" => &[0],
        "MelWeightMatrix" => &[0, 1, 2, 3, 4],
        "If" => &[0],
        "Loop" => &[0, 1],
        _ => &[],
    }
}

/// The inputs of `op_type` of which only the shape or element type is read.
fn shape_only_positions(op_type: &str) -> &'static [usize] {
    match op_type {
        "Shape" | "Size" | "EyeLike" | "RandomUniformLike" | "RandomNormalLike" => &[0],
        "CastLike" => &[1],
        _ => &[],
    }
}

/// The runtime inputs of `graph` whose values the importer needs (see the
/// module documentation).
pub fn value_inputs(graph: &Graph) -> HashSet<String> {
    let producer: HashMap<&str, usize> = graph
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.outputs.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let runtime: HashSet<&str> = graph.runtime_inputs().map(|v| v.name.as_str()).collect();
    let mut needed = HashSet::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<&str> = graph
        .nodes
        .iter()
        .flat_map(|n| {
            value_positions(&n.op_type)
                .iter()
                .filter_map(|&i| n.input(i))
        })
        .collect();
    while let Some(name) = stack.pop() {
        if !seen.insert(name) {
            continue;
        }
        if runtime.contains(name) {
            needed.insert(name.to_string());
        }
        if let Some(&i) = producer.get(name) {
            let node = &graph.nodes[i];
            let skip = shape_only_positions(&node.op_type);
            stack.extend(
                node.inputs
                    .iter()
                    .enumerate()
                    .filter(|(k, n)| !n.is_empty() && !skip.contains(k))
                    .map(|(_, n)| n.as_str()),
            );
            // An `If` branch or a loop body computes the node's outputs
            // from outer-scope values too.
            let mut subgraphs: Vec<&Graph> = node.subgraphs().collect();
            while let Some(g) = subgraphs.pop() {
                for n in &g.nodes {
                    stack.extend(
                        n.inputs
                            .iter()
                            .filter(|i| !i.is_empty())
                            .map(String::as_str),
                    );
                    subgraphs.extend(n.subgraphs());
                }
            }
        }
    }
    needed
}

/// What [`bind_inputs`] decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundInputs {
    /// The static shape of every input still fed at run time, by name (for
    /// [`super::ImportOptions::input_shapes`]).
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// For each input still fed at run time, in the imported function's
    /// parameter order, its position in the data.
    pub fed: Vec<usize>,
    /// The inputs that became constants.
    pub constants: Vec<String>,
}

/// Pairs `data` with the runtime inputs of `graph`: by name when every
/// tensor is named and the names are the inputs', else by position.
/// Returns, per runtime input in order, its position in `data`.
pub fn match_inputs(graph: &Graph, data: &[NamedTensor]) -> Result<Vec<usize>, ImportError> {
    let inputs: Vec<&str> = graph.runtime_inputs().map(|v| v.name.as_str()).collect();
    if inputs.len() != data.len() {
        return Err(ImportError::Model(format!(
            "the data holds {} input tensor(s), but the model takes {} ({}); give one \
             input_K.pb per model input",
            data.len(),
            inputs.len(),
            inputs
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let by_name: Option<Vec<usize>> = inputs
        .iter()
        .map(|name| data.iter().position(|t| t.name == *name))
        .collect();
    Ok(by_name.unwrap_or_else(|| (0..inputs.len()).collect()))
}

/// Checks `data` against the declared type of the graph input `name`.
fn check_declared(graph: &Graph, name: &str, data: &NamedTensor) -> Result<(), ImportError> {
    let err = |detail: String| ImportError::Input {
        input: name.to_string(),
        detail,
    };
    let Some(info) = graph.inputs.iter().find(|v| v.name == name) else {
        return Ok(());
    };
    let (kind, shape) = match &info.ty {
        ValueType::Tensor { kind, shape } => (*kind, shape.as_deref()),
        ValueType::Unsupported(what) => {
            return Err(err(format!(
                "has type {what}; ipuc imports tensor inputs only"
            )))
        }
        ValueType::Unspecified => return Ok(()),
    };
    let t = &data.tensor;
    if t.kind != kind {
        return Err(err(format!(
            "is declared with element type {kind}, but the data holds {}",
            t.kind
        )));
    }
    let Some(shape) = shape else {
        return Ok(());
    };
    if shape.len() != t.dims.len() {
        return Err(err(format!(
            "is declared with rank {}, but the data has shape {:?}",
            shape.len(),
            t.dims
        )));
    }
    for (i, (d, &n)) in shape.iter().zip(&t.dims).enumerate() {
        if let Dim::Fixed(f) = d {
            if *f != n {
                return Err(err(format!(
                    "dimension {i} is fixed to {f} by the model, but the data has shape {:?}",
                    t.dims
                )));
            }
        }
    }
    Ok(())
}

/// Binds the runtime inputs of `model` to `data` (one tensor per runtime
/// input, see [`match_inputs`]): inputs in [`value_inputs`] become
/// initializers holding their data, every other input gets the data's shape.
/// The data is checked against the declared input types first.
pub fn bind_inputs(model: &mut Model, data: &[NamedTensor]) -> Result<BoundInputs, ImportError> {
    let order = match_inputs(&model.graph, data)?;
    let names: Vec<String> = model
        .graph
        .runtime_inputs()
        .map(|v| v.name.clone())
        .collect();
    for (name, &k) in names.iter().zip(&order) {
        check_declared(&model.graph, name, &data[k])?;
    }
    let values = value_inputs(&model.graph);
    let mut bound = BoundInputs::default();
    for (name, &k) in names.into_iter().zip(&order) {
        let tensor = &data[k].tensor;
        if values.contains(&name) {
            model.graph.initializers.push(Initializer {
                name: name.clone(),
                tensor: tensor.clone(),
                source: WeightSource::Inline,
                role: WeightRole::default(),
            });
            bound.constants.push(name);
        } else {
            let dims = tensor.dims.iter().map(|&d| d as i64).collect();
            bound.input_shapes.push((name, dims));
            bound.fed.push(k);
        }
    }
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::{Node, ValueInfo};
    use ipuc_ir::numeric::ElementKind;

    fn node(op: &str, inputs: &[&str], output: &str) -> Node {
        Node {
            name: output.to_string(),
            op_type: op.to_string(),
            domain: String::new(),
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            outputs: vec![output.to_string()],
            attributes: Vec::new(),
        }
    }

    fn input(name: &str) -> ValueInfo {
        ValueInfo {
            name: name.to_string(),
            ty: ValueType::Tensor {
                kind: ElementKind::I64,
                shape: None,
            },
        }
    }

    #[test]
    fn value_inputs_follow_computations_but_not_shapes() {
        // reshape(x, cast(n) + shape(y)): n's value is needed, y's only its shape.
        let graph = Graph {
            inputs: ["x", "y", "n"].map(input).to_vec(),
            nodes: vec![
                node("Cast", &["n"], "n2"),
                node("Shape", &["y"], "sy"),
                node("Add", &["n2", "sy"], "target"),
                node("Reshape", &["x", "target"], "out"),
            ],
            ..Graph::default()
        };
        let needed = value_inputs(&graph);
        assert_eq!(needed, HashSet::from(["n".to_string()]));
    }
}
