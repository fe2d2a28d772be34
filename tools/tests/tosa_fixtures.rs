//! The SigLIP fixtures through TOSA and back: ONNX import -> `nn` -> TOSA ->
//! `nn` -> reference executor, compared with the onnxruntime outputs stored
//! with each fixture (relative L2 error < 1e-5, as the ONNX import itself).
//!
//! Without the `mlir` feature the TOSA stays inside ipuc (printed in the
//! generic form and parsed back); with it, upstream MLIR verifies and prints
//! the TOSA (`ipu-opt --emit=tosa`) and reads it back (`ipu-run
//! --upstream`), and upstream parses every fixture's imported IR.

mod common;

use std::path::Path;
use std::process::Command;

use ipuc_frontends::tosa::{convert_nn_to_tosa, to_nn::convert_tosa_to_nn};
use ipuc_ir::{parse_source, print_op, verify, Context, PrintOptions, WalkOrder};

const FIXTURES: &[&str] = &[
    "siglip-tiny",
    "siglip-tiny-dynamo",
    "siglip-tiny-opset14",
    "siglip-small",
];

/// Names of the ops under `root`, sorted and deduplicated.
fn op_kinds(ctx: &Context, root: ipuc_ir::OpId) -> Vec<String> {
    let mut v: Vec<String> = ctx
        .collect_ops(root, WalkOrder::PreOrder)
        .into_iter()
        .map(|op| ctx.name_str(op).to_string())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn run_reference(name: &str, model: &Path, dir: &Path, extra: &[&str]) -> Vec<(String, f64)> {
    let out = Command::new(env!("CARGO_BIN_EXE_ipu-run"))
        .arg(model)
        .args(extra)
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .args(["--device", "reference", "--json"])
        .output()
        .expect("run ipu-run");
    common::assert_matches_onnxruntime(name, &out)
}

/// nn -> TOSA -> nn inside ipuc, through the generic text form.
fn in_process_round_trip(name: &str) {
    let Some(dir) = common::fixture_dir(name) else {
        return;
    };
    let model = dir.join("model.onnx");
    let (mut ctx, module) = ipuc_tools::import::import_onnx(
        model.to_str().unwrap(),
        &Default::default(),
        ipuc_tools::registry::dialects(),
    )
    .expect("import");
    ctx.allow_unregistered = true;
    convert_nn_to_tosa(&mut ctx, module).expect("nn -> TOSA");
    let kinds = op_kinds(&ctx, module);
    assert!(
        kinds
            .iter()
            .all(|k| k.starts_with("tosa.") || k.starts_with("func.") || k == "builtin.module"),
        "{name}: ops left after nn -> TOSA: {kinds:?}"
    );
    let text = print_op(
        &ctx,
        module,
        &PrintOptions {
            generic: true,
            ..Default::default()
        },
    );

    let mut back = Context::new(ipuc_tools::registry::dialects());
    back.allow_unregistered = true;
    let module = parse_source(&mut back, "tosa.mlir", &text)
        .expect("parse")
        .module;
    convert_tosa_to_nn(&mut back, module).expect("TOSA -> nn");
    // Nothing unregistered may remain.
    back.allow_unregistered = false;
    verify(&back, module).expect("valid nn");

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("round_trip.mlir");
    std::fs::write(&path, print_op(&back, module, &PrintOptions::default())).unwrap();
    run_reference(name, &path, &dir, &[]);
}

#[test]
fn fixtures_survive_tosa_round_trip_in_ipuc() {
    for name in FIXTURES {
        in_process_round_trip(name);
    }
}

/// ONNX -> nn -> TOSA verified and printed by upstream -> read back by
/// upstream -> nn -> reference executor.
#[cfg(feature = "mlir")]
#[test]
fn fixtures_survive_tosa_round_trip_through_upstream_mlir() {
    for name in FIXTURES {
        let Some(dir) = common::fixture_dir(name) else {
            continue;
        };
        let tmp = tempfile::tempdir().unwrap();
        let tosa = tmp.path().join("model.tosa.mlir");
        common::output_ok(
            Command::new(env!("CARGO_BIN_EXE_ipu-opt"))
                .arg(dir.join("model.onnx"))
                .arg("--emit=tosa")
                .arg("-o")
                .arg(&tosa),
            name,
        );
        let text = std::fs::read_to_string(&tosa).unwrap();
        assert!(
            text.contains("tosa.conv2d") && text.contains("tosa.matmul") && !text.contains("nn.")
        );
        // The external oracle, where installed, agrees with the in-process one.
        if Command::new("mlir-opt-22")
            .arg("--version")
            .output()
            .is_err()
        {
            ipuc_test_support::missing(name, "mlir-opt-22 is not on PATH");
        } else {
            let st = Command::new("mlir-opt-22")
                .arg(&tosa)
                .arg("-o")
                .arg("/dev/null")
                .status()
                .unwrap();
            assert!(st.success(), "{name}: mlir-opt-22 rejects the TOSA");
        }
        for (output, rel_l2) in run_reference(name, &tosa, &dir, &["--upstream"]) {
            eprintln!(
                "{name} {output}: rel L2 {rel_l2:.2e} after ONNX -> nn -> TOSA -> upstream -> nn"
            );
        }
    }
}

/// Upstream parses (generic form, unregistered dialects allowed) and
/// verifies what the ONNX importer makes of every fixture.
#[cfg(feature = "mlir")]
#[test]
fn fixtures_imported_ir_parses_in_upstream_mlir() {
    for name in FIXTURES {
        let Some(dir) = common::fixture_dir(name) else {
            continue;
        };
        let model = dir.join("model.onnx");
        let (ctx, module) = ipuc_tools::import::import_onnx(
            model.to_str().unwrap(),
            &Default::default(),
            ipuc_tools::registry::dialects(),
        )
        .expect("import");
        if let Err(d) = ipuc_tools::upstream::check_printout(&ctx, module, name) {
            panic!(
                "{name}: {:?}",
                d.iter().map(|d| d.message.clone()).collect::<Vec<_>>()
            );
        }
    }
}
