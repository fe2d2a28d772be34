//! Attention's tile codelets on the simulator: the softmax over AMP output
//! panels, against float64.

mod common;

use common::{
    assert_launch_as_estimated, assert_refused, assert_within, f16_bytes, f16_values, simulate,
};
use half::f16;
use ipuc_backend_ipu::codelets::amp::Elem;
use ipuc_backend_ipu::codelets::attention::MASKED_F16;
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_backend_ipu::codelets::softmax_panels::{SoftmaxPanels, GROUP};
use ipuc_ipu_arch::MachineModel;
use rand::{Rng, SeedableRng};

/// The padding value the lowering puts in the scores of keys that do not
/// exist (the S product's initial partials).
const MASKED: f32 = -1e30;

#[test]
fn softmax_over_f32_panels_matches_float64_and_its_estimate() {
    softmax_over_panels(Elem::F32, 71);
}

#[test]
fn softmax_over_f16_panels_matches_float64_and_its_estimate() {
    softmax_over_panels(Elem::F16, 74);
}

/// The softmax from `scores` panels against float64, its issue slots per
/// group against the module doc's count and its cycles against its
/// estimate.
fn softmax_over_panels(scores: Elem, seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let f16_scores = scores == Elem::F16;
    // (rows, groups, masked columns at the end of each row, scale, extra
    // bytes between groups, statistics, normalised, in place): one group;
    // several rows per worker; a row count that leaves workers idle;
    // attention's 729 keys (46 groups, 7 padded) with so400m's scale
    // 1/sqrt(72); the statistics a key-split attention tile writes, with
    // masked keys in the block, normalised and (as a key-split tile
    // leaves P for its combination) not; f16 scores overwritten in place,
    // with an FP8 block's scale 2^-7.
    for (rows, groups, masked, scale, gap, stats, normalise, in_place) in [
        (1u32, 1u32, 0u32, 1.0f32, 0u32, false, true, false),
        (13, 3, 5, 0.25, 8, true, true, false),
        (4, 2, 0, 0.5, 64, false, true, false),
        (8, 46, 7, 1.0 / 72f32.sqrt(), 0, false, true, false),
        (7, 6, 9, 1.0 / 72f32.sqrt(), 0, true, true, false),
        (7, 6, 9, 1.0 / 72f32.sqrt(), 0, true, false, false),
        (13, 3, 5, 0.25, 8, true, false, false),
        (9, 8, 3, 1.0 / 128.0, 16, true, false, true),
        (9, 8, 0, 1.0, 0, false, true, true),
    ] {
        if in_place && !f16_scores {
            continue;
        }
        // f32: [2 groups][rows][8]; f16: [groups][rows][16].
        let width = if f16_scores { 16 } else { 8 };
        let input_groups = groups * 16 / width;
        let input_stride = rows * 32 + gap;
        let sm = SoftmaxPanels {
            rows,
            groups,
            scale,
            scores,
            input: 0x60000,
            input_stride,
            output: if in_place { 0x60000 } else { 0x90000 },
            output_stride: rows * 32 + gap,
            stats: stats.then_some(0x58000),
            normalise,
        };
        let cols = groups * GROUP;
        // Scores in [-30, 30] (f16 scores times 2^7 where the scale is
        // 2^-7, as an FP8 block's are): scale * (x - max) reaches -60, so
        // some probabilities are far below f16's normal range.
        let column = |i: usize, width: usize| (i / width / rows as usize) * width + i % width;
        let magnitude = 30.0 * if scale < 0.01 { 128.0 } else { 1.0 };
        let mut s = vec![0f64; (rows * cols) as usize];
        for (i, v) in s.iter_mut().enumerate() {
            *v = if column(i, width as usize) as u32 >= cols - masked {
                if f16_scores {
                    MASKED_F16
                } else {
                    MASKED.into()
                }
            } else {
                let x: f64 = rng.random_range(-magnitude..magnitude);
                if f16_scores {
                    f16::from_f64(x).to_f64()
                } else {
                    f64::from(x as f32)
                }
            };
        }
        // Lay the groups out with the stride's gap between them.
        let mut bytes = vec![0u8; (input_stride * input_groups) as usize];
        let per_group = (rows * width) as usize;
        for h in 0..input_groups as usize {
            for (k, &v) in s[h * per_group..(h + 1) * per_group].iter().enumerate() {
                if f16_scores {
                    let at = h * input_stride as usize + 2 * k;
                    bytes[at..at + 2].copy_from_slice(&f16::from_f64(v).to_le_bytes());
                } else {
                    let at = h * input_stride as usize + 4 * k;
                    bytes[at..at + 4].copy_from_slice(&(v as f32).to_le_bytes());
                }
            }
        }
        let (prog, counts) = sm.program(3, &MachineModel::c600()).unwrap();
        let sim = simulate(&prog, 3, &[(sm.input, &bytes)]);
        let raw = sim
            .read_memory(3, sm.output, sm.output_stride * groups)
            .unwrap();
        let want = sm.reference(&s);
        let what = format!(
            "{scores:?} scores, {rows}x{groups} groups, {masked} masked, normalise {normalise}, in place {in_place}"
        );
        // Each pass's issue slots per group of 16 values, as the module
        // doc counts them (the exp pass's bundling is the codelet's cost).
        let expected = match (f16_scores, scale == 1.0) {
            (false, true) => [10, 37],
            (false, false) => [10, 45],
            (true, true) => [6, 25],
            (true, false) => [6, 29],
        };
        assert_eq!(
            counts.group,
            [expected[0], expected[1], if normalise { 10 } else { 0 }],
            "{what}: issue slots per group"
        );
        let spread = 60.0;
        let mut checked = 0;
        for g in 0..groups as usize {
            let at = g * sm.output_stride as usize;
            let got = f16_values(&raw[at..at + (rows * 32) as usize]);
            for (k, got) in got.iter().enumerate() {
                let i = g * rows as usize * 16 + k;
                let w = want[i];
                if column(i, 16) as u32 >= cols - masked {
                    assert_eq!(*got, 0.0, "{what}: a masked column is exactly 0");
                } else {
                    assert_within(*got, w, sm.tolerance(w, spread), format_args!("{what} {i}"));
                }
                checked += 1;
            }
        }
        assert_eq!(checked, rows * cols);
        if let Some(at) = sm.stats {
            // -m exactly (an f32 or f16 score), the sum of the exps.
            let raw = sim.read_memory(3, at, rows * 8).unwrap();
            for (r, (neg_max, sum)) in sm.reference_stats(&s).into_iter().enumerate() {
                let word = |i: usize| {
                    f64::from(f32::from_le_bytes(
                        raw[8 * r + 4 * i..8 * r + 4 * i + 4].try_into().unwrap(),
                    ))
                };
                assert_eq!(word(0), neg_max, "{what}: row {r}'s -max");
                // Each e: its exponent's roundings (at most `spread` in
                // magnitude), f16v2exp's and its own f16 rounding.
                let exponent = if f16_scores {
                    2f64.powi(-9)
                } else {
                    2f64.powi(-12)
                };
                let tol = (spread * exponent + 2.0 * 2f64.powi(-11)) * sum;
                assert_within(word(1), sum, tol, format_args!("{what}: row {r}'s sum"));
            }
        }
        assert_launch_as_estimated(
            &sim,
            sm.estimate_cycles().unwrap(),
            &sm.worker_rows(),
            |n| counts.launch.worker_issues(n, counts.repeated(groups)),
            &what,
        );
    }
}

#[test]
fn softmax_over_panels_refuses_what_it_cannot_run() {
    let ok = SoftmaxPanels {
        rows: 4,
        groups: 2,
        scale: 0.5,
        scores: Elem::F32,
        input: 0x60000,
        input_stride: 128,
        output: 0x70000,
        output_stride: 128,
        stats: None,
        normalise: true,
    };
    assert!(ok.validate().is_ok());
    assert_refused(
        &SoftmaxPanels {
            input_stride: 120,
            ..ok.clone()
        },
        "the input group stride 120 must be a multiple of 8, at least 128",
    );
    assert_refused(
        &SoftmaxPanels {
            scale: -1.0,
            ..ok.clone()
        },
        "the scale must be positive and finite",
    );
    assert_refused(
        &SoftmaxPanels {
            output: 0x60000 + 128,
            ..ok.clone()
        },
        "overlap",
    );
    assert_refused(
        &SoftmaxPanels {
            output: 0x70004,
            ..ok.clone()
        },
        "output address 0x70004 is not 8-byte aligned",
    );
    assert_refused(
        &SoftmaxPanels {
            stats: Some(0x58004),
            ..ok.clone()
        },
        "stats address 0x58004 is not 8-byte aligned",
    );
}

/// f16 scores: the FP8 format and a scale that is no normal f16 are
/// refused; the output may be the input itself, not part of it.
#[test]
fn softmax_over_f16_panels_refuses_what_it_cannot_run() {
    let ok = SoftmaxPanels {
        rows: 4,
        groups: 2,
        scale: 0.5,
        scores: Elem::F16,
        input: 0x60000,
        input_stride: 128,
        output: 0x60000,
        output_stride: 128,
        stats: None,
        normalise: true,
    };
    assert!(ok.validate().is_ok());
    for (bad, want) in [
        (
            SoftmaxPanels {
                scores: Elem::F8,
                ..ok.clone()
            },
            "the scores must be f32 or f16",
        ),
        (
            SoftmaxPanels {
                scale: 1e-6,
                ..ok.clone()
            },
            "must be a normal f16 number",
        ),
        (
            SoftmaxPanels {
                output: 0x60000 + 128,
                ..ok.clone()
            },
            "overlap",
        ),
        (
            SoftmaxPanels {
                output_stride: 136,
                ..ok.clone()
            },
            "overlap",
        ),
    ] {
        assert_refused(&bad, want);
    }
    // f16's input group stride may be twice f32's (one step a group).
    assert!(SoftmaxPanels {
        input_stride: 32_752,
        output: 0x70000,
        ..ok.clone()
    }
    .validate()
    .is_ok());
}

/// Q's scaling before f16 scores: every lane times the constant's f16
/// mantissa, then its power of two (each rounded as the reference says),
/// two issue slots a word, cycles as estimated.
#[test]
fn scaling_f16_in_place_matches_float64_and_its_estimate() {
    use ipuc_backend_ipu::codelets::scale::ScaleF16;
    let mut rng = rand::rngs::StdRng::seed_from_u64(75);
    // (elements, constant): one pair of words; an attention tile's Q (53
    // rows of 80) by an FP8 block's `scale 2^-2D` at D = 7 (below f16's
    // normal range: its mantissa 0.943 times 2^-17); shares that leave
    // workers idle; values near f16's top by 0.75, whose mantissa (0.75,
    // not 1.5) keeps the first product in range.
    for (len, scale, magnitude) in [
        (8u32, 3.0f32, 300.0),
        (53 * 80, 1.0 / 72f32.sqrt() / 16384.0, 300.0),
        (5 * 8, 0.5, 300.0),
        (16, 0.75, 65000.0),
    ] {
        let c = ScaleF16 {
            len,
            at: 0x60008,
            scale,
        };
        let x: Vec<f16> = (0..len)
            .map(|_| f16::from_f64(rng.random_range(-magnitude..magnitude)))
            .collect();
        // The word past the tensor is read, not written.
        let mut bytes = f16_bytes(&x);
        bytes.extend([0xAB; 8]);
        let (prog, counts) = c.program(0, &MachineModel::c600()).unwrap();
        let sim = simulate(&prog, 0, &[(c.at, &bytes)]);
        let raw = sim.read_memory(0, c.at, 2 * len + 8).unwrap();
        let want = c.reference(&x.iter().map(|h| h.to_f64()).collect::<Vec<_>>());
        assert_eq!(
            f16_values(&raw[..2 * len as usize]),
            want,
            "{len} x {scale}"
        );
        assert!(want.iter().all(|v| v.is_finite()), "{len} x {scale}");
        assert_eq!(&raw[2 * len as usize..], &[0xAB; 8], "{len}: past the end");
        assert_eq!(counts.body, 4, "{len}: two words in four issue slots");
        assert_launch_as_estimated(
            &sim,
            c.estimate_cycles().unwrap(),
            &c.worker_pairs(),
            |n| counts.worker_issues(n),
            format!("{len} x {scale}"),
        );
    }
    let ok = ScaleF16 {
        len: 16,
        at: 0x60000,
        scale: 2.0,
    };
    assert_refused(&ScaleF16 { len: 12, ..ok }, "not a positive multiple of 8");
    assert_refused(&ScaleF16 { at: 0x60004, ..ok }, "not 8-byte aligned");
    assert_refused(
        &ScaleF16 { scale: 1e6, ..ok },
        "power of two in f16's range",
    );
    assert_refused(&ScaleF16 { scale: -2.0, ..ok }, "not positive");
    assert_refused(
        &ScaleF16 { scale: 1e-9, ..ok },
        "power of two in f16's range",
    );
}

#[test]
fn combining_partial_attention_matches_float64_and_its_estimate() {
    use ipuc_backend_ipu::codelets::attention_combine::AttentionCombine;
    let mut rng = rand::rngs::StdRng::seed_from_u64(73);
    // (rows, partials, groups, gap between partials): two partials of one
    // row; so400m's five value groups over seven key blocks with rows that
    // leave workers idle; more rows than workers.
    // The strided cases' partials lie as a flash-style tile's chunks leave
    // them: each group where the values' product wrote it (its group
    // stride), the statistics after the groups; the running one folds a
    // chunk into its accumulator (partial 0) in place and writes the
    // combined statistics over the accumulator's. Unnormalised partials
    // (a key-split tile's `P V` with `P` the exponentials) are weighted
    // by `exp(scale (m_i - M)) / L`: their weights sum to at most 1 too.
    for (rows, parts, groups, gap, strided, running, normalised) in [
        (1u32, 2u32, 1u32, 0u32, false, false, true),
        (9, 7, 5, 16, false, false, true),
        (13, 3, 2, 8, false, false, true),
        (9, 6, 5, 0, true, false, true),
        (9, 2, 5, 16, true, true, true),
        (9, 7, 5, 16, false, false, false),
        (13, 3, 2, 8, false, false, false),
    ] {
        let scale = 1.0 / 72f32.sqrt();
        let c = AttentionCombine::packed(
            rows,
            parts,
            groups,
            scale,
            (0x90000, 0),
            (0x60000, rows * 32 + 8),
        );
        let c = if strided {
            let group_stride = 2 * (rows * 32 + 8) + 8;
            AttentionCombine {
                group_stride,
                stats_offset: groups * group_stride + 8,
                ..c
            }
        } else {
            c
        };
        let c = AttentionCombine {
            part_stride: c.part_bytes() + gap,
            normalised,
            ..c
        };
        let c = if running {
            AttentionCombine {
                output: c.input,
                output_stride: c.group_stride,
                stats_output: Some(c.input + c.stats_offset),
                ..c
            }
        } else {
            c
        };
        let cols = (groups * 16) as usize;
        // Each partial: O_i row-major, normalised values of V (|v| < 1), and
        // per row -m_i in [-20, 20] (so the weights span exp(-40 scale))
        // and a sum of exps in [1, 100].
        let mut bytes = vec![0u8; (c.part_stride * parts) as usize];
        let (mut o, mut stats) = (Vec::new(), Vec::new());
        for i in 0..parts as usize {
            let oi: Vec<f16> = (0..rows as usize * cols)
                .map(|_| f16::from_f64(rng.random_range(-1.0..1.0)))
                .collect();
            let si: Vec<(f32, f32)> = (0..rows)
                .map(|_| (rng.random_range(-20.0..20.0), rng.random_range(1.0..100.0)))
                .collect();
            let base = i * c.part_stride as usize;
            let p = f16_bytes(&panels(&oi, rows as usize, cols));
            let group = (rows * 32) as usize;
            for (g, rows_of_g) in p.chunks_exact(group).enumerate() {
                let at = base + g * c.group_stride as usize;
                bytes[at..at + group].copy_from_slice(rows_of_g);
            }
            let at = base + c.stats_offset as usize;
            for (r, (a, b)) in si.iter().enumerate() {
                bytes[at + 8 * r..at + 8 * r + 4].copy_from_slice(&a.to_le_bytes());
                bytes[at + 8 * r + 4..at + 8 * r + 8].copy_from_slice(&b.to_le_bytes());
            }
            o.push(oi.iter().map(|h| h.to_f64()).collect::<Vec<_>>());
            stats.push(
                si.iter()
                    .map(|&(a, b)| (f64::from(a), f64::from(b)))
                    .collect::<Vec<_>>(),
            );
        }
        let (prog, counts) = c.program(0, &MachineModel::c600()).unwrap();
        let sim = simulate(&prog, 0, &[(c.input, &bytes)]);
        let want = c.reference(&o, &stats);
        let what = format!(
            "{rows} rows, {parts} partials, {groups} groups, strided {strided}, running {running}, normalised {normalised}"
        );
        if let Some(at) = c.stats_output {
            // (-M, L) of every partial's keys, in float64 from the same
            // statistics.
            let raw = sim.read_memory(0, at, rows * 8).unwrap();
            let scale = f64::from(scale);
            for r in 0..rows as usize {
                let neg_m = stats.iter().map(|s| s[r].0).fold(f64::INFINITY, f64::min);
                let l: f64 = stats
                    .iter()
                    .map(|s| s[r].1 * (scale * (neg_m - s[r].0)).exp())
                    .sum();
                let word = |i: usize| {
                    f64::from(f32::from_le_bytes(
                        raw[8 * r + 4 * i..8 * r + 4 * i + 4].try_into().unwrap(),
                    ))
                };
                assert_eq!(word(0), neg_m, "{what}: -M of row {r}");
                assert_within(word(1), l, l * 1e-5, format_args!("{what}: L of row {r}"));
            }
        }
        // Each partial's weight rounds to f16, its product and the running
        // sum round once per partial: |O| <= 1.
        let bound = f64::from(3 * parts + 1) * 2f64.powi(-11);
        for g in 0..groups {
            let raw = sim
                .read_memory(0, c.output + g * c.output_stride, rows * 32)
                .unwrap();
            for (k, got) in f16_values(&raw).into_iter().enumerate() {
                let (r, col) = (k / 16, g as usize * 16 + k % 16);
                let w = want[r * cols + col];
                assert_within(got, w, bound, format_args!("{what}: O[{r}][{col}]"));
            }
        }
        assert_launch_as_estimated(
            &sim,
            c.estimate_cycles().unwrap(),
            &c.worker_rows(),
            |n| {
                counts
                    .launch
                    .worker_issues(n, counts.repeated(parts, groups))
            },
            &what,
        );
    }
}

#[test]
fn combining_refuses_what_it_cannot_run() {
    use ipuc_backend_ipu::codelets::attention_combine::AttentionCombine;
    let ok = AttentionCombine::packed(4, 3, 2, 0.5, (0x90000, 4 * 2 * 32 + 32), (0x60000, 128));
    assert!(ok.validate().is_ok());
    assert_refused(
        &AttentionCombine {
            parts: 1,
            ..ok.clone()
        },
        "two partials",
    );
    assert_refused(
        &AttentionCombine {
            part_stride: 4 * 2 * 32 + 24,
            ..ok.clone()
        },
        "the partial stride 280 must be a multiple of 8, at least 288",
    );
    assert_refused(
        &AttentionCombine {
            output: 0x90000 + 64,
            ..ok.clone()
        },
        "overlap",
    );
}

/// `x` row-major `[rows, cols]` as f16 input panels `[ceil(cols/16)][rows][16]`,
/// zero-padded.
fn panels(x: &[f16], rows: usize, cols: usize) -> Vec<f16> {
    let mut out = Vec::new();
    for g in 0..cols.div_ceil(16) {
        for r in 0..rows {
            out.extend((0..16).map(|c| {
                let j = g * 16 + c;
                if j < cols {
                    x[r * cols + j]
                } else {
                    f16::ZERO
                }
            }));
        }
    }
    out
}

#[test]
fn one_head_on_a_tile_matches_float64_and_its_estimate() {
    use ipuc_backend_ipu::codelets::attention::TileAttention;
    let mut rng = rand::rngs::StdRng::seed_from_u64(72);
    let machine = MachineModel::c600();
    // (rows, head dim, keys, value dim): head dimensions and keys that are
    // not whole panels (padding in every operand, masked keys); so400m's
    // head dimension 72 over a few hundred keys; one query row.
    // (scores, the domain D of an FP8 block's Q and K: both held 2^D
    // times too large, Q scaled by `scale 2^-2D` on the tile, a constant
    // below f16's normal range at D = 7, and the softmax multiplying by
    // nothing, as the lowering runs them).
    let forms = [
        (Elem::F32, None),
        (Elem::F16, None),
        (Elem::F16, Some(4)),
        (Elem::F16, Some(7)),
    ];
    for ((rows, d, keys, dv), (scores, domain)) in [
        (5u32, 24u32, 40u32, 24u32),
        (12, 72, 200, 72),
        (1, 16, 16, 16),
    ]
    .into_iter()
    .flat_map(|sizes| forms.map(|f| (sizes, f)))
    {
        let scale = 1.0 / (d as f32).sqrt();
        let att = TileAttention::packed((rows, d, keys, dv), (scale, scores), &machine)
            .unwrap_or_else(|e| panic!("{e}"));
        let held = domain.map_or(1.0, |d| 2f64.powi(d));
        let att = match domain {
            Some(d) => TileAttention {
                scale: 1.0,
                q_scale: scale * 2f32.powi(-2 * d),
                ..att
            },
            None => att,
        };
        let draw = |rng: &mut rand::rngs::StdRng, n: u32, mag: f64| -> Vec<f16> {
            (0..n)
                .map(|_| f16::from_f64(held * rng.random_range(-mag..mag)))
                .collect()
        };
        // Scores of a few units: softmax rows that are neither flat nor
        // one-hot.
        let (q, k, v) = (
            draw(&mut rng, rows * d, 2.0),
            draw(&mut rng, keys * d, 2.0),
            draw(&mut rng, keys * dv, 1.0 / held),
        );
        let (prog, counts) = att.program(0, &machine).unwrap();
        let sim = simulate(
            &prog,
            0,
            &[
                (att.q, &f16_bytes(&panels(&q, rows as usize, d as usize))),
                (att.k, &f16_bytes(&att.key_panels(&k, f16::ZERO))),
                (att.v, &f16_bytes(&att.value_panels(&v, f16::ZERO))),
                (att.mask, &att.mask_bytes_encoded()),
            ],
        );
        let wide = |x: &[f16]| x.iter().map(|h| h.to_f64()).collect::<Vec<_>>();
        let want = att.reference(&wide(&q), &wide(&k), &wide(&v));
        let pv = att.values();
        let what = format!(
            "{rows} rows, d {d}, {keys} keys, dv {dv}, {scores:?} scores, domain {domain:?}"
        );
        // Bound: f16 partials round once per key panel (each partial at
        // most max |v|, P summing to 1), P's softmax roundings (4 ulps of
        // f16 each), the output's rounding.
        let vmax = v.iter().map(|h| h.to_f64().abs()).fold(0.0, f64::max);
        let bound = f64::from(att.key_panels_count() + 6) * 2f64.powi(-11) * vmax;
        let (mut err2, mut ref2, mut checked) = (0.0, 0.0, 0);
        for j in 0..pv.n_groups {
            let raw = sim.read_memory(0, pv.output_group(j), rows * 32).unwrap();
            for (i, got) in f16_values(&raw).into_iter().enumerate() {
                let (r, c) = (i / 16, j as usize * 16 + i % 16);
                if c >= dv as usize {
                    continue;
                }
                let w = want[r * dv as usize + c];
                assert_within(got, w, bound, format_args!("{what}: O[{r}][{c}]"));
                err2 += (got - w).powi(2);
                ref2 += w * w;
                checked += 1;
            }
        }
        assert_eq!(checked, rows * dv);
        let rel = (err2 / ref2).sqrt();
        assert!(rel < 2e-3, "{what}: relative L2 error {rel:e}");
        let p = ipuc_runtime::device::Device::profile(&sim).unwrap();
        common::assert_near_estimate(p.total_cycles, att.cycles(&counts), &what);
    }
}

/// Where exchange B writes each key's rows (`key_row`) is where
/// `key_panels` lays them, for both score types: 8 keys a weight panel
/// with f32 scores, 16 with f16.
#[test]
fn key_rows_are_where_the_key_panels_put_them() {
    use ipuc_backend_ipu::codelets::attention::TileAttention;
    let m = MachineModel::c600();
    for (scores, per_panel) in [(Elem::F32, 8), (Elem::F16, 16)] {
        let (rows, d, keys) = (4u32, 48u32, 40u32);
        let att = TileAttention::packed((rows, d, keys, d), (0.5, scores), &m)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(att.keys_per_panel(), per_panel);
        // Value (t, c) labels key t's channel c.
        let k: Vec<u32> = (0..keys * d).collect();
        let panels = att.key_panels(&k, u32::MAX);
        for t in 0..keys {
            for p in 0..d / 16 {
                let at = att.key_row(t, p) as usize / 2;
                let want: Vec<u32> = (0..16).map(|c| t * d + 16 * p + c).collect();
                assert_eq!(
                    &panels[at..at + 16],
                    &want[..],
                    "{scores:?}: key {t}, panel {p}"
                );
            }
        }
    }
}

#[test]
fn a_flash_tile_takes_its_scores_at_the_windows_bottom_where_they_do_not_fit_above() {
    use ipuc_backend_ipu::codelets::attention::{MaskPlace, OutputPlace, TileAttention};
    let m = MachineModel::c600();
    let pair = 2 * m.element_bytes;
    // so400m's flash tile (9 query rows, chunks of 32 keys, two slots) in
    // a window that crosses one element pair's boundary 4 KiB above its
    // bottom and ends 24 KiB above it, where qk's and vt's results begin
    // (the scores' top): above the window's tensors, S and P would share
    // their pair; at the bottom they have a pair of their own.
    let boundary = 0xc8000;
    let window = (boundary - 4096, boundary + 24 * 1024);
    let sizes = (9, 80, 32, 80);
    let (att, placed) = TileAttention::place(
        sizes,
        (
            (0.1, Elem::F32),
            true,
            OutputPlace::Window { slots: 2 },
            MaskPlace::Window,
        ),
        window,
        &[(window.0, window.1)],
        &m,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let pair_of = |a: u32| a / pair;
    assert!(att.s >= window.0 && att.p >= window.0, "{att:?}");
    assert!(
        att.s + att.scores().output_bytes() as u32 <= boundary,
        "{att:?}"
    );
    assert!(
        att.p + att.values().input_bytes() as u32 <= boundary,
        "{att:?}"
    );
    for t in [att.k, att.v, att.q, att.mask, att.o] {
        assert!(t >= boundary, "{att:?}");
    }
    assert_ne!(pair_of(att.q), pair_of(att.s));
    assert_ne!(pair_of(att.o), pair_of(att.p));
    assert!(placed.window_end <= window.1);
    assert!(att.validate(&m).is_ok());
    // One slot (not flash-style): the scores stay above the window, which
    // does not fit here.
    let err = TileAttention::place(
        sizes,
        (
            (0.1, Elem::F32),
            true,
            OutputPlace::Window { slots: 1 },
            MaskPlace::Window,
        ),
        window,
        &[(window.0, window.1)],
        &m,
    )
    .unwrap_err();
    assert!(err.contains("an attention tile does not fit"), "{err}");
    // Given a range of its own above the window (the slack above qk's
    // and vt's results), a flash tile takes S and P there, the window's
    // tensors from its bottom.
    let free = (boundary + 2 * pair, boundary + 3 * pair);
    let (att, _) = TileAttention::place(
        sizes,
        (
            (0.1, Elem::F32),
            true,
            OutputPlace::Window { slots: 2 },
            MaskPlace::Window,
        ),
        window,
        &[free, window],
        &m,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(att.p >= free.0 && att.s < free.1, "{att:?}");
    assert_eq!(att.k, window.0, "{att:?}");
}

#[test]
fn a_key_split_tiles_output_lies_over_its_scores() {
    use ipuc_backend_ipu::codelets::attention::{MaskPlace, OutputPlace, TileAttention};
    let m = MachineModel::c600();
    let pair = |a: u32| a / (2 * m.element_bytes);
    // so400m's key-split tile (92 query rows, 80 keys) in a window of
    // 48 KiB below 0xd0000, the rest of memory free while it computes.
    let sizes = (92, 80, 80, 80);
    let window = (0xc4000, 0xd0000);
    let compute = [(window.0, m.sram_end)];
    let place = |output| {
        TileAttention::place(
            sizes,
            ((0.1, Elem::F32), true, output, MaskPlace::Window),
            window,
            &compute,
            &m,
        )
    };
    // O (29 KiB with its two halves a group) does not fit the window
    // beside the keys, values and Q...
    let err = place(OutputPlace::Window { slots: 1 }).unwrap_err();
    assert!(err.contains("an attention tile does not fit"), "{err}");
    // ...over the scores it does: at the top of memory, P below O's
    // element pairs and above the window, S in pairs above the window's
    // (Q's and the mask's), the statistics (written while the softmax
    // still reads S) right below P.
    let (att, placed) = place(OutputPlace::OverScores).unwrap_or_else(|e| panic!("{e}"));
    let o_end = att.o + att.values().output_bytes() as u32;
    assert!(o_end <= m.sram_end && o_end + 256 > m.sram_end, "{att:?}");
    assert!(att.o >= att.s, "{att:?}");
    let p_end = att.p + att.values().input_bytes() as u32;
    assert!(p_end <= att.s && pair(p_end - 1) < pair(att.o), "{att:?}");
    assert!(
        pair(att.s) > pair(placed.window_end - 1),
        "{att:?} {placed:?}"
    );
    let stats = att.stats.expect("statistics");
    assert!(stats >= placed.window_end, "{att:?} {placed:?}");
    assert_eq!(stats + 8 * 92, att.p, "{att:?}");
    assert!(placed.window_end <= window.1);
    assert!(att.validate(&m).is_ok());
}

/// The mask block shares Q's element pair 8 mod 16 bytes from it (the
/// scores' product loads both in one instruction), or lies in region 0,
/// whose elements no access to Q shares: where the lowering reads the
/// copy the program loads.
#[test]
fn the_mask_block_is_8_mod_16_from_q_or_in_region_0() {
    use ipuc_backend_ipu::codelets::attention::{MaskPlace, OutputPlace, TileAttention};
    let m = MachineModel::c600();
    let att = TileAttention::packed((16, 80, 32, 80), (0.1, Elem::F32), &m)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(att.validate(&m).is_ok(), "{att:?}");
    let with_mask = |mask| TileAttention { mask, ..att };
    assert!(with_mask(0x4c008).validate(&m).is_ok());
    assert!(with_mask(0x4c000).validate(&m).is_ok());
    let refused = [
        (att.mask + 8, "must start 8 mod 16 bytes from Q"),
        (0x4c004, "8-byte aligned in the non-interleaved region"),
        // What the product reads past the block's end would be Q's
        // neighbour in the interleaved region.
        (
            m.interleaved_base - att.mask_bytes() as u32,
            "48 bytes read past its end included (0x4c000..0x80000)",
        ),
    ];
    let last = m.interleaved_base - att.mask_bytes() as u32 - 48;
    assert!(with_mask(last).validate(&m).is_ok());
    for (mask, why) in refused {
        let err = with_mask(mask).validate(&m).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
    // Placed apart, the mask block takes no room in the window: O and
    // what follows it move down by its bytes.
    let window = (m.interleaved_base, m.sram_end);
    let place = |mask| {
        TileAttention::place(
            (16, 80, 32, 80),
            (
                (0.1, Elem::F32),
                false,
                OutputPlace::Window { slots: 1 },
                mask,
            ),
            window,
            &[window],
            &m,
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let ((inside, in_place), (apart, apart_place)) =
        (place(MaskPlace::Window), place(MaskPlace::Apart(0x4c008)));
    assert_eq!(apart.mask, 0x4c008);
    assert!(
        inside.mask > inside.q && inside.mask < inside.o,
        "{inside:?}"
    );
    assert_eq!(
        (in_place.window_end - apart_place.window_end) as u64,
        inside.o as u64 - apart.o as u64
    );
    assert!(inside.o - apart.o >= inside.mask_bytes() as u32);
    assert!(apart.validate(&m).is_ok());
    // An unmasked part reads no mask block.
    assert!(TileAttention {
        masked: false,
        ..with_mask(0x4c004)
    }
    .validate(&m)
    .is_ok());
}

#[test]
fn a_long_rows_softmax_joined_from_its_rows_matches_float64_and_its_estimate() {
    use ipuc_backend_ipu::codelets::softmax_join::SoftmaxJoin;
    let mut rng = rand::rngs::StdRng::seed_from_u64(75);
    // (rows, groups, masked scores at the end, scale): the fewest rows;
    // the pooling head's 736 tokens as 23 rows of two groups, 7 masked;
    // rows that leave workers idle and a scale; more rows than workers
    // with one group each. The scores are one long row laid out as the
    // softmax over panels reads it (group g row r holds scores 16 (g rows
    // + r) ..), so the probabilities over all of them are in the same
    // order: the float64 softmax of the whole row is the oracle.
    for (rows, groups, masked, scale) in [
        (2u32, 1u32, 0usize, 1.0f32),
        (23, 2, 7, 1.0),
        (5, 3, 3, 0.25),
        (13, 1, 0, 1.0 / 72f32.sqrt()),
    ] {
        let n = (rows * groups * 16) as usize;
        let stride = rows * 32;
        let s: Vec<f64> = (0..n)
            .map(|i| {
                if i >= n - masked {
                    MASKED_F16
                } else {
                    f16::from_f64(rng.random_range(-30.0..30.0)).to_f64()
                }
            })
            .collect();
        let bytes = f16_bytes(&s.iter().map(|&v| f16::from_f64(v)).collect::<Vec<_>>());
        let sm = SoftmaxPanels {
            rows,
            groups,
            scale,
            scores: Elem::F16,
            input: 0x60000,
            input_stride: stride,
            output: 0x60000,
            output_stride: stride,
            stats: Some(0x58000),
            normalise: false,
        };
        let machine = MachineModel::c600();
        let (prog, _) = sm.program(3, &machine).unwrap();
        let sim = simulate(&prog, 3, &[(sm.input, &bytes)]);
        let e = sim.read_memory(3, sm.output, stride * groups).unwrap();
        let stats = sim.read_memory(3, 0x58000, rows * 8).unwrap();
        let join = SoftmaxJoin {
            rows,
            groups,
            scale,
            data: 0x60000,
            stride,
            stats: 0x58000,
        };
        let (prog, counts) = join.program(3, &machine).unwrap();
        let sim = simulate(&prog, 3, &[(join.data, &e), (join.stats, &stats)]);
        let got = f16_values(&sim.read_memory(3, join.data, stride * groups).unwrap());
        let what = format!("{rows} rows of {groups} groups, {masked} masked, scale {scale}");
        // The whole row's softmax in float64, in memory order.
        let scale = f64::from(scale);
        let big = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = s.iter().map(|&x| (scale * (x - big)).exp()).collect();
        let total: f64 = exps.iter().sum();
        // The softmax's exponentials (f16 exponent, f16 exp, its rounding),
        // then the weight's f16 rounding and the product's.
        let spread = 60.0 * scale;
        for (i, (&got, &x)) in got.iter().zip(&exps).enumerate() {
            let want = x / total;
            if i >= n - masked {
                assert_eq!(
                    got, 0.0,
                    "{what}: a masked score's probability is exactly 0"
                );
            } else {
                let tol = (spread * 2f64.powi(-9) + 6.0 * 2f64.powi(-11)) * want + 2f64.powi(-24);
                assert_within(got, want, tol, format_args!("{what}: p[{i}]"));
            }
        }
        // The probabilities sum to 1.
        let sum: f64 = got.iter().sum();
        assert_within(sum, 1.0, 0.01, format_args!("{what}: the sum"));
        assert_launch_as_estimated(
            &sim,
            join.estimate_cycles().unwrap(),
            &join.worker_rows(),
            |n| counts.worker_issues(n, rows, groups),
            &what,
        );
    }
}

#[test]
fn joining_refuses_what_it_cannot_run() {
    use ipuc_backend_ipu::codelets::softmax_join::SoftmaxJoin;
    let ok = SoftmaxJoin {
        rows: 4,
        groups: 2,
        scale: 1.0,
        data: 0x60000,
        stride: 128,
        stats: 0x58000,
    };
    assert!(ok.program(0, &MachineModel::c600()).is_ok());
    for (bad, want) in [
        (
            SoftmaxJoin {
                rows: 1,
                ..ok.clone()
            },
            "needs two rows",
        ),
        (
            SoftmaxJoin {
                scale: 0.0,
                ..ok.clone()
            },
            "positive and finite",
        ),
        (
            SoftmaxJoin {
                stride: 96,
                ..ok.clone()
            },
            "at least 128",
        ),
        (
            SoftmaxJoin {
                data: 0x60004,
                ..ok.clone()
            },
            "data",
        ),
        (
            SoftmaxJoin {
                stats: 0x60080,
                ..ok.clone()
            },
            "overlap the data",
        ),
    ] {
        assert_refused(&bad, want);
    }
}
