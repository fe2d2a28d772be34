//! The post-LayerNorm and attention-pooling head lowered whole (LayerNorm,
//! the scores-and-values product, a head tile per head, the output
//! product) and run on the simulator, against the head in float64 from
//! the same f16 inputs, keys computed as the model defines them (the
//! lowering never computes them): token counts that are and are not
//! multiples of 16 (masked padding tokens), head dimensions that are and
//! are not whole panels (heads padded in the weights), and the estimate
//! per step against the simulated cycles.

mod common;

use common::{
    assert_block_accuracy, assert_near_estimate, cosine_and_rel_l2, f16_values, run_lowered_after,
};
use ipuc_backend_ipu::lower::attention_block::AttentionFp8;
use ipuc_backend_ipu::lower::block::FP8_MAX_REL_L2;
use ipuc_backend_ipu::lower::block::LN_ROWS;
use ipuc_backend_ipu::lower::block_values::PoolValues;
use ipuc_backend_ipu::lower::pool_head::{emit_pool, plan_pool_in, reference, PoolPlan, PoolShape};
use ipuc_backend_ipu::lower::stream::Weights;
use ipuc_backend_ipu::lower::window::Window;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, FloatKind, Location, Type};
use ipuc_runtime::device::Device;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;

fn shape(m: u32, c: u32, heads: u32) -> PoolShape {
    PoolShape {
        images: 1,
        m,
        c,
        heads,
        head_dim: c / heads,
        eps: 1e-6,
        ln_affine: true,
        scale: 1.0 / ((c / heads) as f32).sqrt(),
        fp8: None,
    }
}

/// Lowers and runs the head of `s` on `tiles` tiles; returns the
/// post-LayerNorm's and the pooled row's (cosine, relative L2 error)
/// against float64, and the simulated and estimated cycles.
fn run(s: PoolShape, tiles: u32, seed: u64) -> ((f64, f64), (f64, f64), u64, u64) {
    run_with(s, tiles, seed, (Weights::Resident, &BTreeSet::new()))
}

/// [`run`] with sv's input kept as `weights` says, the head tiles off
/// `busy`.
fn run_with(
    s: PoolShape,
    tiles: u32,
    seed: u64,
    (weights, busy): (Weights, &BTreeSet<u32>),
) -> ((f64, f64), (f64, f64), u64, u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut values = PoolValues::random(s, || rng.random_range(-1.0..1.0));
    // FP8: the weights rounded to FP8 values, the scales the quantization
    // picked (the output product FP8 where the shape says so).
    let s = match s.fp8 {
        Some(f) => PoolShape {
            fp8: Some(values.quantize_fp8(f.out_scale.is_some())),
            ..s
        },
        None => s,
    };
    let PoolValues { x, constants: k } = values;
    let machine = MachineModel::c600();
    let plan = plan_pool_in(
        s,
        &machine,
        (0, tiles),
        Window::alone(&machine),
        (weights, busy),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    if weights == Weights::Streamed {
        assert!(
            plan.sv.grid_cols > 1 && plan.layout.sv_input_home.is_some(),
            "sv's input streams over several grid columns: {:?}",
            plan.sv
        );
    }
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, "empty.mlir", "module {}")
        .unwrap()
        .module;
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let half = Type::float(FloatKind::F16);
    let rows = Type::tensor(&[i64::from(s.rows()), i64::from(s.c)], half.clone());
    let pooled = Type::tensor(&[i64::from(s.images), i64::from(s.c)], half);
    let lowered = emit_pool(
        &mut ctx,
        body,
        &plan,
        &k,
        (rows.clone(), rows, pooled),
        &machine,
        Location::unknown(),
    )
    .unwrap_or_else(|d| panic!("{}", d.message));
    // sv's weights are scratch: whatever an earlier block left there,
    // here in the padding tokens' rows, which the block zeroes itself.
    let garbage = |sim: &mut ipuc_runtime::sim::Simulator| {
        for (t, fills) in plan.sv_zero_tokens() {
            for fill in fills {
                sim.write_memory(t, fill.dst, &vec![0x7b; fill.bytes as usize])
                    .unwrap();
            }
        }
    };
    let (post_ln, mut sim) = run_lowered_after(&ctx, lowered.executable, machine, &x, s, garbage);
    let y = f16_values(&sim.read_tensor("output1").unwrap());
    let (want_ln, want_y) = reference(s, &x, &k);
    let cycles = sim.profile().unwrap().total_cycles;
    eprintln!("{s:?}: {}", lowered.estimate);
    (
        cosine_and_rel_l2(&post_ln, &want_ln),
        cosine_and_rel_l2(&y, &want_y),
        cycles,
        lowered.estimate.total(),
    )
}

/// The post-LayerNorm within the FP16 bar of a LayerNorm, the pooled rows
/// within `(least cosine, largest relative L2)`, and the estimate near the
/// simulated cycles.
fn assert_head_accuracy(
    s: PoolShape,
    (ln, y, cycles, estimate): ((f64, f64), (f64, f64), u64, u64),
    (min_cos, max_rel): (f64, f64),
) {
    assert_block_accuracy(
        (s, "post-LayerNorm"),
        (ln.0, ln.1, cycles, estimate),
        0.99999,
        2e-3,
    );
    assert_block_accuracy(
        (s, "pooled"),
        (y.0, y.1, cycles, estimate),
        min_cos,
        max_rel,
    );
    assert_near_estimate(cycles, estimate, format!("{s:?}"));
}

#[test]
fn pooling_heads_match_float64() {
    // (tokens, hidden, heads): whole groups and panels; 37 tokens (padding
    // tokens masked) with heads of 24 (padded to 32); 21 tokens, one head
    // of 48, on 48 tiles (each product on a few).
    for (s, tiles, seed) in [
        (shape(16, 64, 4), 736, 1),
        (shape(37, 96, 4), 736, 2),
        (shape(21, 48, 1), 48, 3),
    ] {
        assert_head_accuracy(s, run(s, tiles, seed), (0.9999, 1e-2));
    }
}

#[test]
fn batched_pooling_heads_match_float64_image_by_image() {
    // Each image's query attends over its own tokens alone (sv's tokens
    // the images' in turn, each padded to whole groups, masked; a head
    // tile per image and head; out a row per image): 2 images of 37
    // tokens (padding between the images' tokens), 3 of 16, FP8 too.
    let batch = |s: PoolShape, images| PoolShape { images, ..s };
    let fp8 = |s: PoolShape| PoolShape {
        fp8: Some(AttentionFp8 {
            qkv_scale: 0,
            out_scale: Some(0),
        }),
        ..s
    };
    for (s, seed, (min_cos, max_rel)) in [
        (batch(shape(37, 96, 4), 2), 31, (0.9999, 1e-2)),
        (batch(shape(16, 64, 4), 3), 32, (0.9999, 1e-2)),
        (fp8(batch(shape(37, 96, 4), 2)), 33, (0.999, FP8_MAX_REL_L2)),
    ] {
        assert_head_accuracy(s, run(s, 736, seed), (min_cos, max_rel));
    }
}

/// sv's input streamed in (`PoolLayout::sv_input_home`): kept once in
/// pieces over each grid row block's columns and gathered in exchange A
/// into scratch, the same numbers against float64 as kept whole, f16 and
/// FP8; the private memory shrinks by the input's copies and exchange A's
/// estimate grows by the gathered words.
#[test]
fn streamed_sv_inputs_match_float64() {
    let fp8 = PoolShape {
        fp8: Some(AttentionFp8 {
            qkv_scale: 0,
            out_scale: Some(0),
        }),
        ..shape(37, 96, 4)
    };
    for (s, seed) in [(shape(37, 96, 4), 31), (fp8, 32)] {
        let (ln, y, cycles, estimate) =
            run_with(s, 736, seed, (Weights::Streamed, &BTreeSet::new()));
        assert_block_accuracy(
            (s, "post-LayerNorm"),
            (ln.0, ln.1, cycles, estimate),
            0.99999,
            2e-3,
        );
        let (cos, rel) = if s.fp8.is_some() {
            (0.999, FP8_MAX_REL_L2)
        } else {
            (0.9999, 1e-2)
        };
        assert_block_accuracy((s, "pooled"), (y.0, y.1, cycles, estimate), cos, rel);
        assert_near_estimate(cycles, estimate, format!("{s:?}"));
    }
    let m = MachineModel::c600();
    let plan = |w| {
        plan_pool_in(
            shape(729, 1152, 16),
            &m,
            (0, 1472),
            Window::alone(&m),
            (w, &BTreeSet::new()),
        )
        .unwrap()
    };
    let (resident, streamed) = (plan(Weights::Resident), plan(Weights::Streamed));
    let private = |p: &PoolPlan| p.next.base - m.interleaved_base;
    assert!(
        private(&streamed) + 16_384 < private(&resident),
        "so400m's head keeps {} bytes streamed, {} resident",
        private(&streamed),
        private(&resident)
    );
    // Streamed, sv's input is gathered from its home pieces, and the LN
    // tiles take fewer rows each (their rows stay private while every
    // other block runs): so400m's 6 rows a tile, 32 KB of x, output,
    // gamma and beta, were the block's largest private share.
    assert!(streamed.layout.sv_input_home.is_some());
    assert!(resident.layout.sv_input_home.is_none());
    assert_eq!(resident.ln_rows, LN_ROWS);
    assert!(
        streamed.ln_rows < LN_ROWS,
        "{} rows a tile",
        streamed.ln_rows
    );
}

#[test]
fn fp8_pooling_heads_match_float64_with_the_same_roundings() {
    // The key/value product FP8 (the post-LayerNorm's rows rounded to the
    // FP8 grid on sv's tiles, the value bias in sv's initial partials),
    // the output product FP8 too (the head tiles round their output) or
    // f16 (the model's output `nn.gemm`, which convert-precision leaves):
    // against float64 with the same roundings. The post-LayerNorm output
    // stays f16, unrounded.
    for (s, out, seed) in [(shape(16, 64, 4), true, 4), (shape(37, 96, 4), false, 5)] {
        let s = PoolShape {
            fp8: Some(AttentionFp8 {
                qkv_scale: 0,
                out_scale: out.then_some(0),
            }),
            ..s
        };
        assert_head_accuracy(s, run(s, 736, seed), (0.999, FP8_MAX_REL_L2));
    }
}

#[test]
fn a_head_tile_that_does_not_fit_is_refused_with_the_sizes() {
    // 4,096 tokens: 128 KB of value panels per head tile (16 channels of
    // every token), where earlier blocks left 120,000 bytes.
    let m = MachineModel::c600();
    let mut w = Window::alone(&m);
    w.base = m.sram_end - 120_000;
    let err = plan_pool_in(
        shape(4096, 1024, 8),
        &m,
        (0, 1472),
        w,
        (Weights::Resident, &BTreeSet::new()),
    )
    .unwrap_err();
    assert!(err.contains("a head tile does not fit"), "{err}");
}

#[test]
fn so400m_s_head_plans_on_half_the_chip() {
    // 729 tokens, 16 heads of 72 (padded to 80): the head tiles, five a
    // head, hold 23.5 KB of value panels each; the block gets half the
    // chip in the tail's chain.
    let m = MachineModel::c600();
    let plan = plan_pool_in(
        shape(729, 1152, 16),
        &m,
        (0, 736),
        Window::alone(&m),
        (Weights::Resident, &BTreeSet::new()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let est = plan.estimate(&m).unwrap();
    eprintln!("{}", plan.report(&m));
    assert!(plan.tiles().iter().all(|&t| t < 736));
    assert_eq!(plan.ln_tiles.len(), 122);
    // Each head tile holds its 16 of its head's 80 value channels, the
    // input of `(P V_h)^T`: 46 groups of 16 tokens, 32 bytes a channel.
    assert_eq!(plan.head_tiles().len(), 16 * 5);
    assert_eq!(plan.layout.head.values.input_bytes(), 46 * 16 * 32);
    // The softmax over 736 scores as 23 rows of two groups: four rows a
    // worker at most, joined.
    assert_eq!((plan.layout.head.rows, plan.layout.head.groups()), (23, 2));
    // Exchange B gathers every head's values from hundreds of sv tiles:
    // with the senders' transfers listed one sender after another the
    // schedule left receivers idle (421k of 604k cycles); in turn it is
    // bounded by the receivers' ports.
    assert!(
        est.exchange_b < est.total() / 3,
        "exchange B {} of {}",
        est.exchange_b,
        est.total()
    );
}

#[test]
fn so400m_pooling_head_plans_in_the_memory_the_whole_model_leaves_it() {
    // The whole so400m at FP8 (its output product f16) leaves its pooling
    // head 275,248 bytes of interleaved memory taken (the loop's archive
    // and the blocks' private memory) and its scratch above 0xc9320 (the
    // whole chain's private end, the head's MLP after it included). A
    // head tile keeps its value panels (117,760 bytes) in its output's
    // element-pair slack, sv's input, weights and output lie under its
    // output (`UnderOutput`), and out on a third of the products' tiles
    // keeps its weights in K parts of 4 (10 KB a tile, not 20): the block
    // plans, with less than 16 KB of private memory a tile.
    let m = MachineModel::c600();
    let s = PoolShape {
        fp8: Some(AttentionFp8 {
            qkv_scale: 0,
            out_scale: None,
        }),
        ..shape(729, 1152, 16)
    };
    let mut w = Window::alone(&m).after_block();
    w.base += 275_248;
    w.floor = 0xc9320;
    let p = plan_pool_in(
        s,
        &m,
        (0, m.tiles),
        w,
        (Weights::Streamed, &BTreeSet::new()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let private = p.next.base - w.base;
    assert!(private < 16 * 1024, "{private}");
    assert!(p.next.scratch_low >= w.floor);
}

#[test]
fn head_tiles_avoid_the_busy_tiles_among_the_ln_tiles() {
    // A chain names its layers' LN tiles busy (their residual sends are
    // the most exchange code a tile has): the head tiles take the last
    // run of the block's tail (its LN tiles) that holds none. so400m on
    // the whole chip with its layers' 122 LN tiles last: the 80 head
    // tiles (16 heads of 5) just below them.
    let m = MachineModel::c600();
    let so400m = |busy: &BTreeSet<u32>| {
        plan_pool_in(
            shape(729, 1152, 16),
            &m,
            (0, 1472),
            Window::alone(&m),
            (Weights::Streamed, busy),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let plan = so400m(&(1350..1472).collect());
    assert_eq!(plan.head_tiles(), 1270..1350);
    assert!(plan.ln_tiles.windows(2).all(|w| w[0] + 1 == w[1]));
    assert!(plan.head_tiles().all(|t| plan.ln_tiles.contains(&t)));
    assert_eq!(plan.ln_tiles.last(), Some(&1471));
    assert!(
        plan.report(&m).contains("tiles 1270..=1349, 5 a head"),
        "{}",
        plan.report(&m)
    );
    // Nowhere to go (every tile busy): the heads last, as without a chain.
    let last = so400m(&(0..1472).collect());
    assert_eq!(last.head_tiles(), 1392..1472);
    // Run on the simulator with the head tiles among the LN tiles, not at
    // their end: 61 tokens are 11 LN tiles (725..736), 4 heads of 32
    // channels 8 head tiles; the last 3 busy put them on 725..733.
    let s = shape(61, 128, 4);
    let busy: BTreeSet<u32> = (733..736).collect();
    let plan = plan_pool_in(
        s,
        &m,
        (0, 736),
        Window::alone(&m),
        (Weights::Resident, &busy),
    )
    .unwrap();
    assert_eq!(plan.head_tiles(), 725..733);
    assert_eq!(plan.ln_tiles, (725..736).collect::<Vec<_>>());
    assert_head_accuracy(
        s,
        run_with(s, 736, 41, (Weights::Resident, &busy)),
        (0.9999, 1e-2),
    );
}
