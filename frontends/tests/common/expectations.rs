//! The node-test harnesses' shared parts: the numeric comparison with the
//! ONNX reference outputs, and the expectations file (`<test> PASS` or
//! `<test> FAIL <reason>` per line) that pins every result.
//!
//! A harness fails when any result differs from its expectations file in
//! either direction, so regressions and newly passing tests are both noticed.
//! `IPUC_BLESS=1` rewrites the file from the results: the reason of a
//! failing test is its error, except hand-written reasons (they start with
//! [`BY_DESIGN`]), which stay while the test still fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ipuc_frontends::onnx::{NamedTensor, Tensor};
use ipuc_runtime::reference::HostTensor;

/// Compares an output with its expected value (floats: rtol 1e-3 / atol 1e-5,
/// NaN where NaN is expected; integers, bools and floats of at most 8 bits:
/// exact bytes).
/// `Err` says how it differs.
pub fn compare(name: &str, got: &HostTensor, want: &Tensor) -> Result<(), String> {
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
    let exact = !got.kind.is_float() || got.kind.bit_width() <= 8;
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

/// Compares each expected output with the result at its position; a
/// node may return more outputs than the test expects (optional ones it
/// computes anyway) only where `extra_allowed`.
pub fn compare_outputs(
    results: &[HostTensor],
    outputs: &[NamedTensor],
    extra_allowed: bool,
) -> Result<(), String> {
    if results.len() < outputs.len() || (!extra_allowed && results.len() != outputs.len()) {
        return Err(format!(
            "{} outputs, expected {}",
            results.len(),
            outputs.len()
        ));
    }
    for (i, (got, want)) in results.iter().zip(outputs).enumerate() {
        compare(&format!("output {i}"), got, &want.tensor)?;
    }
    Ok(())
}

/// The test folders of `suite` (a folder of `../shared`, e.g.
/// `onnx-node-tests`), sorted by name.
pub fn node_test_dirs(suite: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(suite);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no node tests under {}", root.display());
    dirs
}

/// `test name -> None (PASS) | Some(reason)`.
fn read_expectations(path: &Path) -> BTreeMap<String, Option<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
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

/// The prefix of a hand-written reason: what ipuc deliberately does not
/// support, kept by `IPUC_BLESS=1` (other reasons are the errors themselves,
/// rewritten on every bless so that they never go stale).
pub const BY_DESIGN: &str = "by design:";

/// Checks `results` against the expectations file `file_name` (in
/// `frontends/tests/`, first line `header`), or rewrites it under
/// `IPUC_BLESS=1`. Panics listing every mismatch.
pub fn check_expectations(
    file_name: &str,
    header: &str,
    results: &BTreeMap<String, Result<(), String>>,
) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(file_name);
    let expected = read_expectations(&path);
    if std::env::var_os("IPUC_BLESS").is_some() {
        let mut text = format!("# {header}\n");
        for (name, result) in results {
            match result {
                Ok(()) => text.push_str(&format!("{name} PASS\n")),
                Err(actual) => {
                    let reason = expected
                        .get(name)
                        .cloned()
                        .flatten()
                        .filter(|r| r.starts_with(BY_DESIGN))
                        .unwrap_or_else(|| {
                            // Paths as the README writes them, the same in every checkout.
                            let shared = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/");
                            actual.replace(shared, "../shared/").replace('\n', " ")
                        });
                    text.push_str(&format!("{name} FAIL {reason}\n"));
                }
            }
        }
        std::fs::write(&path, text).unwrap();
        return;
    }
    let mut mismatches = Vec::new();
    for (name, result) in results {
        match (expected.get(name), result) {
            (Some(None), Ok(())) | (Some(Some(_)), Err(_)) => {}
            (None, _) => mismatches.push(format!("{name}: not in the expectations file")),
            (Some(None), Err(e)) => mismatches.push(format!("{name}: expected PASS, failed: {e}")),
            (Some(Some(_)), Ok(())) => {
                mismatches.push(format!("{name}: expected FAIL, now passes"))
            }
        }
    }
    for name in expected.keys().filter(|n| !results.contains_key(*n)) {
        mismatches.push(format!("{name}: listed, but there is no such test folder"));
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es) with {file_name} (IPUC_BLESS=1 to update):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Runs `run_test` on one folder; a panic is a failure that says so (and is
/// never expected: the expectations file must not list panics as reasons).
fn run_caught(run_test: fn(&Path) -> Result<(), String>, dir: &Path) -> Result<(), String> {
    std::panic::catch_unwind(|| run_test(dir)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        Err(format!("PANIC: {message}"))
    })
}

/// Runs `run_test` on every folder of `suite` (`IPUC_NODE_TRACE` prints each
/// folder first; `IPUC_NODE_FILTER=substring` runs only the matching ones and
/// checks nothing), reports the pass count under `label`, and checks the
/// results against the expectations file. A panic in any test fails the
/// harness whatever the expectations say.
pub fn run_node_tests(
    label: &str,
    suite: &str,
    file_name: &str,
    header: &str,
    run_test: fn(&Path) -> Result<(), String>,
) {
    let filter = std::env::var("IPUC_NODE_FILTER").ok();
    let results: BTreeMap<String, Result<(), String>> = node_test_dirs(suite)
        .iter()
        .filter(|d| {
            filter
                .as_deref()
                .is_none_or(|f| d.file_name().unwrap().to_string_lossy().contains(f))
        })
        .map(|d| {
            if std::env::var_os("IPUC_NODE_TRACE").is_some() {
                eprintln!("running {}", d.display());
            }
            (
                d.file_name().unwrap().to_string_lossy().into_owned(),
                run_caught(run_test, d),
            )
        })
        .collect();
    if filter.is_some() {
        for (name, result) in &results {
            match result {
                Ok(()) => eprintln!("{name} PASS"),
                Err(e) => eprintln!("{name} FAIL {e}"),
            }
        }
        return;
    }
    let panics: Vec<String> = results
        .iter()
        .filter_map(|(name, r)| match r {
            Err(e) if e.starts_with("PANIC") => Some(format!("{name}: {e}")),
            _ => None,
        })
        .collect();
    let passed = results.values().filter(|r| r.is_ok()).count();
    eprintln!(
        "{label}: {passed} passed, {} failed (of {})",
        results.len() - passed,
        results.len()
    );
    check_expectations(file_name, header, &results);
    assert!(
        panics.is_empty(),
        "{} test(s) panicked (bad input must give an error, never a panic):\n{}",
        panics.len(),
        panics.join("\n")
    );
}
