//! Elementwise and cast codelets on the simulator: random inputs (never
//! zero) against the float64/exact references, and simulated cycles against
//! the instruction-count estimates.

mod common;

use common::{
    assert_near_estimate, assert_refused, assert_within, assert_worker_issues, executable_of,
};
use half::f16;
use ipuc_backend_ipu::codelets::amp::Elem;
use ipuc_backend_ipu::codelets::cast::{Cast, CastKind};
use ipuc_backend_ipu::codelets::elementwise::{Binary, BinaryOp, VecType};
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_ipu_arch::float8::f64_to_f8;
use ipuc_ipu_arch::{Executable, MachineModel};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use ipuc_runtime::sim::Simulator;
use ipuc_test_support::random::{nonzero, nonzeros};
use rand::{Rng, SeedableRng};

type Rng64 = rand::rngs::StdRng;

fn run_exe_and_check_cycles(
    exe: &Executable,
    est: u64,
    setup: impl FnOnce(&mut Simulator),
) -> Simulator {
    let mut s = sim(exe, Default::default());
    setup(&mut s);
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let cycles = s.profile().unwrap().total_cycles;
    let issues = s.profile().unwrap().tiles[0].worker_issues;
    assert_near_estimate(cycles, est, format_args!("worker issues {issues}"));
    s
}

/// The element format of an elementwise codelet's vectors.
fn elem(ty: VecType) -> Elem {
    match ty {
        VecType::F16 => Elem::F16,
        VecType::F32 => Elem::F32,
    }
}

#[test]
fn binary_ops_match_the_reference_and_estimate() {
    let mut rng = Rng64::seed_from_u64(11);
    let cases = [
        (BinaryOp::Add, VecType::F16),
        (BinaryOp::Mul, VecType::F16),
        (BinaryOp::Add, VecType::F32),
        (BinaryOp::Mul, VecType::F32),
        (BinaryOp::Axpy(-1.75), VecType::F32),
        // The FP8 block's residual add: exact scalings, scalings into
        // f16's subnormals (x * 2^e rounds) and to its largest power.
        (BinaryOp::ScaledAdd(-3), VecType::F16),
        (BinaryOp::ScaledAdd(4), VecType::F16),
        (BinaryOp::ScaledAdd(-22), VecType::F16),
        (BinaryOp::ScaledAdd(12), VecType::F16),
    ];
    // Interleaved and region-0 placements (x, y, out in different banks).
    let placements = [(0x80000, 0x90000, 0xa0000), (0x5c000, 0x60000, 0x68000)];
    for (op, ty) in cases {
        for len_words in [1u32, 5, 6, 37, 600] {
            for &(x, y, out) in &placements {
                let len = len_words * ty.lanes();
                let b = Binary {
                    op,
                    ty,
                    len,
                    x,
                    y,
                    out,
                };
                let xs = elem(ty).encode(&nonzeros(&mut rng, len as usize, 0.01, 8.0));
                let ys = elem(ty).encode(&nonzeros(&mut rng, len as usize, 0.01, 8.0));
                let (prog, counts) = b.program(2, &MachineModel::c600()).unwrap();
                // One bundle per word; the scaled add's two operations take two.
                let per_word = if matches!(op, BinaryOp::ScaledAdd(_)) {
                    2
                } else {
                    1
                };
                assert_eq!(counts.body, per_word, "{op:?}");
                let est = b.estimate_cycles().unwrap();
                let s = run_exe_and_check_cycles(&executable_of(&prog), est, |s| {
                    s.write_memory(2, x, &xs).unwrap();
                    s.write_memory(2, y, &ys).unwrap();
                });
                let got = elem(ty).decode(&s.read_memory(2, out, len * (8 / ty.lanes())).unwrap());
                let want = b.reference(&elem(ty).decode(&xs), &elem(ty).decode(&ys));
                assert_worker_issues(
                    s.profile().unwrap().tiles[0].worker_issues,
                    &b.worker_words(),
                    |n| counts.worker_issues(n),
                    "",
                );
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    // One rounding; f32 axpy may differ from the f64-then-f32
                    // double rounding by one unit in rare ties.
                    let tol = if matches!(op, BinaryOp::Axpy(_)) {
                        w.abs() * 2f64.powi(-23)
                    } else {
                        0.0
                    };
                    assert_within(
                        *g,
                        *w,
                        tol,
                        format_args!("{op:?} {ty:?} len {len} element {i}"),
                    );
                }
            }
        }
    }
}

#[test]
fn binary_parameters_are_checked() {
    let b = Binary {
        op: BinaryOp::Add,
        ty: VecType::F16,
        len: 6,
        x: 0x80000,
        y: 0x90000,
        out: 0xa0000,
    };
    assert_refused(&b, "multiple of 4");
    let b = Binary {
        op: BinaryOp::Axpy(2.0),
        ty: VecType::F16,
        len: 8,
        ..b
    };
    assert_refused(&b, "f32 only");
    let b = Binary {
        op: BinaryOp::ScaledAdd(2),
        ty: VecType::F32,
        ..b
    };
    assert_refused(&b, "f16 only");
    let b = Binary {
        op: BinaryOp::ScaledAdd(16),
        ty: VecType::F16,
        ..b
    };
    assert_refused(&b, "outside -24..=15");
}

#[test]
fn the_scaled_add_reference_rounds_the_scaling_then_the_sum() {
    // Hand-computed values of the two-step sequence the codelet runs.
    let b = |e| Binary {
        op: BinaryOp::ScaledAdd(e),
        ty: VecType::F16,
        len: 4,
        x: 0,
        y: 0,
        out: 0,
    };
    let unit = 2f64.powi(-24); // f16's smallest subnormal
                               // 1.5 units is a tie: x * 2^e rounds to 2 units (even) before the add.
    assert_eq!(b(-24).reference(&[1.5], &[0.0]), vec![2.0 * unit]);
    // 60000 * 2 overflows f16 before the add could bring it back.
    assert_eq!(b(1).reference(&[60000.0], &[-65504.0]), vec![f64::INFINITY]);
    // In range, one rounding: 3/2 + 1 exactly, 1/3 + 1 to the nearest f16.
    assert_eq!(b(-1).reference(&[3.0], &[1.0]), vec![2.5]);
    let third = f16::from_f64(1.0 / 3.0).to_f64();
    assert_eq!(
        b(0).reference(&[third], &[1.0]),
        vec![f16::from_f64(third + 1.0).to_f64()]
    );
}

#[test]
fn casts_match_the_exact_reference_and_estimate() {
    let mut rng = Rng64::seed_from_u64(5);
    let kinds = [
        CastKind::F32ToF16,
        CastKind::F16ToF8 { scale: 0 },
        CastKind::F16ToF8 { scale: -3 },
        CastKind::F16ToF8 { scale: 5 },
        CastKind::F8ToF16 { scale: 0 },
        CastKind::F8ToF16 { scale: -4 },
        CastKind::F8ToF16 { scale: 7 },
        CastKind::F16RoundF8 { scale: 0 },
        CastKind::F16RoundF8 { scale: -6 },
    ];
    for kind in kinds {
        for iterations in [1u32, 6, 7, 100] {
            let len = iterations * kind.elements_per_iteration();
            // The rounding in place (the way the lowering runs it) on odd
            // lengths; the FP8 -> f16 cast with its output in the input's
            // memory element (no instruction reads and writes).
            let output = match kind {
                CastKind::F16RoundF8 { .. } if iterations % 2 == 1 => 0x80000,
                CastKind::F8ToF16 { .. } => 0x80000 + 8 * len.next_multiple_of(8),
                _ => 0xa0000,
            };
            let c = Cast {
                kind,
                len,
                input: 0x80000,
                output,
            };
            let input: Vec<u8> = match kind {
                CastKind::F32ToF16 => (0..len)
                    .flat_map(|_| {
                        let v = nonzero(&mut rng, 1e-3, 1.0) * 10f64.powi(rng.random_range(-6..5));
                        (v as f32).to_le_bytes()
                    })
                    .collect(),
                CastKind::F16ToF8 { scale } => (0..len)
                    .flat_map(|_| {
                        let v = nonzero(&mut rng, 1e-3, 300.0) * 2f64.powi(scale);
                        f16::from_f64(v).to_bits().to_le_bytes()
                    })
                    .collect(),
                CastKind::F8ToF16 { .. } => (0..len)
                    .map(|_| f64_to_f8(nonzero(&mut rng, 0.002, 240.0)))
                    .map(|q| if q == 0 { 0x41 } else { q })
                    .collect(),
                // Values over the whole range at the scale, the saturating
                // ones, ties and subnormals among them, and a NaN.
                CastKind::F16RoundF8 { scale } => (0..len)
                    .map(|i| match i % 29 {
                        3 => f16::NAN,
                        5 => f16::from_f64(-1000.0 * 2f64.powi(scale)),
                        7 => f16::from_f64(1.0625 * 2f64.powi(scale)),
                        11 => f16::from_f64(3.0 * 2f64.powi(-12 + scale)),
                        _ => f16::from_f64(nonzero(&mut rng, 1e-3, 300.0) * 2f64.powi(scale)),
                    })
                    .flat_map(|h| h.to_bits().to_le_bytes())
                    .collect(),
            };
            let (_, osz) = kind.sizes();
            let (prog, counts) = c.program(2, &MachineModel::c600()).unwrap();
            let est = c.estimate_cycles().unwrap();
            let s = run_exe_and_check_cycles(&executable_of(&prog), est, |s| {
                s.write_memory(2, c.input, &input).unwrap();
            });
            let got = s.read_memory(2, c.output, len * osz).unwrap();
            assert_eq!(got, c.reference(&input), "{kind:?} len {len}");
            assert_worker_issues(
                s.profile().unwrap().tiles[0].worker_issues,
                &c.worker_iterations(),
                |n| counts.worker_issues(n),
                format_args!("{kind:?}"),
            );
        }
    }
}

/// The attention's f16 output groups cast to FP8 panels: two groups, or
/// one and zeros (a head's odd last group), in place (as the lowering
/// runs it, over the first group) and not, at 8-byte-aligned groups
/// (an AMP's output groups are 16 bytes apart plus 8), with NaN, the
/// saturating values, ties and subnormals among the inputs.
#[test]
fn pair_casts_match_the_exact_reference_and_estimate() {
    use ipuc_backend_ipu::codelets::pair_cast::PairCast;
    let mut rng = Rng64::seed_from_u64(11);
    for (rows, scale, second, in_place) in [
        (1, 0, true, true),
        (6, 7, true, false),
        (9, 0, false, true),
        (53, -3, true, true),
        (53, 7, false, false),
        (100, 2, true, true),
    ] {
        let stride = rows * 32 + 8;
        let first = 0x80008;
        let c = PairCast {
            rows,
            first,
            second: second.then_some(first + stride),
            output: if in_place { first } else { 0xa0000 },
            scale,
        };
        let group = |rng: &mut Rng64| -> Vec<u8> {
            (0..rows * 16)
                .map(|i| match i % 31 {
                    3 => f16::NAN,
                    5 => f16::from_f64(-1000.0 * 2f64.powi(scale)),
                    7 => f16::from_f64(1.0625 * 2f64.powi(scale)),
                    11 => f16::from_f64(3.0 * 2f64.powi(-12 + scale)),
                    _ => f16::from_f64(nonzero(rng, 1e-3, 300.0) * 2f64.powi(scale)),
                })
                .flat_map(|h| h.to_bits().to_le_bytes())
                .collect()
        };
        let (a, b) = (group(&mut rng), group(&mut rng));
        let (prog, counts) = c.program(2, &MachineModel::c600()).unwrap();
        let est = c.estimate_cycles().unwrap();
        let s = run_exe_and_check_cycles(&executable_of(&prog), est, |s| {
            s.write_memory(2, first, &a).unwrap();
            s.write_memory(2, first + stride, &b).unwrap();
        });
        let got = s.read_memory(2, c.output, rows * 32).unwrap();
        let what = format!("{rows} rows, scale {scale}, second {second}, in place {in_place}");
        assert_eq!(got, c.reference(&a, &b), "{what}");
        // The second group is never written.
        assert_eq!(
            s.read_memory(2, first + stride, rows * 32).unwrap(),
            b,
            "{what}"
        );
        assert_worker_issues(
            s.profile().unwrap().tiles[0].worker_issues,
            &c.worker_rows(),
            |n| counts.worker_issues(n),
            &what,
        );
    }
    let bad = PairCast {
        rows: 4,
        first: 0x80004,
        second: None,
        output: 0xa0000,
        scale: 0,
    };
    assert_refused(&bad, "8-byte aligned");
    assert_refused(
        &PairCast {
            rows: 0,
            first: 0x80000,
            ..bad.clone()
        },
        "at least one row",
    );
    assert_refused(
        &PairCast {
            scale: 32,
            first: 0x80000,
            ..bad
        },
        "outside -31..=31",
    );
}

#[test]
fn cast_parameters_are_checked() {
    let c = Cast {
        kind: CastKind::F16ToF8 { scale: 40 },
        len: 8,
        input: 0x80000,
        output: 0xa0000,
    };
    assert_refused(&c, "outside -31..=31");
    let c = Cast {
        kind: CastKind::F32ToF16,
        len: 4,
        input: 0x80008,
        output: 0xa0000,
    };
    assert_refused(&c, "16-byte aligned");
}

#[test]
fn gelu_matches_float64_within_its_documented_bound_and_estimate() {
    use ipuc_backend_ipu::codelets::gelu::{Gelu, GeluForm, DEGREE};
    let mut rng = Rng64::seed_from_u64(21);
    for form in [GeluForm::Erf, GeluForm::Tanh] {
        for words in [1u32, 7, 40] {
            for in_place in [false, true] {
                let len = words * 4;
                let input = 0x80000;
                let output = if in_place { input } else { 0xa0000 };
                let g = Gelu {
                    form,
                    len,
                    input,
                    output,
                };
                let mut xs: Vec<f16> = (0..len)
                    .map(|_| f16::from_f64(nonzero(&mut rng, 0.001, 6.0)))
                    .collect();
                // The clamp edges, the tails and large values.
                let specials = [4.5, -4.5, 4.49, -7.0, 12.0, -300.0, 6.0e4, -6.0e4];
                for (i, v) in specials.iter().enumerate().take(len as usize) {
                    xs[i] = f16::from_f64(*v);
                }
                let bytes: Vec<u8> = xs.iter().flat_map(|h| h.to_bits().to_le_bytes()).collect();
                let (prog, counts) = g.program(2, &MachineModel::c600()).unwrap();
                // Per word. Erf: 2 x (conversion, abs, clamp, 2 (DEGREE-1)+3
                // Horner steps, tail clamp, x*p, +x, *0.5, back to f16)
                // and the second store: 4 DEGREE + 19 bundles. Tanh: 2 x
                // (conversion, x^2, axpy, *x, to f16), the product, and two
                // sigmoids of poplibs' SIGMOID-half cost each.
                let sigm = ipuc_ipu_arch::pipeline::issue_slots(
                    ipuc_ipu_arch::Opcode::F16v2Sigm,
                    &MachineModel::c600(),
                );
                let body = match form {
                    GeluForm::Erf => 4 * DEGREE as u64 + 19,
                    GeluForm::Tanh => 11 + 2 * u64::from(sigm),
                };
                assert_eq!(counts.body, body);
                let est = g.estimate_cycles().unwrap();
                let s = run_exe_and_check_cycles(&executable_of(&prog), est, |s| {
                    s.write_memory(2, input, &bytes).unwrap();
                });
                let got = Elem::F16.decode(&s.read_memory(2, output, len * 2).unwrap());
                for (i, (x, gv)) in xs.iter().zip(&got).enumerate() {
                    let want = g.reference(*x);
                    let tol = g.tolerance(*x, want);
                    assert!(
                        (gv - want).abs() <= tol,
                        "{form:?} element {i}: gelu({x}) = {gv}, want {want} (tolerance {tol:e})"
                    );
                }
                assert_worker_issues(
                    s.profile().unwrap().tiles[0].worker_issues,
                    &g.worker_words(),
                    |n| counts.worker_issues(n),
                    "",
                );
            }
        }
    }
}

#[test]
fn gelu_to_fp8_panels_matches_its_sequence_and_float64_and_estimate() {
    use ipuc_backend_ipu::codelets::gelu::{GeluForm, DEGREE};
    use ipuc_backend_ipu::codelets::gelu_f8::{sequence, GeluF8};
    use ipuc_ipu_arch::float8::decode_scaled;
    let mut rng = Rng64::seed_from_u64(23);
    let tanh = ipuc_ipu_arch::pipeline::issue_slots(
        ipuc_ipu_arch::Opcode::F16v2Tanh,
        &MachineModel::c600(),
    );
    // Rows giving workers shares of 0, 1 and uneven ones; in place and
    // apart; input exponents (down to an FP8 product's) and output scales
    // of both signs.
    for (form, rows, pairs, in_place, input_exp, output_scale) in [
        (GeluForm::Tanh, 1u32, 1u32, false, 0, 0),
        (GeluForm::Tanh, 5, 2, true, -3, -1),
        (GeluForm::Tanh, 6, 1, false, 2, 3),
        (GeluForm::Tanh, 7, 3, true, -1, -2),
        (GeluForm::Tanh, 13, 2, false, -14, -3),
        (GeluForm::Erf, 1, 2, true, -14, -2),
        (GeluForm::Erf, 7, 1, false, 3, -3),
        (GeluForm::Erf, 13, 2, true, 0, -1),
    ] {
        // Groups padded apart (as a tile's AMP output may be).
        let group_stride = rows * 32 + 32;
        let input = 0x80000;
        let (output, pair_stride) = if in_place {
            (input, 2 * group_stride)
        } else {
            (0xa0004, rows * 32 + 8)
        };
        let g = GeluF8 {
            form,
            rows,
            pairs,
            input,
            group_stride,
            input_exp,
            output,
            pair_stride,
            output_scale,
        };
        // True inputs x in +-6 and a few specials, stored as u = x 2^-e.
        let specials: [f64; 6] = [4.5, -4.5, -7.0, 12.0, -300.0, 0.0];
        let groups: Vec<Vec<f16>> = (0..2 * pairs)
            .map(|_| {
                (0..rows * 16)
                    .map(|i| {
                        // (The AMP's f16 output bounds |u|: at e = -14
                        // the true values stay within +-4.)
                        let limit = 6.0f64.min(65504.0 * 2f64.powi(input_exp));
                        let x = specials
                            .get(i as usize)
                            .copied()
                            .filter(|x| x.abs() < 65504.0 * 2f64.powi(input_exp))
                            .unwrap_or_else(|| nonzero(&mut rng, 0.001, limit));
                        f16::from_f64(x * 2f64.powi(-input_exp))
                    })
                    .collect()
            })
            .collect();
        let (prog, counts) = g.program(2, &MachineModel::c600()).unwrap();
        // Per pass (half a row): 4 words, and the last word's store. A
        // tanh word: 8 f16 bundles (x, x^2, c1, c0, z, x t, + x, the
        // conversion) and two tanh; an erf word: the f16 erf GELU's
        // bundles, the erf form's scaling of each f32 pair to x and the
        // conversion.
        let per_word = match form {
            GeluForm::Tanh => 8 + 2 * u64::from(tanh),
            // Each f32 pair: the f16 erf GELU's 2 DEGREE + 9, and the scaling.
            GeluForm::Erf => 2 * (2 * DEGREE as u64 + 9 + 1) + 1,
        };
        assert_eq!(counts.body, 4 * per_word + 1, "{form:?}");
        // The outputs and the 8 bytes after the last one.
        let out_span = pairs * pair_stride;
        let guard = 0xee;
        let s =
            run_exe_and_check_cycles(&executable_of(&prog), g.estimate_cycles().unwrap(), |s| {
                if !in_place {
                    s.write_memory(2, output, &vec![guard; out_span as usize])
                        .unwrap();
                }
                for (k, grp) in groups.iter().enumerate() {
                    let bytes: Vec<u8> =
                        grp.iter().flat_map(|h| h.to_bits().to_le_bytes()).collect();
                    s.write_memory(2, input + k as u32 * group_stride, &bytes)
                        .unwrap();
                }
            });
        let case = format!("{form:?}, {rows} rows, {pairs} pairs, in place {in_place}");
        assert_worker_issues(
            s.profile().unwrap().tiles[0].worker_issues,
            &g.worker_rows(),
            |n| counts.worker_issues(n, pairs),
            &case,
        );
        for q in 0..pairs {
            let at = output + q * pair_stride;
            let got = s.read_memory(2, at, rows * 32).unwrap();
            for r in 0..rows as usize {
                for half in 0..2 {
                    for c in 0..16 {
                        let u = groups[2 * q as usize + half][16 * r + c];
                        let code = got[32 * r + 16 * half + c];
                        assert_eq!(
                            code,
                            sequence(form, u, input_exp, output_scale),
                            "{case}: pair {q} row {r} group {half} channel {c}, u {u}"
                        );
                        let want = g.reference(u);
                        assert!(
                            want.abs() < 200.0 * 2f64.powi(output_scale),
                            "{case}: saturates"
                        );
                        let value = decode_scaled(code, output_scale);
                        let tol = g.tolerance(u, want);
                        assert!(
                            (value - want).abs() <= tol,
                            "{case}: gelu({u} * 2^{input_exp}) = {value}, want {want} ({tol:e})"
                        );
                    }
                }
            }
            if in_place {
                // The pair's second group is read, never written.
                let second = s
                    .read_memory(2, input + (2 * q + 1) * group_stride, rows * 32)
                    .unwrap();
                let bytes: Vec<u8> = groups[2 * q as usize + 1]
                    .iter()
                    .flat_map(|h| h.to_bits().to_le_bytes())
                    .collect();
                assert_eq!(second, bytes, "{case}: pair {q}'s second group");
            } else {
                // The gap after each pair's output is untouched.
                let gap = s
                    .read_memory(2, at + rows * 32, pair_stride - rows * 32)
                    .unwrap();
                assert!(gap.iter().all(|&b| b == guard), "{case}: after pair {q}");
            }
        }
    }
}
