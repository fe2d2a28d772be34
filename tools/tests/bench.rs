//! `ipu-bench`: the AMP benchmark runs on every tile, checks numerics, and
//! reports the codelet's cycles; options are validated.

use clap::Parser;
use ipuc_backend_ipu::codelets::amp::{AmpMode, AmpVariant};
use ipuc_ipu_arch::MachineModel;
use ipuc_tools::bench::amp::run_amp;
use ipuc_tools::bench::cli::{run, Cli};

/// `ipu-bench ARGS`: its output, or its error's message.
fn bench(args: &[&str]) -> Result<String, String> {
    let cli = Cli::parse_from(std::iter::once(&"ipu-bench").chain(args));
    run(cli).map_err(|e| e.to_string())
}

#[test]
fn amp_bench_runs_every_tile_and_verifies_numerics() {
    let m = MachineModel::c600();
    let r = run_amp(&m, AmpVariant::F16, AmpMode::Accumulate, 16, 5).unwrap();
    assert_eq!(r.tiles_verified, 3);
    assert!(r.worst_error_over_tolerance <= 1.0);
    assert_eq!(r.cycles_per_tile, r.estimated_cycles);
    // 1472 tiles, each a supervisor plus six workers of 4 n/6 + 13 issues.
    assert!(r.instructions > 1472 * 6 * 13);
    let flops = 2.0 * 16.0 * 256.0 * 1472.0;
    let tflops = flops / (r.cycles_per_tile as f64 / 1.5e9) / 1e12;
    assert!((r.tflops - tflops).abs() < 1e-9);
}

#[test]
fn amp_bench_rejects_bad_options() {
    assert!(bench(&["amp", "--machine", "ipu1", "--n", "16"])
        .unwrap_err()
        .contains("unknown machine `ipu1`"));
    assert!(
        bench(&["amp", "--machine", "bow", "--variant", "f8", "--n", "16"])
            .unwrap_err()
            .contains("needs FP8")
    );
    assert!(bench(&["amp", "--n", "100000"])
        .unwrap_err()
        .contains("interleaved memory"));
    assert!(Cli::try_parse_from(["ipu-bench", "amp", "--n", "x"]).is_err());
}

#[test]
fn amp_bench_runs_the_fused_f16_activation_fp8_block() {
    let m = MachineModel::c600();
    let r = ipuc_tools::bench::amp::run_amp_f8_f16acts(&m, AmpMode::Accumulate, 12, 7).unwrap();
    assert_eq!(r.tiles_verified, 3);
    assert!(r.worst_error_over_tolerance <= 1.0);
    let rel =
        (r.cycles_per_tile as f64 - r.estimated_cycles as f64).abs() / r.estimated_cycles as f64;
    assert!(
        rel <= 0.05,
        "{} cycles, estimate {}",
        r.cycles_per_tile,
        r.estimated_cycles
    );
    // The cast pass costs more than the FP8 AMP loop it feeds.
    let plain = run_amp(&m, AmpVariant::F8, AmpMode::Accumulate, 12, 7).unwrap();
    assert!(r.cycles_per_tile > plain.cycles_per_tile);
    let out = bench(&["amp", "--variant", "f8-f16acts", "--n", "6", "--json"]).unwrap();
    assert!(out.contains("f16v4tof8 + f8v8hihov4amp"), "{out}");
    assert!(bench(&[
        "amp",
        "--machine",
        "bow",
        "--variant",
        "f8-f16acts",
        "--n",
        "6"
    ])
    .unwrap_err()
    .contains("needs FP8"));
}

#[test]
fn codelets_bench_runs_every_family_and_its_estimate_is_exact() {
    let rows = ipuc_tools::bench::codelets::run_codelets(&MachineModel::c600()).unwrap();
    assert_eq!(rows.len(), 15);
    for r in &rows {
        assert_eq!(r.simulated, r.estimate, "{}", r.codelet);
        // A launch is at least the worker start and one barrel round.
        assert!(r.simulated > 12, "{}", r.codelet);
    }
    let out = bench(&["codelets", "--json"]).unwrap();
    assert!(out.contains("\"codelet\": \"softmax, 12 x 728\""), "{out}");
    assert!(
        out.contains("\"codelet\": \"layernorm to fp8 without scale and shift, 12 x 1152\""),
        "{out}"
    );
    assert!(
        out.contains("\"codelet\": \"layernorm to panels, 6 x 1152\""),
        "{out}"
    );
    assert!(bench(&["codelets", "--machine", "ipu9"])
        .unwrap_err()
        .contains("known: c600, bow"));
}

#[test]
fn amp_bench_runs_the_poplibs_shaped_vertex_against_poplibs_formula() {
    let m = MachineModel::bow();
    let r = ipuc_tools::bench::amp::run_amp_poplibs(&m, 64, 3).unwrap();
    assert_eq!(r.tiles_verified, 3);
    assert!(r.worst_error_over_tolerance <= 1.0);
    // The estimate column is poplibs' formula: 173 outside the workers,
    // then six times the slowest worker (11 positions: 37 + 4 x 8 - 7).
    assert_eq!(r.estimated_cycles, 173 + 6 * (37 + 4 * 8 - 7));
    assert!(r.cycles_per_tile < r.estimated_cycles);
    assert!(bench(&[
        "amp",
        "--vertex",
        "poplibs-shaped",
        "--variant",
        "f32",
        "--n",
        "16"
    ])
    .unwrap_err()
    .contains("--variant f16 --mode overwrite"));
}

/// `ipu-bench mlp` on a small block in both precisions: the report names
/// the precision and its peak, and the run checked its rows against float64
/// (it fails otherwise); a bad precision is refused by the parser.
#[test]
fn mlp_bench_runs_a_small_block_in_both_precisions() {
    for (precision, peak) in [("fp16", "FP16 peak"), ("fp8", "FP8 peak")] {
        let out = bench(&[
            "mlp",
            "--tokens",
            "37",
            "--hidden",
            "64",
            "--mlp",
            "200",
            "--precision",
            precision,
        ])
        .unwrap_or_else(|e| panic!("{precision}: {e}"));
        assert!(
            out.contains(&format!("MLP block 37x64x200 ({precision})")),
            "{out}"
        );
        assert!(out.contains(peak), "{out}");
        assert!(out.contains("rows checked against float64"), "{out}");
    }
    assert!(Cli::try_parse_from(["ipu-bench", "mlp", "--precision", "fp4"]).is_err());
}

/// `ipu-bench attention` on a small block with padded heads and tokens: the
/// report shows every stage's plan and the run checked its rows against
/// float64 (it fails otherwise); heads that do not divide the hidden size
/// are a usage error.
#[test]
fn attention_bench_runs_a_small_block() {
    let small = |more: &[&str]| {
        let args = [
            &[
                "attention",
                "--tokens",
                "37",
                "--hidden",
                "96",
                "--heads",
                "4",
            ],
            more,
        ]
        .concat();
        bench(&args).unwrap_or_else(|e| panic!("{e}"))
    };
    let out = small(&[]);
    for want in [
        "attention block 37x96, 4 heads of 24 (padded to 32)",
        "  attention: tiles ",
        "FP16 peak",
        "rows checked against float64",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    // With FP8 weights: the plan says what FP8 changes, the rows are
    // checked against float64 with the same roundings.
    let out = small(&["--precision", "fp8"]);
    for want in [
        "  FP8: qk and vt on the FP8 AMP",
        "tiles (fp8)",
        "rows checked against float64",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    // A batch of 2 images of 37 tokens: rows of both images checked
    // against their own image's float64 block.
    let out = small(&["--images", "2"]);
    for want in [
        "attention block of 2 images, each 37x96, 4 heads of 24 (padded to 32)",
        "8 rows checked against float64",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }
    let err = bench(&["attention", "--images", "0"]).unwrap_err();
    assert!(err.contains("--images must be at least 1"), "{err}");
    let err = bench(&[
        "attention",
        "--tokens",
        "8",
        "--hidden",
        "96",
        "--heads",
        "5",
    ])
    .unwrap_err();
    assert!(
        err.contains("must be a positive multiple of --heads 5"),
        "{err}"
    );
}
