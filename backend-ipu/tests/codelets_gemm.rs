//! The tile GEMM vertex on the simulator: random `[rows, K] · [K, N]`
//! products (K and N not multiples of the panel sizes, rows not a multiple
//! of six) against float64, and simulated cycles against the estimate from
//! the emitted code.

mod common;

use common::executable_of;
use ipuc_backend_ipu::codelets::amp::{AmpBlock, AmpVariant};
use ipuc_backend_ipu::codelets::gemm::TileGemm;
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use rand::{Rng, SeedableRng};

/// Places X, Y and the weights in interleaved memory: X and Y on their own
/// 32 KiB element pairs (with the AMP's read-past bytes), the weights after.
fn place(variant: AmpVariant, rows: u32, k: usize, n: usize) -> TileGemm {
    let m = MachineModel::c600();
    let pair = 2 * m.element_bytes;
    let k_groups = k.div_ceil(variant.in_channels()) as u32;
    let n_groups = n.div_ceil(variant.out_channels()) as u32;
    let span = |bytes: u32| (bytes + AmpBlock::READ_PAST_BYTES).div_ceil(pair) * pair;
    let input = m.interleaved_base;
    let output = input + span(k_groups * rows * 32);
    let weights = output + span(n_groups * (2 * (rows * 32 + 8) + 8));
    TileGemm {
        variant,
        rows,
        k_groups,
        n_groups,
        input,
        weights,
        output,
        bias: None,
        bias_in_output: false,
    }
}

fn run(variant: AmpVariant, rows: usize, k: usize, n: usize, seed: u64) {
    run_with(variant, rows, k, n, seed, None)
}

/// Where a product's initial partials are.
#[derive(Clone, Copy, PartialEq)]
enum Partials {
    /// A block of their own, 8 mod 16 bytes after the output.
    Block,
    /// In each output group's second half.
    InOutput,
}

/// With `bias`, the product starts from a random bias row (initial
/// partials where `bias` says).
fn run_with(
    variant: AmpVariant,
    rows: usize,
    k: usize,
    n: usize,
    seed: u64,
    partials: Option<Partials>,
) {
    let bias = partials.is_some();
    let mut g = place(variant, rows as u32, k, n);
    if partials == Some(Partials::Block) {
        let end = g.output + g.output_bytes() as u32 + AmpBlock::READ_PAST_BYTES;
        g.bias = Some(end.next_multiple_of(16) + 8);
        g.weights = (g.bias.unwrap() + g.bias_bytes() as u32 + AmpBlock::READ_PAST_BYTES)
            .next_multiple_of(16);
    }
    if partials == Some(Partials::InOutput) {
        g.bias = Some(g.partials_in_output());
        g.bias_in_output = true;
    }
    let elem = variant.input_elem();
    let (c, ko) = (variant.in_channels(), variant.out_channels());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut value = || rng.random_range(-1.0..1.0f64);
    let x: Vec<f64> =
        elem.decode(&elem.encode(&(0..rows * k).map(|_| value()).collect::<Vec<_>>()));
    let w: Vec<f64> = elem.decode(&elem.encode(&(0..k * n).map(|_| value()).collect::<Vec<_>>()));
    // X in panel order, zero-padded to whole panels.
    let mut xp = vec![0.0; g.k_groups as usize * rows * c];
    for r in 0..rows {
        for kk in 0..k {
            xp[((kk / c) * rows + r) * c + kk % c] = x[r * k + kk];
        }
    }
    let b: Vec<f64> = variant.output_elem().decode(
        &variant
            .output_elem()
            .encode(&(0..n).map(|_| value()).collect::<Vec<_>>()),
    );
    let wp = g.weight_panels(&w, k, n, 0.0);
    let (prog, counts) = g.program(3, &MachineModel::c600()).unwrap();
    let mut s = sim(&executable_of(&prog), Default::default());
    s.write_memory(3, g.output, &vec![0x5a; g.output_bytes() as usize])
        .unwrap();
    match partials {
        Some(Partials::Block) => {
            let block = g.bias_block(&b);
            s.write_memory(3, g.bias.unwrap(), &variant.output_elem().encode(&block))
                .unwrap();
        }
        Some(Partials::InOutput) => {
            // Each group's rows, where the row broadcast puts them.
            for j in 0..g.n_groups as usize {
                let row: Vec<f64> = (0..ko)
                    .map(|o| b.get(j * ko + o).copied().unwrap_or(0.0))
                    .collect();
                let rows_of: Vec<f64> = row.iter().copied().cycle().take(rows * ko).collect();
                s.write_memory(
                    3,
                    g.bias_group(j as u32).unwrap(),
                    &variant.output_elem().encode(&rows_of),
                )
                .unwrap();
            }
        }
        None => {}
    }
    s.write_memory(3, g.input, &elem.encode(&xp)).unwrap();
    s.write_memory(3, g.weights, &elem.encode(&wp)).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let out = variant
        .output_elem()
        .decode(&s.read_memory(3, g.output, g.output_bytes() as u32).unwrap());
    let u = variant.output_elem().unit_roundoff();
    for r in 0..rows {
        for j in 0..n {
            let b0 = if bias { b[j] } else { 0.0 };
            let (mut want, mut mag) = (b0, b0.abs());
            for kk in 0..k {
                want += x[r * k + kk] * w[kk * n + j];
                mag += (x[r * k + kk] * w[kk * n + j]).abs();
            }
            let at = (g.output_group((j / ko) as u32) - g.output) as usize
                / variant.output_elem().size();
            let got = out[at + r * ko + j % ko];
            // One rounding to the output type per input panel.
            let tol = (g.k_groups as f64 + 1.0) * u * mag + 1e-6;
            assert!(
                (got - want).abs() <= tol,
                "{variant:?} {rows}x{k}x{n}: Y[{r}][{j}] = {got}, want {want} (tolerance {tol:e})"
            );
        }
    }
    let simulated = s.profile().unwrap().total_cycles;
    let estimate = g.cycles(&counts);
    // Within 2 %, or a barrel round (6 cycles) on a short product: the
    // estimate charges every launch's loop branch as taken (a refill),
    // where the last launch's falls through.
    let slack = (estimate / 50).max(6);
    assert!(
        simulated <= estimate + slack && estimate <= simulated + slack,
        "{variant:?} {rows}x{k}x{n}: simulated {simulated} cycles, estimated {estimate}"
    );
}

#[test]
fn f16_products_of_odd_shapes() {
    run(AmpVariant::F16, 7, 40, 20, 1);
    run(AmpVariant::F16, 13, 16, 16, 2);
    run(AmpVariant::F16, 30, 72, 50, 3);
}

#[test]
fn products_start_from_a_bias() {
    let block = Some(Partials::Block);
    run_with(AmpVariant::F16, 7, 40, 20, 8, block);
    run_with(AmpVariant::F16, 13, 16, 16, 9, block);
    run_with(AmpVariant::F32, 9, 20, 12, 10, block);
}

/// The initial partials in the output groups' second halves (no block of
/// their own): one input panel (the first launch's output is the result)
/// and several (the partials are overwritten by the second launch).
#[test]
fn products_start_from_partials_in_the_output() {
    let in_output = Some(Partials::InOutput);
    run_with(AmpVariant::F16, 7, 40, 20, 11, in_output);
    run_with(AmpVariant::F16, 13, 16, 36, 12, in_output);
    run_with(AmpVariant::F32, 9, 20, 12, 13, in_output);
}

#[test]
fn f32_products_of_odd_shapes() {
    run(AmpVariant::F32, 9, 20, 12, 4);
    run(AmpVariant::F32, 25, 33, 17, 5);
}

/// The FP8 block's products: 32-channel input panels, f16 output groups,
/// from a bias (its initial partials), K and N not multiples of a panel.
#[test]
fn fp8_products_of_odd_shapes() {
    run(AmpVariant::F8, 7, 72, 20, 11);
    run_with(AmpVariant::F8, 13, 40, 48, 12, Some(Partials::Block));
}

#[test]
fn f16_with_f32_partials() {
    run(AmpVariant::F16F32Partials, 11, 48, 24, 6);
}

#[test]
fn one_panel_is_a_single_overwrite_launch() {
    let g = place(AmpVariant::F16, 6, 16, 16);
    assert_eq!(g.launches(), 1);
    run(AmpVariant::F16, 6, 16, 16, 7);
}

#[test]
fn weight_panels_are_in_launch_order_and_zero_padded() {
    let g = place(AmpVariant::F32, 1, 10, 9);
    // W[k][n] = 100 k + n.
    let w: Vec<i32> = (0..10 * 9).map(|i| 100 * (i / 9) + i % 9).collect();
    let p = g.weight_panels(&w, 10, 9, -1);
    assert_eq!((g.k_groups, g.n_groups), (2, 2));
    assert_eq!(p.len(), 4 * 8 * 8);
    // Launch (j=0, g=0): panel[o][c] = W[c][o].
    assert_eq!(&p[0..3], &[0, 100, 200]);
    assert_eq!(p[8], 1);
    // Launch (0, 1): channels 8, 9 then padding.
    assert_eq!(&p[64..67], &[800, 900, -1]);
    // Launch (1, 0): output column 8, then padded columns.
    assert_eq!(p[128], 8);
    assert_eq!(p[128 + 8], -1);
}
