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

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::node_runner::{host, run_node};
use ipuc_frontends::onnx::{read_test_data_set, LoadOptions, Model, Tensor};
use ipuc_runtime::reference::HostTensor;

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
