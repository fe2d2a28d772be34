//! `ipu-run MODEL --extract head --precision fp16 --device sim`: the
//! SigLIP fixtures' tail (post-LayerNorm and attention-pooling head, then
//! the head's MLP) lowered as one chain and run on the simulated chip,
//! both outputs against the reference executor on the same f16 IR
//! (cosine >= 0.999, the bar at FP16, and ipu-run's relative L2
//! bound).

mod common;

use std::process::Command;

use common::{fixture_dir, output_ok, passed_report};

fn check(fixture: &str) {
    let Some(dir) = fixture_dir(fixture) else {
        return;
    };
    let out = output_ok(
        Command::new(env!("CARGO_BIN_EXE_ipu-run"))
            .arg(dir.join("model.onnx"))
            .args(["--extract", "head", "--precision", "fp16"])
            .args(["--device", "sim", "--json"]),
        fixture,
    );
    let (report, _) = passed_report(fixture, &out);
    assert_eq!(report["function"], "head", "{fixture}");
    let outputs = report["outputs"].as_array().expect("outputs");
    assert_eq!(outputs.len(), 2, "{fixture}: post-LayerNorm and pooled row");
    for o in outputs {
        let cosine = o["cosine"].as_f64().expect("cosine");
        let rel_l2 = o["rel_l2_err"].as_f64().expect("relative L2");
        eprintln!(
            "{fixture} {}: cosine {cosine:.7}, rel L2 {rel_l2:.2e}, {} cycles",
            o["name"], report["cycles"]
        );
        assert!(
            cosine >= 0.999 && rel_l2 <= 1e-2,
            "{fixture} {}: {o}",
            o["name"]
        );
    }
}

#[test]
fn siglip_tiny_head_runs_on_the_simulator() {
    check("siglip-tiny");
}

#[test]
fn siglip_small_head_runs_on_the_simulator() {
    check("siglip-small");
}
