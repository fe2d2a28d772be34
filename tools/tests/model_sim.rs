//! SigLIP fixtures on the simulated chip through `ipu-run`, every output
//! held to cosine >= 0.999 (issue 12's bar at FP16) and relative L2 <=
//! 1e-2:
//!
//! - the whole encoder (`ipu-run MODEL --input test_data_set_0`, with no
//!   `--device` or `--precision`: the simulator and fp16 are the defaults
//!   for a model): the graph fused, the patch embedding, every layer, the
//!   post-LayerNorm and the pooling head lowered as one chain, both outputs
//!   judged against the onnxruntime outputs stored with the fixture (an
//!   oracle independent of ipuc); the two other exports of siglip-tiny
//!   (dynamo, opset 14) must reach the same chain;
//! - the whole encoder at `--precision fp8` (FP8 weights, the activations
//!   they multiply cast to FP8), held to issue 12's FP8 bar against the
//!   same onnxruntime outputs: cosine >= 0.99 (and relative L2 <= 0.15,
//!   `ipu-run`'s FP8 criteria);
//! - the model's tail alone (`--extract head --precision fp16 --device
//!   sim`, the defaults spelled out: post-LayerNorm, pooling head, the
//!   head's MLP), against the reference executor on the same f16 IR;
//! - `--oracle source`: without stored outputs, the simulator's FP8 run
//!   judged against the reference executor on the model before the
//!   conversion (f32), which sees the precision's error as well as the
//!   lowering's; FP16 against f32 still meets the FP16 bar;
//! - every run above with warnings on (`IPUC_LOG=warn`) warns of
//!   nothing;
//! - a model the lowering does not cover fails with the lowering's error
//!   and how to run it anyway (`--device reference`), never falling back
//!   to the reference executor by itself.

mod common;

use std::process::Command;

use common::{fixture_dir, node_test_dir, output_ok, passed_report, run_tool};
use serde_json::Value;

/// The FP16 bar: (least cosine, largest relative L2 error).
const FP16_BAR: (f64, f64) = (0.999, 1e-2);
/// The FP8 bar.
const FP8_BAR: (f64, f64) = (0.99, 0.15);

/// Runs `fixture` with `args` after the model (and `--json`); checks every
/// output against `bar` and returns the report (`None` where the fixture
/// is absent and may be).
fn run(
    fixture: &str,
    args: &[&str],
    with_data_set: bool,
    (min_cosine, max_rel_l2): (f64, f64),
) -> Option<Value> {
    let dir = fixture_dir(fixture)?;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ipu-run"));
    cmd.arg(dir.join("model.onnx"));
    if with_data_set {
        cmd.arg("--input").arg(dir.join("test_data_set_0"));
    }
    // Warnings on: a compile of the lowering's own code warns of nothing
    // (its exchange code waits on supervisor stalls by design, which the
    // assembler would warn of in hand-written code: 70 k lines for
    // siglip-tiny when they were warnings).
    cmd.args(args).arg("--json").env("IPUC_LOG", "warn");
    let out = output_ok(&mut cmd, fixture);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("WARN"),
        "{fixture} {args:?} warns: {}",
        stderr.lines().next().unwrap_or("")
    );
    let (report, _) = passed_report(fixture, &out);
    let outputs = report["outputs"].as_array().expect("outputs");
    assert_eq!(
        outputs.len(),
        2,
        "{fixture}: the last hidden state and the pooled row"
    );
    for o in outputs {
        let cosine = o["cosine"].as_f64().expect("cosine");
        let rel_l2 = o["rel_l2_err"].as_f64().expect("relative L2");
        eprintln!(
            "{fixture} {}: cosine {cosine:.7}, rel L2 {rel_l2:.2e}, {} cycles",
            o["name"], report["cycles"]
        );
        assert!(
            cosine >= min_cosine && rel_l2 <= max_rel_l2,
            "{fixture} {}: {o}",
            o["name"]
        );
    }
    Some(report)
}

/// The whole model on the default device at the default precision.
fn whole(fixture: &str) {
    let Some(report) = run(fixture, &[], true, FP16_BAR) else {
        return;
    };
    // What ran: the simulator, the model converted to fp16; the outputs
    // named as the model (and the data set) names them.
    let names: Vec<&str> = report["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["last_hidden_state", "pooler_output"], "{fixture}");
    assert_eq!(report["device"], "sim", "{fixture}");
    assert_eq!(report["precision"], "fp16", "{fixture}");
    assert_eq!(
        report["oracle"], "the outputs stored in test_data_set_0",
        "{fixture}: judged against onnxruntime's outputs"
    );
    assert_eq!(report["batch"], 1, "{fixture}");
    assert!(report["images_per_s"].as_f64().unwrap() > 0.0, "{fixture}");
}

/// The whole model at `--precision fp8`, against onnxruntime's outputs.
fn whole_fp8(fixture: &str) {
    let Some(report) = run(fixture, &["--precision", "fp8"], true, FP8_BAR) else {
        return;
    };
    assert_eq!(report["precision"], "fp8", "{fixture}");
    assert_eq!(
        report["oracle"], "the outputs stored in test_data_set_0",
        "{fixture}"
    );
}

fn head(fixture: &str) {
    let args = [
        "--extract",
        "head",
        "--precision",
        "fp16",
        "--device",
        "sim",
    ];
    if let Some(report) = run(fixture, &args, false, FP16_BAR) {
        assert_eq!(report["function"], "head", "{fixture}");
    }
}

/// Each output's cosine in `report`.
fn cosines(report: &Value) -> Vec<f64> {
    report["outputs"]
        .as_array()
        .expect("outputs")
        .iter()
        .map(|o| o["cosine"].as_f64().expect("cosine"))
        .collect()
}

#[test]
fn the_oracle_can_be_the_model_before_its_conversion() {
    let fixture = "siglip-tiny";
    let fp8 = ["--precision", "fp8"];
    let Some(same) = run(fixture, &fp8, false, FP8_BAR) else {
        return;
    };
    assert_eq!(
        same["oracle"],
        "the reference executor on the same IR (synthesized)"
    );
    let source = run(
        fixture,
        &[&fp8[..], &["--oracle", "source"]].concat(),
        false,
        FP8_BAR,
    )
    .expect("the fixture is there");
    assert_eq!(
        source["oracle"],
        "the reference executor on the model before --precision (synthesized)"
    );
    // The same simulated outputs, judged against f32: FP8's rounding of
    // the weights and activations shows as well (here every output's
    // cosine drops), where against the FP8 IR only the lowering's does.
    assert_eq!(source["cycles"], same["cycles"]);
    for (s, c) in cosines(&source).iter().zip(cosines(&same)) {
        assert!(*s < c, "vs f32 {s}, vs the FP8 IR {c}");
    }
    // FP16 holds the FP16 bar against f32.
    run(
        fixture,
        &["--precision", "fp16", "--oracle", "source"],
        false,
        FP16_BAR,
    )
    .expect("the fixture is there");
}

#[test]
fn siglip_tiny_runs_on_the_simulator_at_fp8() {
    for fixture in ["siglip-tiny", "siglip-tiny-dynamo", "siglip-tiny-opset14"] {
        whole_fp8(fixture);
    }
}

#[test]
fn siglip_tiny_runs_on_the_simulator() {
    whole("siglip-tiny");
}

#[test]
fn siglip_tiny_dynamo_runs_on_the_simulator() {
    whole("siglip-tiny-dynamo");
}

#[test]
fn siglip_tiny_opset14_runs_on_the_simulator() {
    whole("siglip-tiny-opset14");
}

#[test]
fn siglip_small_runs_on_the_simulator() {
    whole("siglip-small");
}

#[test]
fn siglip_small_runs_on_the_simulator_at_fp8() {
    // Issue 12's FP8 bar on every fixture, the larger model too (its 12
    // layers one loop, its products on more tiles than tiny's).
    whole_fp8("siglip-small");
}

#[test]
fn siglip_tiny_head_runs_on_the_simulator() {
    head("siglip-tiny");
}

#[test]
fn siglip_small_head_runs_on_the_simulator() {
    head("siglip-small");
}

/// `--batch N`: the images run as one program (the products' rows every
/// image's tokens, the attention and the pooling head per image). With
/// the data set (one image, repeated) every image meets onnxruntime's
/// outputs; with distinct synthesised images, the reference executor's
/// on the same IR, which an image attending to another's tokens would
/// miss. FP8 too. One image more per run, fewer cycles per image.
#[test]
fn siglip_tiny_runs_a_batch_of_images_as_one_program() {
    let Some(one) = run("siglip-tiny", &[], true, FP16_BAR) else {
        return;
    };
    let three = run("siglip-tiny", &["--batch", "3"], true, FP16_BAR).expect("the fixture");
    assert_eq!(three["batch"], 3);
    assert_eq!(
        three["oracle"], "the outputs stored in test_data_set_0",
        "each image judged against onnxruntime's outputs"
    );
    let shapes: Vec<&Value> = three["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["shape"])
        .collect();
    assert_eq!(
        shapes,
        [&serde_json::json!([3, 16, 64]), &serde_json::json!([3, 64])]
    );
    let per_image = |r: &Value| r["cycles"].as_f64().unwrap() / r["batch"].as_f64().unwrap();
    assert!(
        per_image(&three) < per_image(&one),
        "batch 3: {} cycles, batch 1: {}",
        three["cycles"],
        one["cycles"]
    );
    let distinct = run("siglip-tiny", &["--batch", "2"], false, FP16_BAR).expect("the fixture");
    assert_eq!(
        distinct["oracle"],
        "the reference executor on the same IR (synthesized)"
    );
    run(
        "siglip-tiny",
        &["--batch", "2", "--precision", "fp8"],
        false,
        FP8_BAR,
    )
    .expect("the fixture");
}

/// `--batch auto` plans the model for more and more images and runs the
/// largest batch that plans: siglip-tiny's 16 tokens plan up to the
/// search's bound. What `--batch` cannot apply to is an error.
#[test]
fn batch_auto_runs_the_largest_batch_that_plans() {
    let Some(auto) = run("siglip-tiny", &["--batch", "auto"], false, FP16_BAR) else {
        return;
    };
    assert_eq!(auto["batch"], 128, "{}", auto["batch_limit"]);
    assert_eq!(auto["batch_limit"], "the search stops at 128 images");
    let Some(dir) = fixture_dir("siglip-tiny") else {
        return;
    };
    let ipu_run = env!("CARGO_BIN_EXE_ipu-run");
    let model = dir.join("model.onnx");
    let model = model.to_str().unwrap();
    for (args, says) in [
        (
            vec![model, "--batch", "0"],
            "expected a number of images (1 or more) or `auto`, got '0'",
        ),
        (
            vec![model, "--batch", "auto", "--device", "reference"],
            "--batch auto finds the largest batch that fits the chip: it needs --device sim",
        ),
        (
            vec![
                model,
                "--batch",
                "2",
                "--input-shape",
                "pixel_values=1x3x32x32",
            ],
            "--batch 2: no input has a symbolic batch dimension left to set",
        ),
    ] {
        let (code, stdout, stderr) = run_tool(ipu_run, &args);
        assert_eq!(code, 2, "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// An ONNX node test of one padded convolution: the importer reads it and
/// the reference executor runs it, but the lowering does not cover it. On
/// the default device the error is the lowering's, at the op, and its last
/// line says how to run the model anyway; nothing runs in its place. With
/// `--device reference` it runs and matches onnxruntime.
#[test]
fn a_model_that_does_not_lower_says_how_to_run_it_anyway() {
    let Some(dir) = node_test_dir("test_basic_conv_with_padding") else {
        return;
    };
    let ipu_run = env!("CARGO_BIN_EXE_ipu-run");
    let model = dir.join("model.onnx");
    let set = dir.join("test_data_set_0");
    let args = [model.to_str().unwrap(), "--input", set.to_str().unwrap()];
    let (code, stdout, stderr) = run_tool(ipu_run, args);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "no report: nothing ran in the lowering's place");
    assert!(
        stderr
            .starts_with("error: 'Conv_0': error: 'nn.conv2d' op cannot be lowered to the IPU yet"),
        "{stderr}"
    );
    assert_eq!(
        stderr.trim_end().lines().last(),
        Some(
            "help: to run it anyway, on the host reference executor (no lowering), add \
             `--device reference`"
        ),
        "{stderr}"
    );

    let (code, stdout, stderr) = run_tool(
        ipu_run,
        args.iter().chain(&["--device", "reference", "--json"]),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(report["device"], "reference", "{stdout}");
    assert_eq!(report["passed"], true, "{stdout}");
}

/// A loop's slot holds what its busiest tile keeps as constants, packed
/// (`LoopMemory::pack`), not an image of the body's memory: siglip-tiny's
/// second layer's slot is smaller than the ranges its copies restore
/// (the rows exchanges write there take no slot).
#[test]
fn a_loops_slot_holds_the_constants_not_the_bodys_memory() {
    let Some(dir) = fixture_dir("siglip-tiny") else {
        return;
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ipu-run"));
    cmd.arg(dir.join("model.onnx"))
        .arg("--input")
        .arg(dir.join("test_data_set_0"))
        .arg("--plan-report");
    let out = output_ok(&mut cmd, "siglip-tiny");
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.starts_with("loop: "))
        .unwrap_or_else(|| panic!("no loop in the plan report:\n{text}"));
    let (_, after) = line.split_once("slot(s) of ").expect("a slot size");
    let (slot, ranges) = after
        .split_once(" bytes, each copied over ")
        .expect("ranges");
    let slot: u32 = slot.parse().expect("a number");
    let hex = |s: &str| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    let body: u32 = ranges
        .split(", ")
        .map(|r| {
            let (lo, hi) = r.split_once("..").expect("lo..hi");
            hex(hi) - hex(lo)
        })
        .sum();
    assert!(
        slot > 0 && slot < body,
        "slot {slot} of a body of {body} bytes: {line}"
    );
}

/// A compile's output does not depend on its thread count: siglip-tiny's
/// two layers are a loop whose archive (the second layer's constants) is
/// built on a thread of its own beside the blocks' emission, or first on
/// the one thread with `IPUC_COMPILE_THREADS=1`, and its tensors land in
/// the same place either way.
#[test]
fn a_loops_executable_is_the_same_whatever_the_thread_count() {
    let Some(dir) = fixture_dir("siglip-tiny") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let compile = |threads: &str| {
        let exe = tmp.path().join(format!("tiny-{threads}.ipuexe"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ipu-opt"));
        cmd.arg(dir.join("model.onnx"))
            .args(["--precision", "fp8"])
            .arg("--pass-pipeline=builtin.module(func.func(eqsat-fuse,canonicalize),ipu-lower)")
            .args(["--emit", "exe", "-o"])
            .arg(&exe)
            .env("IPUC_COMPILE_THREADS", threads);
        output_ok(&mut cmd, "siglip-tiny");
        std::fs::read(exe).unwrap()
    };
    let (one, two) = (compile("1"), compile("2"));
    let archived = |exe: &[u8]| exe.windows(13).any(|w| w == b"loop_archive1");
    assert!(archived(&one), "the loop's archive is in the executable");
    assert!(
        one == two,
        "one thread and two compiled different executables"
    );
}
