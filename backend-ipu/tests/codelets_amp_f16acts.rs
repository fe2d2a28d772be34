//! The fused FP16-activation / FP8-weight AMP codelet on the simulator:
//! random nonzero f16 activations (some off the FP8 grid, some beyond its
//! range at the chosen scale), FP8 weights, f16 partials; the output against
//! the float64 reference over the exactly modelled quantisation, the FP8
//! staging buffer against the quantisation byte for byte, and cycles
//! against the estimate.

mod common;

use common::{assert_near_estimate, assert_worker_issues, executable_of};
use ipuc_backend_ipu::codelets::amp::{AmpMode, AmpVariant, Elem};
use ipuc_backend_ipu::codelets::amp_f16acts::{AmpF8WeightsF16Acts, CHANNELS};
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use ipuc_test_support::random::nonzero;
use rand::SeedableRng;

fn run(c: &AmpF8WeightsF16Acts, seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let rows = c.block.rows as usize;
    let scale = 2f64.powi(c.act_scale);
    // Activations up to 2 * 2^s; one in 64 far beyond 240 * 2^s (saturates).
    let acts: Vec<f64> = (0..rows * CHANNELS)
        .map(|i| {
            if i % 64 == 17 {
                nonzero(&mut rng, 300.0, 400.0) * scale
            } else {
                nonzero(&mut rng, 0.05, 2.0) * scale
            }
        })
        .collect();
    let acts = Elem::F16.encode(&acts);
    let weights: Vec<f64> = (0..AmpVariant::F8.weight_bytes())
        .map(|_| nonzero(&mut rng, 0.05, 2.0))
        .collect();
    let weights = Elem::F8.encode(&weights);
    let partials: Vec<f64> = (0..rows * 16)
        .map(|_| nonzero(&mut rng, 0.01, 4.0))
        .collect();
    let partials = Elem::F16.encode(&partials);
    let b = &c.block;
    let (prog, counts) = c.program(5, &MachineModel::c600()).unwrap();
    // Cast: a 2-bundle body per 16-byte block; AMP: 4 bundles per row.
    assert_eq!((counts.1.body, counts.0.body), (2, 4));
    let mut s = sim(&executable_of(&prog), Default::default());
    s.write_memory(5, c.activations, &acts).unwrap();
    s.write_memory(5, b.weights, &weights).unwrap();
    s.write_memory(5, b.partials, &partials).unwrap();
    s.write_memory(5, b.input, &vec![0x33; rows * 32]).unwrap();
    s.write_memory(5, b.output, &vec![0x5a; rows * 32]).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let staged = s.read_memory(5, b.input, (rows * 32) as u32).unwrap();
    assert_eq!(staged, c.quantise(&acts), "FP8 staging, rows {rows}");
    let got = Elem::F16.decode(&s.read_memory(5, b.output, (rows * 32) as u32).unwrap());
    let accumulate = b.mode == AmpMode::Accumulate;
    let want = c.reference(&acts, &weights, accumulate.then_some(&partials[..]));
    assert_eq!(got.len(), want.len());
    for (i, (g, (w, mag))) in got.iter().zip(&want).enumerate() {
        let tol = AmpVariant::F8.tolerance(*w, *mag);
        assert!(
            (g - w).abs() <= tol,
            "{:?} rows {rows} element {i}: got {g} want {w} (tolerance {tol:e})",
            b.mode
        );
    }
    let profile = s.profile().unwrap();
    assert_worker_issues(
        profile.tiles[0].worker_issues,
        &b.worker_rows(),
        |n| AmpF8WeightsF16Acts::worker_issues(&counts, n),
        format_args!("rows {rows}"),
    );
    let cycles = profile.total_cycles;
    let est = c.estimate_cycles().unwrap();
    assert_near_estimate(cycles, est, format_args!("rows {rows}"));
}

#[test]
fn fused_cast_and_fp8_amp_match_the_quantised_reference_and_estimate() {
    let machine = MachineModel::c600();
    let mut seed = 300;
    for mode in [AmpMode::Accumulate, AmpMode::Overwrite] {
        for (rows, act_scale) in [(1u32, 0), (6, -3), (13, 2), (50, 5)] {
            let c = AmpF8WeightsF16Acts::place(mode, rows, act_scale, &machine).unwrap();
            run(&c, seed);
            seed += 1;
        }
    }
}

#[test]
fn fused_amp_parameters_are_checked() {
    let m = MachineModel::c600();
    let e = AmpF8WeightsF16Acts::place(AmpMode::Overwrite, 6, 40, &m).unwrap_err();
    assert!(e.to_string().contains("outside -31..=31"), "{e}");
    let mut c = AmpF8WeightsF16Acts::place(AmpMode::Overwrite, 6, 0, &m).unwrap();
    c.activations += 4;
    let e = c.assembly().unwrap_err();
    assert!(e.to_string().contains("not 8-byte aligned"), "{e}");
    c.activations -= 4;
    c.block.variant = AmpVariant::F16;
    let e = c.assembly().unwrap_err();
    assert!(e.to_string().contains("must use the FP8 AMP"), "{e}");
}
