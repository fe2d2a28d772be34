//! Runs the runtime's reference kernels on the ONNX backend node tests
//! (`../shared/onnx-node-tests`): each folder holds a one-node `model.onnx` and
//! `test_data_set_0/{input,output}_K.pb`. The node and its attributes are decoded
//! by this crate's ONNX loader, mapped onto a kernel, and the outputs compared
//! (floats: rtol 1e-3 / atol 1e-5, NaN where NaN is expected; integers, bools and
//! 8-bit floats: exact).
//!
//! `onnx_node_tests.expected` lists every test with PASS or FAIL and a reason. The
//! test fails when a result differs from that list either way, so regressions and
//! newly passing tests are both noticed. `IPUC_BLESS=1` rewrites the statuses
//! (keeping hand-written reasons of tests that still fail).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ipuc_frontends::onnx::{read_test_data_set, Attribute, LoadOptions, Model, Node, Tensor};
use ipuc_runtime::reference::{self as k, BinaryOp, HostTensor, UnaryOp};

fn host(t: &Tensor) -> HostTensor {
    HostTensor::new(t.kind, t.dims.clone(), Arc::from(&t.data[..]))
}

/// Runs one node on its inputs (`None` for omitted optional inputs).
fn run_node(
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
        "Add" => binary(BinaryOp::Add),
        "Sub" => binary(BinaryOp::Sub),
        "Mul" => binary(BinaryOp::Mul),
        "Div" => binary(BinaryOp::Div),
        "Pow" => binary(BinaryOp::Pow),
        "Mod" => binary(BinaryOp::Mod {
            fmod: int("fmod", 0)? != 0,
        }),
        "Equal" => binary(BinaryOp::Equal),
        "Less" => binary(BinaryOp::Less),
        "Greater" => binary(BinaryOp::Greater),
        "Max" | "Min" => {
            let operands: Vec<&HostTensor> = inputs.iter().flatten().collect();
            one(if node.op_type == "Max" {
                k::max(&operands)
            } else {
                k::min(&operands)
            })
        }
        "Sqrt" => unary(UnaryOp::Sqrt),
        "Reciprocal" => unary(UnaryOp::Reciprocal),
        "Exp" => unary(UnaryOp::Exp),
        "Log" => unary(UnaryOp::Log),
        "Tanh" => unary(UnaryOp::Tanh),
        "Erf" => unary(UnaryOp::Erf),
        "Neg" => unary(UnaryOp::Neg),
        "Abs" => unary(UnaryOp::Abs),
        "Relu" => unary(UnaryOp::Relu),
        "Sigmoid" => unary(UnaryOp::Sigmoid),
        "Gelu" => match node
            .string_attr("approximate", "none")
            .map_err(|e| e.to_string())?
        {
            "none" => unary(UnaryOp::Gelu),
            "tanh" => unary(UnaryOp::GeluTanh),
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
                strides,
                pads,
                dilations,
                groups: int("group", 1)? as usize,
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
                "ReduceMean" => k::Reduction::Mean,
                "ReduceSum" => k::Reduction::Sum,
                _ => k::Reduction::Max,
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

/// Compares an output with its expected value; `Err` says how it differs.
fn compare(name: &str, got: &HostTensor, want: &Tensor) -> Result<(), String> {
    if got.kind != want.kind {
        return Err(format!(
            "{name}: element type {} but expected {}",
            got.kind, want.kind
        ));
    }
    if got.shape != want.dims {
        return Err(format!(
            "{name}: shape {:?} but expected {:?}",
            got.shape, want.dims
        ));
    }
    let exact = !got.kind.is_float() || got.kind.float8_format().is_some();
    if exact {
        return match got
            .data
            .iter()
            .zip(want.data.iter())
            .position(|(a, b)| a != b)
        {
            None => Ok(()),
            Some(i) => Err(format!(
                "{name}: byte {i} is {:#04x}, expected {:#04x}",
                got.data[i], want.data[i]
            )),
        };
    }
    for (i, (a, b)) in got
        .to_f64_vec()
        .into_iter()
        .zip(want.to_f64_vec())
        .enumerate()
    {
        let ok = if b.is_nan() {
            a.is_nan()
        } else {
            a == b || (a - b).abs() <= 1e-5 + 1e-3 * b.abs()
        };
        if !ok {
            return Err(format!("{name}: element {i} is {a}, expected {b}"));
        }
    }
    Ok(())
}

fn run_test(dir: &Path) -> Result<(), String> {
    let model =
        Model::load(&dir.join("model.onnx"), &LoadOptions::default()).map_err(|e| e.to_string())?;
    let graph = &model.graph;
    let [node] = graph.nodes.as_slice() else {
        return Err(format!("expected one node, found {}", graph.nodes.len()));
    };
    let (inputs, outputs) =
        read_test_data_set(&dir.join("test_data_set_0")).map_err(|e| e.to_string())?;
    let mut values: BTreeMap<&str, HostTensor> = BTreeMap::new();
    for init in &graph.initializers {
        values.insert(&init.name, host(&init.tensor));
    }
    for (info, data) in graph.runtime_inputs().zip(&inputs) {
        values.insert(&info.name, host(&data.tensor));
    }
    let node_inputs: Vec<Option<HostTensor>> = node
        .inputs
        .iter()
        .map(|name| {
            if name.is_empty() {
                None
            } else {
                values.get(name.as_str()).cloned()
            }
        })
        .collect();
    let opset = model.opset_version("").unwrap_or(1);
    let results = run_node(node, opset, &node_inputs)?;
    if results.len() < outputs.len() {
        return Err(format!(
            "{} outputs, expected {}",
            results.len(),
            outputs.len()
        ));
    }
    for (i, (got, want)) in results.iter().zip(&outputs).enumerate() {
        compare(&format!("output {i}"), got, &want.tensor)?;
    }
    Ok(())
}

fn expectations_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx_node_tests.expected")
}

/// `test name -> None (PASS) | Some(reason)`.
fn read_expectations() -> BTreeMap<String, Option<String>> {
    let text = std::fs::read_to_string(expectations_path()).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.splitn(3, char::is_whitespace);
            let name = parts.next().unwrap_or("").to_string();
            let status = parts.next().unwrap_or("");
            let reason = parts.next().unwrap_or("").trim().to_string();
            (name, if status == "PASS" { None } else { Some(reason) })
        })
        .collect()
}

#[test]
fn onnx_backend_node_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/onnx-node-tests");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no node tests under {}", root.display());
    let results: BTreeMap<String, Result<(), String>> = dirs
        .iter()
        .map(|d| {
            tracing_free_trace(d);
            (
                d.file_name().unwrap().to_string_lossy().into_owned(),
                run_test(d),
            )
        })
        .collect();
    let passed = results.values().filter(|r| r.is_ok()).count();
    eprintln!(
        "ONNX node tests at kernel level: {passed} passed, {} failed (of {})",
        results.len() - passed,
        results.len()
    );

    let expected = read_expectations();
    if std::env::var_os("IPUC_BLESS").is_some() {
        let mut text = String::from("# ONNX backend node tests run by tests/onnx_node_tests.rs: PASS, or FAIL with the reason.\n");
        for (name, result) in &results {
            match result {
                Ok(()) => text.push_str(&format!("{name} PASS\n")),
                Err(actual) => {
                    let reason = expected
                        .get(name)
                        .cloned()
                        .flatten()
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| actual.clone());
                    text.push_str(&format!("{name} FAIL {reason}\n"));
                }
            }
        }
        std::fs::write(expectations_path(), text).unwrap();
        return;
    }
    let mut mismatches = Vec::new();
    for (name, result) in &results {
        match (expected.get(name), result) {
            (Some(None), Ok(())) | (Some(Some(_)), Err(_)) => {}
            (None, _) => mismatches.push(format!("{name}: not in the expectations file")),
            (Some(None), Err(e)) => mismatches.push(format!("{name}: expected PASS, failed: {e}")),
            (Some(Some(_)), Ok(())) => {
                mismatches.push(format!("{name}: expected FAIL, now passes"))
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es) with onnx_node_tests.expected (IPUC_BLESS=1 to update):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
fn tracing_free_trace(d: &Path) {
    if std::env::var_os("IPUC_NODE_TRACE").is_some() {
        eprintln!("running {}", d.display());
    }
}
