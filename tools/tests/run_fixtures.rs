//! `ipu-run --device reference` on the shared SigLIP fixtures: import, run
//! on the host reference executor (the simulator is the default device),
//! and compare with the onnxruntime outputs stored with them (issue bar:
//! relative L2 error < 1e-5 and cosine > 0.99999 per output).

mod common;

use std::process::Command;

fn check_fixture(name: &str) {
    let Some(dir) = common::fixture_dir(name) else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(dir.join("model.onnx"))
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .args(["--device", "reference", "--json"])
        .output()
        .expect("run ipu-run");
    common::assert_matches_onnxruntime(name, &out);
    let (report, stdout) = common::passed_report(name, &out);
    assert_eq!(report["device"], "reference", "{name}: {stdout}");
}

#[test]
fn siglip_tiny_matches_onnxruntime() {
    check_fixture("siglip-tiny");
}

#[test]
fn siglip_tiny_dynamo_matches_onnxruntime() {
    check_fixture("siglip-tiny-dynamo");
}

#[test]
fn siglip_tiny_opset14_matches_onnxruntime() {
    check_fixture("siglip-tiny-opset14");
}

#[test]
fn siglip_small_matches_onnxruntime() {
    check_fixture("siglip-small");
}

/// siglip-small's first MLP block, cut out, converted to fp16 and lowered
/// whole to the simulated chip: the device's output matches the reference
/// executor on the same converted IR, and the run reports the compiled
/// figures (cycles, the superstep split, exchange code per tile).
#[test]
fn siglip_small_mlp_block_runs_on_the_simulator() {
    let Some(dir) = common::fixture_dir("siglip-small") else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(dir.join("model.onnx"))
        .args([
            "--weights=random",
            "--extract",
            "mlp:0",
            "--precision",
            "fp16",
        ])
        .args(["--device", "sim", "--json"])
        .output()
        .expect("run ipu-run");
    let (report, stdout) = common::passed_report("siglip-small's MLP block", &out);
    assert_eq!(report["passed"], true, "{stdout}");
    // The compiled figures are flattened into the report.
    let num = |k: &str| {
        report[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} in {stdout}"))
    };
    assert!(
        num("cycles") > 0.0 && num("exchange_cycles") > 0.0,
        "{stdout}"
    );
    assert!(num("exchange_code_bytes_max") > 0.0, "{stdout}");
    // Code is part of the fullest tile's bytes, exchange code part of it.
    assert!(
        num("max_code_bytes") >= num("exchange_code_bytes_max")
            && num("max_code_bytes") < num("max_tile_bytes"),
        "{stdout}"
    );
    assert!(num("mfu") > 0.0 && num("mfu") < 1.0, "{stdout}");
    // The import is a part of the compile, which also plans, lowers and
    // encodes (the report once gave the whole compile as the import).
    assert!(
        num("import_s") > 0.0 && num("import_s") < num("compile_s"),
        "{stdout}"
    );
    for o in report["outputs"].as_array().expect("outputs") {
        let rel = o["rel_l2_err"].as_f64().expect("rel_l2_err");
        assert!(rel < 1e-2, "{stdout}");
    }
}

/// A chain's exchange code per tile is every block's on that tile: the
/// layer's busiest tile holds at least either block's busiest tile's
/// (as each reports alone) and at most both plus the link between them
/// (a few hundred bytes on siglip-tiny).
#[test]
fn a_layers_exchange_code_counts_each_tile_once() {
    let Some(dir) = common::fixture_dir("siglip-tiny") else {
        return;
    };
    let bytes = |extract: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
            .arg(dir.join("model.onnx"))
            .args(["--extract", extract, "--precision", "fp16"])
            .args(["--device", "sim", "--json"])
            .output()
            .expect("run ipu-run");
        let (report, stdout) = common::passed_report(extract, &out);
        assert_eq!(report["passed"], true, "{stdout}");
        report["exchange_code_bytes_max"]
            .as_u64()
            .unwrap_or_else(|| panic!("exchange_code_bytes_max in {stdout}"))
    };
    let (attention, mlp, layer) = (bytes("attention:0"), bytes("mlp:0"), bytes("layer:0"));
    assert!(layer >= attention.max(mlp), "{layer} {attention} {mlp}");
    assert!(layer <= attention + mlp + 1024, "{layer} {attention} {mlp}");
}
