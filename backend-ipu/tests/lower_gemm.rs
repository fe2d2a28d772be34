//! A planned product lowered to an executable and run on the simulator:
//! the output against float64 over random inputs, for one-tile and
//! multi-tile plans (exchange included), shapes not multiples of the panel
//! sizes.

use ipuc_backend_ipu::codelets::amp::AmpVariant;
use ipuc_backend_ipu::emit::build_executable;
use ipuc_backend_ipu::lower::codegen::{check_fits, emit_gemm, layout, Constants};
use ipuc_backend_ipu::lower::plan::{evaluate, plan_gemm, GemmPlan, GemmShape, Grid};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, FloatKind, Location, Type};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use rand::{Rng, SeedableRng};

fn tensor_ty(shape: &[i64], v: AmpVariant) -> Type {
    let f = match v {
        AmpVariant::F32 => FloatKind::F32,
        _ => FloatKind::F16,
    };
    Type::tensor(shape, Type::float(f))
}

/// `plan` lowered for the C600 with weights `w` (no bias) into a fresh
/// context: the context and the `ipu.executable` op.
fn emit(plan: &GemmPlan, w: &[f64]) -> (Context, ipuc_ir::OpId) {
    let s = plan.shape;
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, "empty.mlir", "module {}")
        .unwrap()
        .module;
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let tys = (
        tensor_ty(&[i64::from(s.m), i64::from(s.k)], s.variant),
        tensor_ty(&[i64::from(s.m), i64::from(s.n)], s.variant),
    );
    let exe = emit_gemm(
        &mut ctx,
        body,
        plan,
        Constants {
            weights: w,
            bias: None,
        },
        tys,
        &MachineModel::c600(),
        Location::unknown(),
    )
    .unwrap_or_else(|d| panic!("{}", d.message))
    .executable;
    (ctx, exe)
}

/// Runs `plan` on random X and W; returns the simulated cycles.
fn run(plan: &GemmPlan, seed: u64) -> u64 {
    let s = plan.shape;
    let (m, k, n) = (s.m as usize, s.k as usize, s.n as usize);
    let elem = s.variant.input_elem();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut value = || rng.random_range(-1.0..1.0f64);
    let x = elem.decode(&elem.encode(&(0..m * k).map(|_| value()).collect::<Vec<_>>()));
    let w = elem.decode(&elem.encode(&(0..k * n).map(|_| value()).collect::<Vec<_>>()));
    let machine = MachineModel::c600();
    let (ctx, exe_op) = emit(plan, &w);
    ipuc_ir::verify(&ctx, exe_op).unwrap_or_else(|d| panic!("{}", d.message));
    let exe = build_executable(&ctx, exe_op).unwrap_or_else(|d| panic!("{}", d[0].message));
    check_fits(&exe, &layout(plan, &machine)).unwrap();
    let mut sim = Simulator::new(machine, SimConfig::default());
    sim.load(&exe).unwrap();
    sim.write_tensor("input0", &elem.encode(&x)).unwrap();
    sim.run().unwrap_or_else(|e| panic!("{plan}: {e}"));
    let y = s
        .variant
        .output_elem()
        .decode(&sim.read_tensor("output0").unwrap());
    let u = s.variant.output_elem().unit_roundoff();
    for r in 0..m {
        for j in 0..n {
            let (mut want, mut mag) = (0.0, 0.0);
            for kk in 0..k {
                want += x[r * k + kk] * w[kk * n + j];
                mag += (x[r * k + kk] * w[kk * n + j]).abs();
            }
            // One rounding per input panel, one per reduction round.
            let roundings = s.k_groups() + 1 + plan.grid_k.trailing_zeros();
            let tol = f64::from(roundings) * u * mag + 1e-6;
            assert!(
                (y[r * n + j] - want).abs() <= tol,
                "{plan}: Y[{r}][{j}] = {}, want {want}",
                y[r * n + j]
            );
        }
    }
    // The lowering receives only while no worker runs, so the simulator's
    // free incoming writes cost it nothing (ipu-arch/TIMING.md).
    let p = sim.profile().unwrap();
    let overlapped: u64 = p
        .tiles
        .iter()
        .map(|t| t.incoming_words_during_compute)
        .sum();
    assert_eq!(overlapped, 0, "{plan}: words received while workers ran");
    p.total_cycles
}

fn shape(m: u32, k: u32, n: u32, variant: AmpVariant) -> GemmShape {
    GemmShape {
        m,
        k,
        n,
        variant,
        epilogue: Default::default(),
    }
}

/// A plan with a forced grid.
fn grid(s: GemmShape, rows: u32, cols: u32) -> GemmPlan {
    split(s, rows, cols, 1)
}

/// A plan with a forced grid and K split.
fn split(s: GemmShape, rows: u32, cols: u32, k: u32) -> GemmPlan {
    evaluate(s, Grid { rows, cols, k }, &MachineModel::c600()).unwrap()
}

#[test]
fn the_planned_small_product_runs_on_one_tile() {
    let p = plan_gemm(shape(7, 40, 20, AmpVariant::F16), &MachineModel::c600())
        .unwrap()
        .plan;
    let cycles = run(&p, 1);
    // The estimate (compute and syncs) within a quarter of the simulation.
    let e = p.estimate.total();
    assert!(
        cycles <= e + e / 4 && e <= cycles + cycles / 4,
        "{p}: simulated {cycles}"
    );
}

#[test]
fn a_grid_with_broadcast_x_blocks() {
    // 3 grid rows (the last with fewer rows) x 4 grid columns (the last with
    // fewer groups): X blocks multicast along each grid row.
    run(&grid(shape(20, 40, 56, AmpVariant::F16), 3, 4), 2);
}

#[test]
fn k_splits_sum_their_partials_by_recursive_halving() {
    // 7 input panels: parts of 4+3 and 2+2+2+1 panels; 9 rows split
    // unevenly by the halving (5/4, then 3/2/2/2).
    let s = shape(9, 100, 40, AmpVariant::F16);
    run(&split(s, 1, 1, 2), 31);
    run(&split(s, 2, 3, 4), 32);
    run(&split(shape(5, 40, 24, AmpVariant::F32), 1, 2, 2), 33);
    // More K parts than a block has rows: some tiles own no rows at the end.
    run(&split(shape(3, 128, 16, AmpVariant::F16), 1, 1, 8), 34);
}

#[test]
fn f32_products_on_a_grid() {
    run(&grid(shape(13, 20, 30, AmpVariant::F32), 2, 3), 3);
}

#[test]
fn a_block_larger_than_one_send() {
    // 16 rows x 36 panels x 32 bytes = 18 KiB: more than 4095 words.
    run(&grid(shape(32, 576, 16, AmpVariant::F16), 2, 1), 4);
    run(&grid(shape(16, 576, 32, AmpVariant::F16), 1, 2), 5);
}

/// The executable of `plan` with weights `w`, built in a fresh context.
fn lowered(plan: &GemmPlan, w: &[f64]) -> Vec<u8> {
    let (ctx, exe) = emit(plan, w);
    build_executable(&ctx, exe).unwrap().to_bytes()
}

#[test]
fn lowering_is_deterministic() {
    // Same plan and weights, two contexts: byte-identical executables.
    let p = grid(shape(20, 40, 56, AmpVariant::F16), 3, 4);
    let w: Vec<f64> = (0..40 * 56).map(|i| f64::from(i % 7) - 3.0).collect();
    assert_eq!(lowered(&p, &w), lowered(&p, &w));
}

/// One receiving tile's program, as assembly printed from the lowered IR:
/// the exchange arming, the sync, the GEMM launch loop and both workers.
/// Changes to the lowering or the codelets show here as a reviewed diff.
#[test]
fn a_receiving_tiles_assembly() {
    let p = grid(shape(8, 24, 32, AmpVariant::F16), 2, 2);
    let w = vec![0.25; 24 * 32];
    let (ctx, exe) = emit(&p, &w);
    let tile = ipuc_dialects::ipu::body_ops(&ctx, exe)
        .into_iter()
        .find(|&t| ipuc_dialects::ipu::tile_index(&ctx, t) == Some(1))
        .unwrap();
    insta::assert_snapshot!(ipuc_backend_ipu::emit::tile_asm(&ctx, tile).text);
}
