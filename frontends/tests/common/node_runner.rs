//! Maps one decoded ONNX node onto the runtime's reference kernels: the shared
//! dispatch of the node-test harness and the whole-model check. (The real `nn`
//! interpreter will live in the runtime and walk IR; this is test scaffolding over
//! the ONNX view.)

use std::collections::HashMap;
use std::sync::Arc;

use ipuc_frontends::onnx::{Attribute, Graph, NamedTensor, Node, Tensor};
use ipuc_runtime::reference::{
    self as k, BinaryKind, BinaryOp, CompareKind, GeluApproximation, HostTensor, UnaryKind, UnaryOp,
};

/// A runtime host tensor sharing nothing with the loader's tensor (one copy).
pub fn host(t: &Tensor) -> HostTensor {
    HostTensor::new(t.kind, t.dims.clone(), Arc::from(&t.data[..]))
}

/// The values a graph starts from: its initializers, then its runtime
/// inputs bound in order to `inputs` (a test data set's).
pub fn start_values<'g>(graph: &'g Graph, inputs: &[NamedTensor]) -> HashMap<&'g str, HostTensor> {
    let mut values = HashMap::new();
    for init in &graph.initializers {
        values.insert(init.name.as_str(), host(&init.tensor));
    }
    for (info, data) in graph.runtime_inputs().zip(inputs) {
        values.insert(info.name.as_str(), host(&data.tensor));
    }
    values
}

/// The inputs of `node` among `values`: `None` for an omitted optional
/// input (and for one not computed, which [`run_node`] reports).
pub fn node_inputs(node: &Node, values: &HashMap<&str, HostTensor>) -> Vec<Option<HostTensor>> {
    node.inputs
        .iter()
        .map(|name| {
            if name.is_empty() {
                None
            } else {
                values.get(name.as_str()).cloned()
            }
        })
        .collect()
}

/// Runs one node on its inputs (`None` for omitted optional inputs).
pub fn run_node(
    node: &Node,
    opset: i64,
    inputs: &[Option<HostTensor>],
) -> Result<Vec<HostTensor>, String> {
    let input = |i: usize| {
        inputs
            .get(i)
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("missing input {i}"))
    };
    let ints = |i: usize| -> Option<Vec<i64>> {
        inputs
            .get(i)
            .and_then(Option::as_ref)
            .map(HostTensor::to_i64_vec)
    };
    let int = |name: &str, default: i64| node.int_attr(name, default).map_err(|e| e.to_string());
    let attr_ints = |name: &str| {
        node.ints_attr(name)
            .map(|v| v.map(<[i64]>::to_vec))
            .map_err(|e| e.to_string())
    };
    let e = |err: k::KernelError| err.to_string();
    let one = |t: Result<HostTensor, k::KernelError>| t.map(|t| vec![t]).map_err(e);
    let binary = |op: BinaryOp| one(k::binary(op, input(0)?, input(1)?));
    let unary = |op: UnaryOp| one(k::unary(op, input(0)?));
    // Axes from the input (newer opsets) or the attribute (older ones).
    let axes_input_or_attr = |index: usize| -> Result<Option<Vec<i64>>, String> {
        match ints(index) {
            Some(a) => Ok(Some(a)),
            None => attr_ints("axes"),
        }
    };
    match node.op_type.as_str() {
        "Add" => binary(BinaryKind::Add.into()),
        "Sub" => binary(BinaryKind::Sub.into()),
        "Mul" => binary(BinaryKind::Mul.into()),
        "Div" => binary(BinaryKind::Div.into()),
        "Pow" => binary(BinaryKind::Pow.into()),
        "Mod" => binary(BinaryOp::modulo(int("fmod", 0)? != 0)),
        "Equal" => binary(CompareKind::Equal.into()),
        "Less" => binary(CompareKind::Less.into()),
        "Greater" => binary(CompareKind::Greater.into()),
        "Max" | "Min" => {
            let operands: Vec<&HostTensor> = inputs.iter().flatten().collect();
            one(if node.op_type == "Max" {
                k::max(&operands)
            } else {
                k::min(&operands)
            })
        }
        "Sqrt" => unary(UnaryKind::Sqrt.into()),
        "Reciprocal" => unary(UnaryKind::Reciprocal.into()),
        "Exp" => unary(UnaryKind::Exp.into()),
        "Log" => unary(UnaryKind::Log.into()),
        "Tanh" => unary(UnaryKind::Tanh.into()),
        "Erf" => unary(UnaryKind::Erf.into()),
        "Neg" => unary(UnaryKind::Neg.into()),
        "Abs" => unary(UnaryKind::Abs.into()),
        "Relu" => unary(UnaryKind::Relu.into()),
        "Sigmoid" => unary(UnaryKind::Sigmoid.into()),
        "Gelu" => match node
            .string_attr("approximate", "none")
            .map_err(|e| e.to_string())?
        {
            "none" => unary(UnaryOp::Gelu(GeluApproximation::None)),
            "tanh" => unary(UnaryOp::Gelu(GeluApproximation::Tanh)),
            other => Err(format!("unknown approximate `{other}`")),
        },
        "Where" => one(k::where_(input(0)?, input(1)?, input(2)?)),
        "Cast" => {
            let to = ipuc_frontends::onnx::element_kind_of(int("to", 0)? as i32)
                .ok_or("unsupported `to` type")?;
            Ok(vec![k::cast(input(0)?, to, int("saturate", 1)? != 0)])
        }
        "Identity" => Ok(vec![input(0)?.clone()]),
        "Constant" => match node.attributes.first().map(|(n, a)| (n.as_str(), a)) {
            Some(("value", Attribute::Tensor(t))) => Ok(vec![host(t)]),
            Some(("value_float", Attribute::Float(v))) => {
                Ok(vec![HostTensor::from_f32(vec![], &[*v])])
            }
            Some(("value_int", Attribute::Int(v))) => Ok(vec![HostTensor::from_i64(vec![], &[*v])]),
            Some(("value_floats", Attribute::Floats(v))) => {
                Ok(vec![HostTensor::from_f32(vec![v.len()], v)])
            }
            Some(("value_ints", Attribute::Ints(v))) => {
                Ok(vec![HostTensor::from_i64(vec![v.len()], v)])
            }
            other => Err(format!("unsupported Constant attribute {other:?}")),
        },
        "MatMul" => one(k::matmul(input(0)?, input(1)?)),
        "Gemm" => {
            let params = k::GemmParams {
                alpha: node.float_attr("alpha", 1.0).map_err(|e| e.to_string())?,
                beta: node.float_attr("beta", 1.0).map_err(|e| e.to_string())?,
                trans_a: int("transA", 0)? != 0,
                trans_b: int("transB", 0)? != 0,
            };
            one(k::gemm(
                input(0)?,
                input(1)?,
                inputs.get(2).and_then(Option::as_ref),
                params,
            ))
        }
        "Conv" => {
            let (x, w) = (input(0)?, input(1)?);
            if x.rank() != 4 {
                return Err(format!("only 2-D Conv, got input rank {}", x.rank()));
            }
            let pair = |name: &str| -> Result<[usize; 2], String> {
                Ok(match attr_ints(name)? {
                    Some(v) if v.len() == 2 => [v[0] as usize, v[1] as usize],
                    Some(v) => return Err(format!("{name} {v:?} is not 2-D")),
                    None => [1, 1],
                })
            };
            let (strides, dilations) = (pair("strides")?, pair("dilations")?);
            let explicit = match attr_ints("pads")? {
                Some(p) if p.len() == 4 => {
                    [p[0] as usize, p[1] as usize, p[2] as usize, p[3] as usize]
                }
                Some(p) => return Err(format!("pads {p:?} is not 2-D")),
                None => [0; 4],
            };
            let mode = k::AutoPad::parse(
                node.string_attr("auto_pad", "NOTSET")
                    .map_err(|e| e.to_string())?,
            )
            .map_err(e)?;
            let pads = k::resolve_pads(
                mode,
                [x.shape[2], x.shape[3]],
                [w.shape[2], w.shape[3]],
                strides,
                dilations,
                explicit,
            );
            let params = k::Conv2dParams {
                strides: strides.map(|x| x as i64),
                pads: pads.map(|x| x as i64),
                dilations: dilations.map(|x| x as i64),
                groups: int("group", 1)?,
            };
            one(k::conv2d(
                x,
                w,
                inputs.get(2).and_then(Option::as_ref),
                &params,
            ))
        }
        "Reshape" => one(k::reshape(
            input(0)?,
            &ints(1).ok_or("missing shape")?,
            int("allowzero", 0)? != 0,
        )),
        "Transpose" => one(k::transpose(input(0)?, attr_ints("perm")?.as_deref())),
        "Concat" => one(k::concat(
            &inputs.iter().flatten().collect::<Vec<_>>(),
            int("axis", 0)?,
        )),
        "Split" => {
            let sizes = if opset >= 13 {
                ints(1)
            } else {
                attr_ints("split")?
            };
            let count = match node.attribute("num_outputs") {
                Some(_) => int("num_outputs", 0)? as usize,
                None => node.outputs.len(),
            };
            k::split(input(0)?, int("axis", 0)?, sizes.as_deref(), Some(count)).map_err(e)
        }
        "Slice" => {
            let (starts, ends) = (
                ints(1).ok_or("missing starts")?,
                ints(2).ok_or("missing ends")?,
            );
            one(k::slice(
                input(0)?,
                &starts,
                &ends,
                ints(3).as_deref(),
                ints(4).as_deref(),
            ))
        }
        "Gather" => one(k::gather(input(0)?, input(1)?, int("axis", 0)?)),
        "Squeeze" => one(k::squeeze(input(0)?, axes_input_or_attr(1)?.as_deref())),
        "Unsqueeze" => one(k::unsqueeze(
            input(0)?,
            &axes_input_or_attr(1)?.ok_or("missing axes")?,
        )),
        "Expand" => one(k::expand(input(0)?, &ints(1).ok_or("missing shape")?)),
        "Tile" => one(k::tile(input(0)?, &ints(1).ok_or("missing repeats")?)),
        "Flatten" => one(k::flatten(input(0)?, int("axis", 1)?)),
        "ConstantOfShape" => {
            let value = node
                .tensor_attr("value")
                .map_err(|e| e.to_string())?
                .map(host);
            one(k::constant_of_shape(
                &ints(0).ok_or("missing shape")?,
                value.as_ref(),
            ))
        }
        "Range" => one(k::range(input(0)?, input(1)?, input(2)?)),
        "Shape" => {
            let end = node.attribute("end").map(|_| int("end", 0)).transpose()?;
            Ok(vec![k::shape_of(input(0)?, int("start", 0)?, end)])
        }
        "ReduceMean" | "ReduceSum" | "ReduceMax" => {
            // Axes became an input in opset 13 (ReduceSum) and 18 (the others).
            let axes_as_input = opset >= 18 || (node.op_type == "ReduceSum" && opset >= 13);
            let axes = if axes_as_input {
                ints(1)
            } else {
                attr_ints("axes")?
            };
            let reduction = match node.op_type.as_str() {
                "ReduceMean" => k::ReduceKind::Mean,
                "ReduceSum" => k::ReduceKind::Sum,
                _ => k::ReduceKind::Max,
            };
            one(k::reduce(
                input(0)?,
                reduction,
                axes.as_deref(),
                int("keepdims", 1)? != 0,
                int("noop_with_empty_axes", 0)? != 0,
            ))
        }
        "Softmax" => {
            let x = input(0)?;
            if opset >= 13 {
                one(k::softmax(x, int("axis", -1)?))
            } else {
                // Before opset 13: flatten to 2-D at `axis`, softmax each row.
                let flat = k::flatten(x, int("axis", 1)?).map_err(e)?;
                Ok(vec![k::softmax(&flat, 1)
                    .map_err(e)?
                    .with_shape(x.shape.clone())])
            }
        }
        "LayerNormalization" => {
            let out = k::layer_normalization(
                input(0)?,
                input(1)?,
                inputs.get(2).and_then(Option::as_ref),
                int("axis", -1)?,
                node.float_attr("epsilon", 1e-5)
                    .map_err(|e| e.to_string())?,
            )
            .map_err(e)?;
            Ok(vec![out.y, out.mean, out.inv_std_dev])
        }
        other => Err(format!("no kernel for {other}")),
    }
}
