//! The patch embedding lowered whole (the host writing pixel runs into
//! patch rows, the exchange into the product's panels, the product from
//! per-token initial partials) and run on the simulator, against float64
//! from the same f16 values: patch rows that are and are not whole panels,
//! token counts that are not multiples of the row tiles' rows, a K split.

mod common;

use common::{assert_block_accuracy, assert_near_estimate, cosine_and_rel_l2, run_lowered};
use ipuc_backend_ipu::lower::block_values::PatchValues;
use ipuc_backend_ipu::lower::patch_embed::{
    emit_patch, plan_patch_in, reference_rows, PatchPlan, PatchShape,
};
use ipuc_backend_ipu::lower::stream::Weights;
use ipuc_backend_ipu::lower::window::Window;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, FloatKind, Location, Type};
use ipuc_runtime::device::Device;
use rand::{Rng, SeedableRng};

/// Lowers and runs the block of `s` on the first `tiles` tiles; returns
/// (cosine, relative L2 error, simulated cycles, estimated cycles) and the
/// product's K split.
fn run(s: PatchShape, tiles: u32, seed: u64) -> ((f64, f64, u64, u64), u32) {
    let (result, plan) = run_with(s, tiles, seed, Weights::Resident);
    (result, plan.product.grid_k)
}

/// [`run`] with the weights kept as `weights` says; returns the plan.
fn run_with(
    s: PatchShape,
    tiles: u32,
    seed: u64,
    weights: Weights,
) -> ((f64, f64, u64, u64), PatchPlan) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let PatchValues { x, constants: k } = PatchValues::random(s, || rng.random_range(-1.0..1.0));
    let machine = MachineModel::c600();
    let plan = plan_patch_in(s, &machine, (0, tiles), Window::alone(&machine), weights)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, "empty.mlir", "module {}")
        .unwrap()
        .module;
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let half = Type::float(FloatKind::F16);
    let x_ty = Type::tensor(
        &[
            i64::from(s.images),
            i64::from(s.channels),
            i64::from(s.height),
            i64::from(s.width),
        ],
        half.clone(),
    );
    let y_ty = Type::tensor(
        &[i64::from(s.images), i64::from(s.tokens()), i64::from(s.d)],
        half,
    );
    let lowered = emit_patch(
        &mut ctx,
        body,
        &plan,
        &k,
        (x_ty, y_ty),
        &machine,
        Location::unknown(),
    )
    .unwrap_or_else(|d| panic!("{}", d.message));
    let (y, sim) = run_lowered(&ctx, lowered.executable, machine, &x, s);
    // Image by image.
    let rows: Vec<usize> = (0..s.tokens() as usize).collect();
    let pixels = (s.channels * s.height * s.width) as usize;
    let want: Vec<f64> = x
        .chunks_exact(pixels)
        .flat_map(|image| reference_rows(s, image, &k, &rows))
        .collect();
    let (cos, rel) = cosine_and_rel_l2(&y, &want);
    let cycles = sim.profile().unwrap().total_cycles;
    ((cos, rel, cycles, lowered.estimate.total()), plan)
}

fn shape(channels: u32, (height, width): (u32, u32), patch: u32, d: u32) -> PatchShape {
    PatchShape {
        images: 1,
        channels,
        height,
        width,
        patch,
        d,
    }
}

#[test]
fn patch_embeddings_match_float64() {
    // siglip-tiny's: 3 x 8 x 8 = 192 values a row (whole panels), 16
    // tokens; patches of 6 (108 values, padded to 112) over a 3:5 image of
    // 15 tokens (the last row tile holds 3 rows); so400m's patch of 14
    // (588 values, padded to 592) on 7 tokens; sides that are not whole
    // patches (so400m's 384 in patches of 14 leaves 6 pixels unread): 20 x
    // 33 in patches of 6, the last 2 rows and 3 columns in no patch.
    for (s, tiles, seed) in [
        (shape(3, (32, 32), 8, 64), 64, 1),
        (shape(3, (18, 30), 6, 48), 40, 2),
        (shape(3, (14, 98), 14, 32), 24, 3),
        (shape(3, (20, 33), 6, 32), 40, 5),
    ] {
        let (result, _) = run(s, tiles, seed);
        assert_block_accuracy(s, result, 0.9999, 2e-3);
        assert_near_estimate(result.2, result.3, format!("{s:?}"));
    }
}

#[test]
fn batched_patch_embeddings_match_float64_image_by_image() {
    // Each image's pixel runs land in its own tokens' rows (the product's
    // rows, image after image), each starting from the same bias and
    // position rows: 2 images of 15 tokens (a row tile holds rows of
    // both), 3 with unread pixels.
    for (s, tiles, seed) in [
        (
            PatchShape {
                images: 2,
                ..shape(3, (18, 30), 6, 48)
            },
            40,
            11,
        ),
        (
            PatchShape {
                images: 3,
                ..shape(3, (20, 33), 6, 32)
            },
            40,
            12,
        ),
    ] {
        let (result, _) = run(s, tiles, seed);
        assert_block_accuracy(s, result, 0.9999, 2e-3);
        assert_near_estimate(result.2, result.3, format!("{s:?}"));
    }
}

#[test]
fn a_product_with_a_k_split_still_adds_the_rows_once() {
    // On 3 product tiles with 592 values a row the planner splits K: the
    // per-token rows must start only the first K part's partials.
    let s = shape(3, (14, 42), 14, 16);
    let (result, grid_k) = run(s, 4, 4);
    assert!(grid_k > 1, "expected a K split, got {grid_k}");
    assert_block_accuracy(s, result, 0.9999, 2e-3);
}

#[test]
fn too_few_tiles_for_the_rows_and_the_product_is_an_error() {
    let s = shape(3, (32, 32), 8, 64);
    let err = plan_patch_in(
        s,
        &MachineModel::c600(),
        (0, 3),
        Window::alone(&MachineModel::c600()),
        Weights::Resident,
    )
    .unwrap_err();
    assert!(err.contains("16 patch rows need 3 row tiles"), "{err}");
}

/// The patch embedding with its weights streamed in (`lower/stream.rs`):
/// home pieces over the product's grid rows, gathered in exchange A with
/// the rows; the same numbers against float64.
#[test]
fn a_patch_embedding_with_streamed_weights_matches_float64() {
    let s = shape(3, (32, 32), 8, 64);
    let (result, plan) = run_with(s, 64, 6, Weights::Streamed);
    assert!(plan.product.grid_rows > 1, "{}", plan.product);
    assert!(plan.layout.home.is_some());
    assert!(plan
        .report(&MachineModel::c600())
        .contains("weights streamed in"));
    assert_block_accuracy(s, result, 0.9999, 2e-3);
}
