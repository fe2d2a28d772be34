//! The attention block lowered whole (LayerNorm, the QKV products, one
//! attention tile per head and row block, the output product, the residual)
//! and run on the simulator, against the block in float64 from the same
//! f16 inputs: head dimensions that are and are not whole panels (heads
//! padded in the weights), token counts that are not multiples of 8 or 16
//! (padded keys, tokens and query rows), several heads per chip share.

mod common;

use common::{assert_block_accuracy, cosine_and_rel_l2, run_lowered};
use ipuc_backend_ipu::lower::attention_block::{
    emit_attention, plan_attention, reference, AttentionShape,
};
use ipuc_backend_ipu::lower::block_values::AttentionValues;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, FloatKind, Location, Type};
use ipuc_runtime::device::Device;
use rand::{Rng, SeedableRng};

/// Lowers and runs the block of `s`; returns (cosine, relative L2 error,
/// simulated cycles, estimated cycles).
fn run(s: AttentionShape, seed: u64) -> (f64, f64, u64, u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let AttentionValues { x, constants: k } =
        AttentionValues::random(s, || rng.random_range(-1.0..1.0));
    let machine = MachineModel::c600();
    let plan = plan_attention(s, &machine).unwrap_or_else(|e| panic!("{e}"));
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, "empty.mlir", "module {}")
        .unwrap()
        .module;
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let ty = Type::tensor(
        &[i64::from(s.m), i64::from(s.c)],
        Type::float(FloatKind::F16),
    );
    let lowered = emit_attention(
        &mut ctx,
        body,
        &plan,
        &k,
        (ty.clone(), ty),
        &machine,
        Location::unknown(),
    )
    .unwrap_or_else(|d| panic!("{}", d.message));
    let (y, sim) = run_lowered(&ctx, lowered.executable, machine, &x, s);
    let (cos, rel) = cosine_and_rel_l2(&y, &reference(s, &x, &k));
    let cycles = sim.profile().unwrap().total_cycles;
    (cos, rel, cycles, lowered.estimate.total())
}

fn shape(m: u32, c: u32, heads: u32) -> AttentionShape {
    AttentionShape {
        m,
        c,
        heads,
        head_dim: c / heads,
        eps: 1e-6,
        scale: 1.0 / ((c / heads) as f32).sqrt(),
    }
}

#[test]
fn attention_blocks_match_float64() {
    // (tokens, hidden, heads): whole panels everywhere; a head dimension
    // of 24 (padded to 32) over 37 tokens (padded keys, tokens and rows);
    // one head of 48 over 21 tokens.
    for (s, seed) in [
        (shape(16, 64, 4), 1),
        (shape(37, 96, 4), 2),
        (shape(21, 48, 1), 3),
    ] {
        assert_block_accuracy(s, run(s, seed), 0.9999, 5e-3);
    }
}

#[test]
fn a_block_whose_head_does_not_fit_a_tile_is_refused_with_the_sizes() {
    // 2048 keys of heads of 72 (padded to 80): 655 KB of keys and values
    // per head.
    let err = plan_attention(shape(2048, 1152, 16), &MachineModel::c600()).unwrap_err();
    assert!(
        err.contains("an attention tile does not fit") && err.contains("keys and values take"),
        "{err}"
    );
}

#[test]
fn an_attention_tile_holds_as_many_rows_as_fit_and_no_more() {
    use ipuc_backend_ipu::lower::attention_block::core_tile;
    // so400m's heads: 235 KB of keys and values leave room for about 16
    // query rows' scores; 255 rows' scores alone would fill the tile.
    let m = MachineModel::c600();
    let s = shape(729, 1152, 16);
    let t = core_tile(s, 8, &m).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.o + t.values().output_bytes() as u32 <= m.sram_end);
    assert!(t.q >= t.v + t.values().weight_bytes() as u32);
    let err = core_tile(s, 255, &m).unwrap_err();
    assert!(err.contains("255 query rows"), "{err}");
}
