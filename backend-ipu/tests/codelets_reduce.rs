//! Row-reduction codelets on the simulator, and direct tests of the
//! accumulator instructions no codelet uses (`f16v4cmac`, `f32v4acc`,
//! `f32v2aop`).

mod common;

use common::{
    assert_launch_as_estimated, assert_refused, assert_rows_as_estimated, assert_within, f16_bytes,
    f16_values, signed_f16, signed_f16s, simulate,
};
use half::f16;
use ipuc_backend_ipu::codelets::layernorm::{LayerNorm, Variance};
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_backend_ipu::codelets::reduce::{ReduceOp, RowReduce};
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use rand::{Rng, SeedableRng};

#[test]
fn row_sums_and_maxima_match_the_reference_and_estimate() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(31);
    for op in [ReduceOp::Sum, ReduceOp::Max] {
        for (rows, cols) in [(1u32, 8u32), (6, 16), (7, 1152), (20, 64)] {
            let r = RowReduce {
                op,
                rows,
                cols,
                input: 0x80000,
                output: 0xb0000,
            };
            let xs = signed_f16s(&mut rng, rows * cols, 0.01, 30.0);
            let (prog, counts) = r.program(1, &MachineModel::c600()).unwrap();
            let s = simulate(&prog, 1, &[(r.input, &f16_bytes(&xs))]);
            let got = f32s(&s, 1, r.output, rows);
            for (i, (g, (w, mag))) in got.iter().zip(r.reference(&xs)).enumerate() {
                let what = format_args!("{op:?} {rows}x{cols} row {i}");
                assert_within(f64::from(*g), w, r.tolerance(mag), what);
            }
            assert_rows_as_estimated(&s, &r, &counts, format_args!("{op:?} {rows}x{cols}"));
        }
    }
}

const WORKER: &str = "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    run $m0, $m1, 0\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\nworker:\n";

/// The `n` f32 values at `addr` of `tile`.
fn f32s(s: &ipuc_runtime::sim::Simulator, tile: u32, addr: u32, n: u32) -> Vec<f32> {
    s.read_memory(tile, addr, 4 * n)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[test]
fn cmac_acc_and_aop_accumulate_as_documented() {
    // x (4 f16) at +0, y (4 f16) at +8, a quad of 4 f32 at +16, a pair at +32, b pair at +40.
    let text = format!(
        "{WORKER}    ld64 $a0:1, $mvertex_base, $mzero, 0\n    ld64 $a2:3, $mvertex_base, $mzero, 1\n\
         f16v4cmac $a0:1, $a2:3\n    f16v4cmac $a0:1, $a2:3\n\
         f32v2gina $a4:5, $azeros, 0\n    st64 $a4:5, $mvertex_base, $mzero, 8\n\
         f32v2gina $a4:5, $azeros, 1\n    st64 $a4:5, $mvertex_base, $mzero, 9\n\
         ld64 $a4:5, $mvertex_base, $mzero, 2\n    ld64 $a6:7, $mvertex_base, $mzero, 3\n\
         f32v4acc $a4:7\n    f32v4acc $a4:7\n    f32v4acc $a12:15\n\
         f32v2gina $a8:9, $azeros, 0\n    st64 $a8:9, $mvertex_base, $mzero, 10\n\
         f32v2gina $a8:9, $azeros, 1\n    st64 $a8:9, $mvertex_base, $mzero, 11\n\
         ld64 $a0:1, $mvertex_base, $mzero, 4\n    ld64 $a2:3, $mvertex_base, $mzero, 5\n\
         f32v2aop $a0:1, $a2:3, 0\n    f32v2aop $a0:1, $a2:3, 0\n\
         f32v2gina $a8:9, $azeros, 0\n    st64 $a8:9, $mvertex_base, $mzero, 12\n\
         f32v2gina $a8:9, $azeros, 1\n    st64 $a8:9, $mvertex_base, $mzero, 13\n\
         f16v8acc $a4:7\n    f32v2gina $a8:9, $azeros, 0\n    st64 $a8:9, $mvertex_base, $mzero, 14\n    exitz $mzero\n"
    );
    let exe = program(&[(0, &text)], vec![]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    for _ in 0..10 {
        let x: Vec<f16> = (0..4)
            .map(|_| f16::from_f64(rng.random_range(0.1..4.0)))
            .collect();
        let y: Vec<f16> = (0..4)
            .map(|_| f16::from_f64(-rng.random_range(0.1..4.0)))
            .collect();
        let q: Vec<f32> = (0..4).map(|_| rng.random_range(-100.0f32..100.0)).collect();
        let a: Vec<f32> = (0..2).map(|_| rng.random_range(-10.0f32..10.0)).collect();
        let b: Vec<f32> = (0..2).map(|_| rng.random_range(0.5f32..10.0)).collect();
        let mut data: Vec<u8> = x
            .iter()
            .chain(&y)
            .flat_map(|h| h.to_bits().to_le_bytes())
            .collect();
        data.extend(q.iter().chain(&a).chain(&b).flat_map(|v| v.to_le_bytes()));
        let mut s = sim(&exe, Default::default());
        s.write_memory(0, 0x70000, &data).unwrap();
        s.run().unwrap_or_else(|e| panic!("{e}"));
        let cmac = f32s(&s, 0, 0x70040, 4);
        for k in 0..4 {
            // Two products, each exact in f32, summed once: exact.
            let p = x[k].to_f32() * y[k].to_f32();
            assert_eq!(cmac[k], p + p, "cmac lane {k}");
        }
        let acc = f32s(&s, 0, 0x70050, 4);
        for k in 0..4 {
            // $a12:15 reads $a12:13 and the zero pair $azeros.
            assert_eq!(acc[k], q[k] + q[k], "f32v4acc lane {k}");
        }
        let aop = f32s(&s, 0, 0x70060, 4);
        for i in 0..2 {
            for j in 0..2 {
                let p = a[i] * b[j];
                assert_eq!(aop[2 * i + j], p + p, "aop {i}{j}");
            }
        }
        // f16v8acc of the quad $a4:7 (q's f32 bits read as 8 halves): lanes 0, 1.
        let acc8 = f32s(&s, 0, 0x70070, 2);
        let halves: Vec<f32> = q
            .iter()
            .flat_map(|v| {
                let b = v.to_bits();
                [
                    f16::from_bits(b as u16).to_f32(),
                    f16::from_bits((b >> 16) as u16).to_f32(),
                ]
            })
            .collect();
        let ok = |g: f32, w: f32| g == w || (g.is_nan() && w.is_nan());
        assert!(
            ok(acc8[0], halves[0]) && ok(acc8[1], halves[1]),
            "f16v8acc {acc8:?} vs {:?}",
            &halves[..2]
        );
    }
}

#[test]
fn layernorm_matches_float64_and_its_estimate() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(41);
    for (rows, cols, in_place) in [
        (1u32, 8u32, false),
        (6, 64, true),
        (7, 1152, false),
        (13, 24, false),
    ] {
        let output = if in_place { 0x80000 } else { 0xc0000 };
        let ln = layernorm(rows, cols, output, None);
        let (xs, gamma, beta) = layernorm_inputs(&mut rng, rows, cols);
        let out = run_layernorm(&ln, &xs, &gamma, &beta, rows * cols * 2);
        let got = f16_values(&out);
        for (i, (g, (w, mag))) in got.iter().zip(ln.reference(&xs, &gamma, &beta)).enumerate() {
            assert_within(
                *g,
                w,
                ln.tolerance(mag),
                format_args!("{rows}x{cols} element {i}"),
            );
        }
    }
}

/// LayerNorm inputs `(x, gamma, beta)` for `[rows, cols]`: rows with an
/// offset mean, as activations have.
fn layernorm_inputs(
    rng: &mut rand::rngs::StdRng,
    rows: u32,
    cols: u32,
) -> (Vec<f16>, Vec<f16>, Vec<f16>) {
    let xs: Vec<f16> = (0..rows * cols)
        .map(|i| f16::from_f64(signed_f16(rng, 0.01, 3.0).to_f64() + f64::from(i / cols % 3)))
        .collect();
    let gamma = signed_f16s(rng, cols, 0.5, 2.0);
    let beta = signed_f16s(rng, cols, 0.01, 1.0);
    (xs, gamma, beta)
}

/// The LayerNorm the tests run: eps 1e-6, the input at 0x80000, gamma and
/// beta at 0xb0000 and 0xb8000.
fn layernorm(rows: u32, cols: u32, output: u32, output_f8_scale: Option<i32>) -> LayerNorm {
    LayerNorm {
        rows,
        cols,
        eps: 1e-6,
        affine: true,
        input: 0x80000,
        gamma: 0xb0000,
        beta: 0xb8000,
        output,
        output_f8_scale,
        variance: Variance::for_output(output_f8_scale.is_some()),
        output_panels: None,
        x_groups: None,
    }
}

/// Runs `ln` on tile 3 of the simulator, holds its cycles and worker
/// issues to its estimate and returns the first `bytes` of its output.
fn run_layernorm(ln: &LayerNorm, xs: &[f16], gamma: &[f16], beta: &[f16], bytes: u32) -> Vec<u8> {
    let (prog, counts) = ln.program(3, &MachineModel::c600()).unwrap();
    let (x, g, b) = (f16_bytes(xs), f16_bytes(gamma), f16_bytes(beta));
    let s = simulate(&prog, 3, &[(ln.input, &x), (ln.gamma, &g), (ln.beta, &b)]);
    assert_rows_as_estimated(
        &s,
        ln,
        &counts,
        format_args!("{}x{} {:?}", ln.rows, ln.cols, ln.output_f8_scale),
    );
    s.read_memory(3, ln.output, bytes).unwrap()
}

#[test]
fn layernorm_with_fp8_output_converts_the_f16_result_and_matches_float64() {
    use ipuc_ipu_arch::float8::{decode_scaled, encode_scaled};
    let mut rng = rand::rngs::StdRng::seed_from_u64(43);
    // Shares of 0 (rows < 6), 1 and uneven ones; scales that put values
    // into the FP8 subnormals (3) and use the upper range (-3).
    // Either variance (the moments' is the lowering's for FP8 output),
    // the f16 result of the same one converted.
    for ((rows, cols, scale), variance) in [
        (1u32, 8u32, 0),
        (5, 40, -3),
        (6, 64, 3),
        (7, 1152, -1),
        (13, 24, 2),
    ]
    .into_iter()
    .flat_map(|case| [(case, Variance::Deviations), (case, Variance::Moments)])
    {
        let f16_ln = LayerNorm {
            variance,
            ..layernorm(rows, cols, 0xc0000, None)
        };
        // 4-byte (not 8-byte) aligned: the FP8 output needs only st32.
        let ln = LayerNorm {
            output: 0xd0004,
            output_f8_scale: Some(scale),
            ..f16_ln.clone()
        };
        let (xs, gamma, beta) = layernorm_inputs(&mut rng, rows, cols);
        let run = |ln: &LayerNorm, bytes: u32| run_layernorm(ln, &xs, &gamma, &beta, bytes);
        let out16 = f16_values(&run(&f16_ln, rows * cols * 2));
        let codes = run(&ln, rows * cols);
        for (i, ((&code, o), (w, mag))) in codes
            .iter()
            .zip(&out16)
            .zip(ln.reference(&xs, &gamma, &beta))
            .enumerate()
        {
            // Bit-exact: the f16 variant's result, converted.
            assert_eq!(
                code,
                encode_scaled(*o, scale),
                "{rows}x{cols} {variance:?} element {i}: f16 result {o}"
            );
            let what = format!("{rows}x{cols} {variance:?} element {i}");
            assert_within(*o, w, ln.tolerance(mag), &what);
            let got = decode_scaled(code, scale);
            assert_within(got, w, ln.tolerance_f8(w, mag), what);
        }
    }
}

/// The moments' variance (`E[x^2] - mean^2` in f32) where the mean is
/// large against the spread: rows of `m` plus values of magnitude up to 3
/// for `|m|` up to 60 (the squares' sum cancels about 1,200 times the
/// variance) still match float64
/// within the f16 chain's tolerance, as the module doc says, and so does
/// the deviations' form.
#[test]
fn layernorm_moments_variance_holds_where_the_mean_is_large() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(46);
    let (rows, cols) = (6u32, 1152u32);
    for mean in [0.0, 8.0, -30.0, 60.0] {
        let xs: Vec<f16> = (0..rows * cols)
            .map(|_| f16::from_f64(mean + signed_f16(&mut rng, 0.01, 3.0).to_f64()))
            .collect();
        let (_, gamma, beta) = layernorm_inputs(&mut rng, rows, cols);
        for variance in [Variance::Deviations, Variance::Moments] {
            let ln = LayerNorm {
                variance,
                ..layernorm(rows, cols, 0xc0000, None)
            };
            let out = f16_values(&run_layernorm(&ln, &xs, &gamma, &beta, rows * cols * 2));
            for (i, (o, (w, mag))) in out.iter().zip(ln.reference(&xs, &gamma, &beta)).enumerate() {
                let what = format!("mean {mean} {variance:?} element {i}");
                assert_within(*o, w, ln.tolerance(mag), what);
            }
        }
    }
}

/// Output as panels (the layout an LN tile's exchange sends from): the
/// same bytes as the row output, each row's 32-byte pieces a stride
/// apart, bit for bit, f16 and FP8; the gaps of a tile with fewer rows
/// than the stride holds are left alone.
#[test]
fn layernorm_panel_output_rearranges_the_row_output() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(44);
    for (rows, cols, scale, stride) in [
        (1u32, 32u32, None, 32u32),
        (6, 1152, None, 192),
        (4, 64, None, 192),
        (6, 64, Some(-1), 192),
        (5, 1152, Some(2), 192),
        (13, 96, Some(0), 13 * 32 + 64),
    ] {
        let rows_ln = layernorm(rows, cols, 0xc0000, scale);
        let ln = LayerNorm {
            output: 0xd0000,
            output_panels: Some(stride),
            ..rows_ln.clone()
        };
        let e = ln.output_elem_bytes();
        let (xs, gamma, beta) = layernorm_inputs(&mut rng, rows, cols);
        let by_rows = run_layernorm(&rows_ln, &xs, &gamma, &beta, rows * cols * e);
        let extent = ln.output_bytes() as u32;
        assert_eq!(extent, (cols * e / 32 - 1) * stride + rows * 32);
        let panels = run_layernorm(&ln, &xs, &gamma, &beta, extent);
        let what = format!("{rows}x{cols} {scale:?} stride {stride}");
        let mut written = vec![false; extent as usize];
        for r in 0..rows {
            for c in 0..cols {
                let at = (ln.output_at(r, c) - ln.output) as usize;
                let from = ((r * cols + c) * e) as usize;
                assert_eq!(
                    panels[at..at + e as usize],
                    by_rows[from..from + e as usize],
                    "{what}: element ({r}, {c})"
                );
                written[at..at + e as usize].fill(true);
            }
        }
        // Every byte not an element's is as the simulator's memory
        // starts: zero.
        for (i, w) in written.iter().enumerate() {
            assert!(*w || panels[i] == 0, "{what}: byte {i} of a gap written");
        }
    }
}

/// Without scale and shift (folded into the next product), LayerNorm
/// writes what the affine form writes with a scale of ones and a shift
/// of zeros, bit for bit, in every output form, without reading either
/// (they hold random values here); its apply pass takes 2 bundles a word
/// (f16) or 3 (FP8) for 4 and 5, its cycles as estimated.
#[test]
fn layernorm_without_scale_and_shift_is_the_affine_one_with_ones_and_zeros() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(45);
    for (rows, cols, scale, panels) in [
        (1u32, 8u32, None, None),
        (7, 1152, None, None),
        (5, 40, Some(-3), None),
        (13, 24, Some(2), None),
        (6, 1152, None, Some(192u32)),
        (6, 1152, Some(0), Some(192)),
        (4, 64, Some(-1), Some(192)),
    ] {
        let out = if scale.is_some() { 0xd0004 } else { 0xd0000 };
        let affine = LayerNorm {
            output_panels: panels,
            ..layernorm(
                rows,
                cols,
                if panels.is_some() { 0xd0000 } else { out },
                scale,
            )
        };
        let plain = LayerNorm {
            affine: false,
            ..affine.clone()
        };
        assert_eq!(
            plain.apply_bundles_per_word() + 2,
            affine.apply_bundles_per_word()
        );
        let (xs, gamma, beta) = layernorm_inputs(&mut rng, rows, cols);
        let ones = vec![f16::ONE; cols as usize];
        let zeros = vec![f16::ZERO; cols as usize];
        let bytes = affine.output_bytes() as u32;
        let want = run_layernorm(&affine, &xs, &ones, &zeros, bytes);
        let got = run_layernorm(&plain, &xs, &gamma, &beta, bytes);
        assert_eq!(got, want, "{rows}x{cols} {scale:?} panels {panels:?}");
    }
}

/// x's copy in 16-channel groups, made in the FP8 apply pass's free main
/// slot: every row's group `g` at `g * stride + 32 r`, the same output
/// and the same cycles (the estimate held to them) as without the copy,
/// nothing written past the copy's bytes; any rows a worker (0, 1, 2:
/// the pointer carried from row to row).
#[test]
fn layernorm_copies_x_into_groups_for_free() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(46);
    for (rows, cols, stride) in [(6u32, 1152u32, 192u32), (4, 64, 128), (13, 96, 448)] {
        let plain = LayerNorm {
            affine: false,
            output_panels: Some(stride),
            ..layernorm(rows, cols, 0xd0000, Some(0))
        };
        let at = 0xa0000;
        let copying = LayerNorm {
            x_groups: Some((at, stride)),
            ..plain.clone()
        };
        let (xs, gamma, beta) = layernorm_inputs(&mut rng, rows, cols);
        let bytes = plain.output_bytes() as u32;
        let want = run_layernorm(&plain, &xs, &gamma, &beta, bytes);
        let (prog, counts) = copying.program(3, &MachineModel::c600()).unwrap();
        let (x, g, b) = (f16_bytes(&xs), f16_bytes(&gamma), f16_bytes(&beta));
        // The copy's region, and a word past it, filled first.
        let copy_bytes = copying.x_copy_bytes();
        let fill = vec![0xa5u8; copy_bytes as usize + 64];
        let sim = simulate(
            &prog,
            3,
            &[
                (copying.input, &x),
                (copying.gamma, &g),
                (copying.beta, &b),
                (at, &fill),
            ],
        );
        assert_rows_as_estimated(
            &sim,
            &copying,
            &counts,
            format_args!("{rows}x{cols} copying"),
        );
        assert_eq!(sim.read_memory(3, copying.output, bytes).unwrap(), want);
        let copy = sim.read_memory(3, at, copy_bytes + 64).unwrap();
        for r in 0..rows as usize {
            for g in 0..(cols / 16) as usize {
                let to = g * stride as usize + 32 * r;
                let from = 2 * (r * cols as usize + 16 * g);
                assert_eq!(
                    copy[to..to + 32],
                    x[from..from + 32],
                    "{rows}x{cols}: row {r} group {g}"
                );
            }
        }
        assert!(
            copy[copy_bytes as usize..].iter().all(|&b| b == 0xa5),
            "{rows}x{cols}: written past the copy's {copy_bytes} bytes"
        );
        // No bundle more a word: a worker's state load, a step a row and
        // the launch's extra state word (a worker issues every 6 cycles).
        let (_, plain_counts) = plain.program(3, &MachineModel::c600()).unwrap();
        assert_eq!(
            copying.apply_bundles_per_word(),
            plain.apply_bundles_per_word()
        );
        assert!(
            copying.cycles(&counts)
                <= plain.cycles(&plain_counts) + 6 * (u64::from(rows.div_ceil(6)) + 2),
            "{rows}x{cols}: {} cycles copying, {} without",
            copying.cycles(&counts),
            plain.cycles(&plain_counts)
        );
    }
    // Refused: with scale and shift, or f16 output (no free slot).
    let ln = LayerNorm {
        output_panels: Some(192),
        x_groups: Some((0xa0000, 192)),
        ..layernorm(6, 64, 0xd0000, Some(0))
    };
    assert_refused(&ln, "free slot");
}

#[test]
fn layernorm_panel_output_is_checked() {
    let ln = LayerNorm {
        output: 0xc0000,
        output_panels: Some(192),
        ..layernorm(6, 24, 0xc0000, None)
    };
    assert_refused(&ln, "whole 32-byte pieces");
    let ln = LayerNorm {
        cols: 64,
        output_panels: Some(160),
        ..ln
    };
    assert_refused(&ln, "past the 6 rows");
    let ln = LayerNorm {
        cols: 1152,
        output_panels: Some(32 * 1024),
        ..ln
    };
    assert_refused(&ln, "too far apart");
}

#[test]
fn layernorm_fp8_output_is_checked() {
    let ln = layernorm(4, 16, 0x80000 + 4 * 16 * 2 - 4, Some(0));
    assert_refused(&ln, "overlaps the input");
    let ln = LayerNorm {
        output: 0xc0002,
        ..ln
    };
    assert_refused(&ln, "4-byte aligned");
    let ln = LayerNorm {
        output: 0xc0000,
        output_f8_scale: Some(32),
        ..ln
    };
    assert_refused(&ln, "outside -31..=31");
    // Apply pass: 5 bundles per word against 4 for f16 output.
    let f16_ln = LayerNorm {
        output_f8_scale: None,
        ..ln.clone()
    };
    let f8_ln = LayerNorm {
        output_f8_scale: Some(-2),
        ..ln
    };
    assert_eq!(f16_ln.apply_bundles_per_word(), 4);
    assert_eq!(f8_ln.apply_bundles_per_word(), 5);
}

#[test]
fn softmax_matches_float64_and_its_estimate() {
    use ipuc_backend_ipu::codelets::softmax::Softmax;
    let mut rng = rand::rngs::StdRng::seed_from_u64(51);
    for (rows, cols) in [(1u32, 4u32), (6, 16), (7, 732), (13, 64)] {
        let sm = Softmax {
            rows,
            cols,
            input: 0x80000,
            output: 0xa0000,
        };
        // Logits with a spread that makes some probabilities tiny.
        let xs = signed_f16s(&mut rng, rows * cols, 0.01, 12.0);
        let (prog, (counts, body)) = sm.program(2, &MachineModel::c600()).unwrap();
        // Per row: C/4 - 1 max bundles, C/4 exp passes of 2 x (conversion,
        // subtraction, two `f32exp`, rounding, sum), 2 C/4 scale bundles
        // (hand-counted from the algorithm, independent of the emitter).
        let exp = u64::from(ipuc_ipu_arch::pipeline::issue_slots(
            ipuc_ipu_arch::Opcode::F32Exp,
            &MachineModel::c600(),
        ));
        let w = u64::from(cols / 4);
        assert_eq!(body, (w - 1) + (8 + 4 * exp) * w + 2 * w);
        let s = simulate(&prog, 2, &[(sm.input, &f16_bytes(&xs))]);
        let got = f16_values(&s.read_memory(2, sm.output, rows * cols * 2).unwrap());
        for (i, (g, w)) in got.iter().zip(sm.reference(&xs)).enumerate() {
            assert_within(
                *g,
                w,
                sm.tolerance(w),
                format_args!("{rows}x{cols} element {i}"),
            );
        }
        assert_launch_as_estimated(
            &s,
            sm.estimate_cycles().unwrap(),
            &sm.worker_rows(),
            |n| counts.worker_issues(n, body),
            format_args!("{rows}x{cols}"),
        );
    }
}
