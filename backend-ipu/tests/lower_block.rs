//! The MLP block lowered whole (LayerNorm, fc1 with bias and GELU, fc2,
//! bias and residual) and run on the simulator, against the block computed
//! in float64 from the same f16 inputs: shapes with token counts that are
//! not multiples of 16, one or several K parts, LN tiles feeding many
//! receivers.

mod common;

use common::{assert_block_accuracy, cosine_and_rel_l2, f16_bytes, run_lowered};
use ipuc_backend_ipu::codelets::gelu::GeluForm;
use ipuc_backend_ipu::emit::{build_executable, build_executable_on};
use ipuc_backend_ipu::lower::block::{
    emit_mlp, plan_mlp, reference_rows, Fp8Domains, LoweredMlp, MlpConstants, MlpPlan, MlpShape,
    FP8_MAX_REL_L2,
};
use ipuc_backend_ipu::lower::block_values::MlpValues;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, FloatKind, Location, Type};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use rand::{Rng, SeedableRng};

/// Lowers `plan`'s block with constants `k` into a fresh module; the host
/// tensors are `[m, c]` f16.
fn lower(plan: &MlpPlan, k: &MlpConstants, machine: &MachineModel) -> (Context, LoweredMlp) {
    let mut ctx = Context::new(ipuc_dialects::registry());
    let module = ipuc_ir::parse_source(&mut ctx, "empty.mlir", "module {}")
        .unwrap()
        .module;
    let body = ctx.entry_block(ctx.regions(module)[0]).unwrap();
    let dims = [i64::from(plan.shape.m), i64::from(plan.shape.c)];
    let ty = Type::tensor(&dims, Type::float(FloatKind::F16));
    let lowered = emit_mlp(
        &mut ctx,
        body,
        plan,
        k,
        (ty.clone(), ty),
        machine,
        Location::unknown(),
    )
    .unwrap_or_else(|d| panic!("{}", d.message));
    (ctx, lowered)
}

/// Lowers and runs the block of `shape` on random values; returns (cosine,
/// relative L2 error, simulated cycles, estimated cycles).
fn run(shape: MlpShape, seed: u64) -> (f64, f64, u64, u64) {
    let machine = MachineModel::c600();
    run_planned(shape, seed, &|s| plan_mlp(s, &machine))
}

/// [`run`] with the block planned by `plan`.
fn run_planned(
    mut shape: MlpShape,
    seed: u64,
    plan: &dyn Fn(MlpShape) -> Result<MlpPlan, String>,
) -> (f64, f64, u64, u64) {
    let m = shape.m as usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut values = MlpValues::random(shape, || rng.random_range(-1.0..1.0));
    // A block without LayerNorm's scale and shift: folded into fc1 as the
    // pipeline's fold-layernorm-affine does.
    if !shape.ln_affine {
        values.fold_ln();
    }
    if shape.fp8.is_some() {
        shape.fp8 = Some(values.quantize_fp8());
    }
    let (x, k) = (&values.x[..], &values.constants);
    let machine = MachineModel::c600();
    let plan = plan(shape).unwrap_or_else(|e| panic!("{e}"));
    let (ctx, lowered) = lower(&plan, k, &machine);
    let (y, sim) = run_lowered(&ctx, lowered.executable, machine, x, shape);
    let want = reference_rows(shape, x, k, &(0..m).collect::<Vec<_>>());
    let (cos, rel) = cosine_and_rel_l2(&y, &want);
    let cycles = sim.profile().unwrap().total_cycles;
    (cos, rel, cycles, lowered.estimate.total())
}

fn shape(m: u32, c: u32, h: u32, gelu: GeluForm) -> MlpShape {
    MlpShape {
        m,
        c,
        h,
        eps: 1e-6,
        ln_affine: true,
        gelu,
        fp8: None,
    }
}

#[test]
fn small_blocks_match_float64() {
    for (s, seed) in [
        (shape(12, 32, 48, GeluForm::Tanh), 1),
        (shape(50, 64, 80, GeluForm::Erf), 2),
        (shape(37, 48, 200, GeluForm::Tanh), 3),
    ] {
        assert_block_accuracy(s, run(s, seed), 0.999, 1e-2);
    }
}

/// FP8 blocks against float64 with the IR's FP8 quantization of
/// LayerNorm's and GELU's outputs: an inner size that is not a multiple of
/// a pair of output groups (fc1 pads it, fc2's last panel is half real),
/// token counts that are not multiples of 16, one and several K parts.
#[test]
fn fp8_blocks_match_float64() {
    let fp8 = |mut s: MlpShape| {
        // Any domains: `run` replaces them with the quantized weights'.
        s.fp8 = Some(Fp8Domains { fc1: 0, fc2: 0 });
        s
    };
    for (s, seed) in [
        (fp8(shape(12, 32, 48, GeluForm::Tanh)), 21),
        (fp8(shape(37, 64, 200, GeluForm::Tanh)), 22),
        (fp8(shape(100, 96, 272, GeluForm::Tanh)), 23),
    ] {
        assert_block_accuracy(s, run(s, seed), 0.999, FP8_MAX_REL_L2);
    }
}

/// LayerNorm's scale and shift folded into fc1 (the model's blocks after
/// `fold-layernorm-affine`): the LN tiles skip both, f16 and FP8, with
/// the same accuracy against float64.
#[test]
fn blocks_with_layernorm_folded_match_float64() {
    let folded = |s: MlpShape| MlpShape {
        ln_affine: false,
        ..s
    };
    let s = folded(shape(37, 48, 200, GeluForm::Tanh));
    assert_block_accuracy(s, run(s, 5), 0.999, 1e-2);
    let s = MlpShape {
        fp8: Some(Fp8Domains { fc1: 0, fc2: 0 }),
        ..folded(shape(37, 64, 200, GeluForm::Tanh))
    };
    assert_block_accuracy(s, run(s, 24), 0.999, FP8_MAX_REL_L2);
    // At FP8 the LN tiles' LayerNorm also copies x into 16-channel groups,
    // and the residual's transfers send a group's rows as one chunk (the
    // run above checks the sums through them).
    let plan = plan_mlp(s, &MachineModel::c600()).unwrap_or_else(|e| panic!("{e}"));
    let ln = plan.ln();
    let at = plan.layout.x_groups.expect("x's copy in groups");
    assert!(
        at + ln.x_copy_bytes_for_tile() <= plan.layout.x,
        "the copy lies below x's rows"
    );
    let (a, b) = ln.rows(1);
    let chunks = ln.x_chunks(1, (a, b), 2);
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        (chunks[0].address, chunks[0].words),
        (at + 2 * ln.panel_stride(), 8 * (b - a))
    );
    // f16 blocks and blocks with scale and shift send x's rows.
    let plan = plan_mlp(
        folded(shape(37, 64, 200, GeluForm::Tanh)),
        &MachineModel::c600(),
    )
    .unwrap();
    assert_eq!(plan.layout.x_groups, None);
}

/// Blocks whose weights are streamed in (`lower/stream.rs`): each column
/// block kept once, in pieces over its grid rows, gathered in exchanges A
/// and B. The same numbers as resident weights against float64, f16 and
/// FP8, with the pieces in private memory and the gathered blocks in
/// scratch; the exchanges' estimate grows by the weights' words.
#[test]
fn streamed_weights_match_float64() {
    use ipuc_backend_ipu::lower::block::{plan_mlp_in, Weights};
    use ipuc_backend_ipu::lower::window::Window;
    let machine = &MachineModel::c600();
    let planned = |weights| {
        move |s: MlpShape| {
            plan_mlp_in(
                s,
                machine,
                (None, None),
                (0, machine.tiles),
                Window::alone(machine),
                weights,
            )
        }
    };
    let fp8 = |mut s: MlpShape| {
        s.fp8 = Some(Fp8Domains { fc1: 0, fc2: 0 });
        s
    };
    for (s, seed, max_rel) in [
        (shape(100, 96, 272, GeluForm::Tanh), 31, 1e-2),
        (fp8(shape(100, 96, 272, GeluForm::Tanh)), 32, FP8_MAX_REL_L2),
    ] {
        let resident = planned(Weights::Resident)(s).unwrap_or_else(|e| panic!("{e}"));
        let streamed = planned(Weights::Streamed)(s).unwrap_or_else(|e| panic!("{e}"));
        // The case streams both products, and keeps less private memory.
        assert!(streamed.fc1.grid_rows > 1 && streamed.fc2.grid_rows > 1);
        assert!(streamed.layout.fc1.home.is_some() && streamed.layout.fc2.home.is_some());
        assert!(resident.layout.fc1.home.is_none());
        assert!(resident.weights_report().is_empty());
        let report = streamed.weights_report();
        assert!(
            report.contains("fc1's in pieces of") && report.contains("exchange B"),
            "{report}"
        );
        assert!(streamed.next.base < resident.next.base);
        let (cos, rel, cycles, estimate) = run_planned(s, seed, &planned(Weights::Streamed));
        assert_block_accuracy(s, (cos, rel, cycles, estimate), 0.999, max_rel);
        // The gathers lengthen the exchanges (estimated: the resident
        // block's simulation is `small_blocks_match_float64`'s kind).
        let values = MlpValues::random(resident.shape, || 0.5);
        let (_, lowered) = lower(&resident, &values.constants, machine);
        assert!(
            estimate > lowered.estimate.total(),
            "{estimate} {}",
            lowered.estimate.total()
        );
    }
}

/// One LN tile's whole program for a small block, as assembly: LayerNorm
/// called as a subroutine, then exchange A's sends at their scheduled
/// cycles (delay loops between them), the syncs of the steps it only
/// joins, and the LayerNorm instance itself. Bless deliberately: a change
/// here is a change of schedule or of codelet.
#[test]
fn an_ln_tiles_assembly() {
    let s = shape(12, 16, 32, GeluForm::Tanh);
    let machine = MachineModel::c600();
    let plan = plan_mlp(s, &machine).unwrap_or_else(|e| panic!("{e}"));
    let (c, h) = (16usize, 32usize);
    let ones = |n: usize| vec![0.5; n];
    let k = MlpConstants {
        gamma: ones(c),
        beta: ones(c),
        w1: ones(c * h),
        b1: ones(h),
        w2: ones(h * c),
        b2: ones(c),
    };
    let (ctx, lowered) = lower(&plan, &k, &machine);
    let last = *plan.ln_tiles.last().unwrap();
    let tile = ipuc_dialects::ipu::body_ops(&ctx, lowered.executable)
        .into_iter()
        .find(|&t| ipuc_dialects::ipu::tile_index(&ctx, t) == Some(last))
        .expect("the last LN tile");
    insta::assert_snapshot!(ipuc_backend_ipu::emit::tile_asm(&ctx, tile).text);
}

/// The reduction and residual adds of a tile are launches of one shape:
/// the tile holds one copy of the add's worker code, which every add's
/// `main` starts. And the block lowers to the same bytes every time,
/// its tiles assembled on any number of host threads.
#[test]
fn a_tiles_adds_share_one_worker_and_the_bytes_repeat() {
    let s = shape(37, 48, 200, GeluForm::Tanh);
    let machine = MachineModel::c600();
    let plan = plan_mlp(s, &machine).unwrap_or_else(|e| panic!("{e}"));
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    let values = MlpValues::random(s, || rng.random_range(-1.0..1.0));
    let (ctx, lowered) = lower(&plan, &values.constants, &machine);
    let mut shared = 0;
    for tile in ipuc_dialects::ipu::body_ops(&ctx, lowered.executable)
        .into_iter()
        .filter(|&t| ctx.name_str(t) == ipuc_dialects::ipu::TILE)
    {
        let text = ipuc_backend_ipu::emit::tile_asm(&ctx, tile).text;
        let workers = text
            .lines()
            .filter(|l| l.ends_with("add_f16_worker:"))
            .count();
        let starts = text
            .lines()
            .filter(|l| l.contains("setzi $m1, ") && l.ends_with("add_f16_worker"))
            .count();
        assert!(
            workers <= 1,
            "{workers} copies of the add's worker:\n{text}"
        );
        if starts > 1 {
            shared += 1;
        }
    }
    assert!(shared > 0, "no tile runs two adds");
    let bytes = |ctx: &Context, exe| {
        build_executable(ctx, exe)
            .unwrap_or_else(|d| panic!("{}", d[0].message))
            .to_bytes()
    };
    let (again, relowered) = lower(&plan, &values.constants, &machine);
    let once = bytes(&ctx, lowered.executable);
    assert_eq!(once, bytes(&again, relowered.executable));
    // The tiles are assembled on host threads: any number gives the same
    // executable.
    for threads in [1, 3, 64] {
        let exe = build_executable_on(&ctx, lowered.executable, threads)
            .unwrap_or_else(|d| panic!("{}", d[0].message));
        assert_eq!(exe.to_bytes(), once, "{threads} threads");
    }
}

/// fc2's bias is kept as one 32-byte row per output group of a tile's
/// column block (in region 0), not as rows over its owned rows: the
/// broadcast beside LayerNorm writes those, and the block still matches
/// float64 (`small_blocks_match_float64`, whose biases are random). Here:
/// every fc2 tile that owns rows keeps exactly its groups' rows, no tile
/// keeps bias rows, and the broadcast writes the add column's layout.
#[test]
fn fc2s_bias_is_a_row_per_group_broadcast_over_the_owned_rows() {
    use ipuc_backend_ipu::lower::block::fc2_bias_broadcast;
    use ipuc_backend_ipu::lower::plan::Grid;
    let s = shape(37, 48, 200, GeluForm::Tanh);
    let machine = MachineModel::c600();
    // fc2 with a K split of 2 (the search's own grid may have none).
    let fc2_grid = Grid {
        rows: 37,
        cols: 3,
        k: 2,
    };
    let plan = ipuc_backend_ipu::lower::block::plan_mlp_with(s, &machine, (None, Some(fc2_grid)))
        .unwrap_or_else(|e| panic!("{e}"));
    let p2 = &plan.fc2;
    assert!(p2.grid_k > 1, "several K parts own rows: {p2:?}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let values = MlpValues::random(s, || rng.random_range(-1.0..1.0));
    let (ctx, lowered) = lower(&plan, &values.constants, &machine);
    let exe =
        build_executable(&ctx, lowered.executable).unwrap_or_else(|d| panic!("{}", d[0].message));
    let mut kept = 0;
    for j in 0..p2.grid_cols {
        for k in 0..p2.grid_k {
            let b = fc2_bias_broadcast(&plan, j, k);
            for i in 0..p2.grid_rows {
                let tile = p2.tile(i, j, k);
                let image = &exe
                    .tiles
                    .iter()
                    .find(|t| t.tile == tile)
                    .expect("an fc2 tile")
                    .image;
                let section = image
                    .sections
                    .iter()
                    .find(|x| x.name == format!(".const.fc2_bias_col{j}"));
                assert!(
                    image
                        .sections
                        .iter()
                        .all(|x| !x.name.contains("bias_rows_col")
                            || x.name.starts_with(".const.fc1")),
                    "tile {tile} keeps fc2 bias rows"
                );
                match (&b, section) {
                    (Some(b), Some(x)) => {
                        assert_eq!(x.address, plan.layout.bias_src);
                        assert_eq!(x.bytes.len() as u32, p2.groups_of(j) * 32);
                        // The first group's row is the bias of its 16
                        // columns.
                        let col0 = (j * p2.groups * 16) as usize;
                        assert_eq!(
                            &x.bytes[..32],
                            &f16_bytes(
                                &values.constants.b2[col0..col0 + 16]
                                    .iter()
                                    .map(|&v| half::f16::from_f64(v))
                                    .collect::<Vec<_>>()
                            )[..]
                        );
                        assert_eq!(b.groups, p2.groups_of(j));
                        assert_eq!(b.dst, plan.layout.bias);
                        assert_eq!(b.group_stride, b.rows * 32);
                        kept += 1;
                    }
                    (None, None) => {}
                    (b, x) => panic!(
                        "tile {tile}: broadcast {b:?}, bias section {:?}",
                        x.map(|x| &x.name)
                    ),
                }
            }
        }
    }
    assert!(kept > 0);
}

/// The simulator gives the same run on any number of host threads: an f16
/// and an FP8 block, many tiles exchanging over several supersteps, run on
/// 1, 2 and 3 threads, agree on the profile (every tile's cycles per
/// superstep, instructions, issues), the output and every byte of every
/// tile's memory.
#[test]
fn simulating_on_more_threads_changes_nothing() {
    let machine = MachineModel::c600();
    let mut fp8 = shape(37, 64, 200, GeluForm::Tanh);
    fp8.fp8 = Some(Fp8Domains { fc1: 0, fc2: 0 });
    for (mut s, seed) in [(shape(50, 64, 80, GeluForm::Erf), 31), (fp8, 32)] {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut values = MlpValues::random(s, || rng.random_range(-1.0..1.0));
        if s.fp8.is_some() {
            s.fp8 = Some(values.quantize_fp8());
        }
        let plan = plan_mlp(s, &machine).unwrap_or_else(|e| panic!("{e}"));
        let (ctx, lowered) = lower(&plan, &values.constants, &machine);
        let exe = build_executable(&ctx, lowered.executable)
            .unwrap_or_else(|d| panic!("{}", d[0].message));
        assert!(exe.tiles.len() > 8, "{s:?}: {} tiles", exe.tiles.len());
        let x: Vec<half::f16> = values.x.iter().map(|&v| half::f16::from_f64(v)).collect();
        let input = f16_bytes(&x);
        let runs: Vec<_> = [1, 2, 3]
            .into_iter()
            .map(|threads| {
                let config = SimConfig {
                    threads: std::num::NonZeroUsize::new(threads),
                    ..SimConfig::default()
                };
                let mut sim = Simulator::new(machine.clone(), config);
                sim.load(&exe).unwrap();
                sim.write_tensor("input0", &input).unwrap();
                sim.run().unwrap_or_else(|e| panic!("{s:?}: {e}"));
                let memory: Vec<Vec<u8>> = exe
                    .tiles
                    .iter()
                    .map(|t| {
                        let size = machine.sram_end - machine.sram_base;
                        sim.read_memory(t.tile, machine.sram_base, size).unwrap()
                    })
                    .collect();
                let profile = sim.profile().unwrap().clone();
                (profile, sim.read_tensor("output0").unwrap(), memory)
            })
            .collect();
        assert!(runs[0].0.tiles.iter().any(|t| t.supersteps.len() > 2));
        for (threads, run) in [2, 3].into_iter().zip(&runs[1..]) {
            assert!(run.0 == runs[0].0, "{s:?}: profile on {threads} threads");
            assert!(run.1 == runs[0].1, "{s:?}: output on {threads} threads");
            assert!(run.2 == runs[0].2, "{s:?}: memory on {threads} threads");
        }
    }
}

/// so400m's MLP block (729 tokens, 1152 wide, 4304 inner) plans alone at
/// f16: Y at the top of its element pairs, the weights right below it,
/// X below both out of Y's pairs, LayerNorm's rows at the top of the LN
/// tiles (which run no product). Plan only: the block runs on the
/// simulator in `ipu-run --extract mlp:0` (README).
#[test]
fn so400ms_f16_block_plans_alone() {
    let m = MachineModel::c600();
    let plan = ipuc_backend_ipu::lower::block::plan_mlp(shape(729, 1152, 4304, GeluForm::Tanh), &m)
        .unwrap_or_else(|e| panic!("{e}"));
    let lay = plan.layout;
    let pair = 2 * m.element_bytes;
    for (p, l) in [(&plan.fc1, &lay.fc1), (&plan.fc2, &lay.fc2)] {
        let v = p.vertex();
        // X ends at or below the pair Y starts in; Y ends below the top.
        assert!(l.input + v.input_bytes() as u32 <= l.output / pair * pair);
        assert!(l.output + v.output_bytes() as u32 <= m.sram_end);
        assert!(l.input >= plan.next.scratch_low);
    }
    assert!(lay.ln_out > lay.fc1.input);
    assert!(lay.ln_out < m.sram_end);
}

/// A chain keeps every block's scratch above the end of every block's
/// private memory, later blocks' constants included (`Window::floor`):
/// so400m's block plans the same with the floor at its scratch's bottom,
/// and fails, saying why, with the floor a little higher.
#[test]
fn a_blocks_scratch_stays_above_the_chains_floor() {
    use ipuc_backend_ipu::lower::block::{plan_mlp_in, Weights};
    use ipuc_backend_ipu::lower::window::Window;
    let m = MachineModel::c600();
    let s = shape(729, 1152, 4304, GeluForm::Tanh);
    let alone = plan_mlp(s, &m).unwrap_or_else(|e| panic!("{e}"));
    let low = alone.next.scratch_low;
    assert!(low >= alone.next.base && low < m.sram_end, "0x{low:x}");
    let mut window = Window::alone(&m);
    window.floor = low;
    let plan = |w| plan_mlp_in(s, &m, (None, None), (0, m.tiles), w, Weights::Resident);
    let at_floor = plan(window).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(at_floor.layout, alone.layout);
    window.floor = low + 16;
    let e = plan(window).unwrap_err();
    assert!(e.contains("does not fit"), "{e}");
    assert!(e.contains("the whole chain keeps"), "{e}");
}

/// After so400m's f16 attention block (86,016 bytes of private memory a
/// tile) the MLP block keeps its weights resident: its first search is a
/// little short (1,552 bytes), and the products fit only when searched
/// with tens of KB less (their buffers are whole element pairs), which
/// the search again reaches by at least a memory element a try, not by
/// the shortfall alone.
#[test]
fn so400ms_f16_block_after_attention_keeps_its_weights() {
    use ipuc_backend_ipu::lower::block::{plan_mlp_in, Weights};
    use ipuc_backend_ipu::lower::window::Window;
    let m = MachineModel::c600();
    let s = shape(729, 1152, 4304, GeluForm::Tanh);
    let mut window = Window::alone(&m).after_block();
    window.private(86_016);
    let p = plan_mlp_in(s, &m, (None, None), (0, m.tiles), window, Weights::Resident)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(p.layout.fc1.home.is_none() && p.layout.fc2.home.is_none());
    assert!(p.next.scratch_low >= p.next.base);
}

/// so400m's MLP block after blocks that keep 192,000 bytes of every tile
/// (with the reductions' receive and first result buffers sharing pairs
/// and fc1's over its input, resident weights fit up to about 172,000,
/// streamed about 204,000): resident weights do not
/// fit; streamed in, they do once the products are searched again with
/// the memory the block's first layout found missing taken away (the
/// first search fits each product alone).
#[test]
fn so400ms_block_after_attention_streams_its_weights() {
    use ipuc_backend_ipu::lower::block::{plan_mlp_in, Weights};
    use ipuc_backend_ipu::lower::window::Window;
    let m = MachineModel::c600();
    let s = shape(729, 1152, 4304, GeluForm::Tanh);
    let mut window = Window::alone(&m).after_block();
    window.private(192_000);
    let plan = |w| plan_mlp_in(s, &m, (None, None), (0, m.tiles), window, w);
    let e = plan(Weights::Resident).unwrap_err();
    assert!(e.contains("does not fit"), "{e}");
    let p = plan(Weights::Streamed).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.layout.fc1.home.is_some() && p.layout.fc2.home.is_some());
    assert!(p.next.scratch_low >= p.next.base);
    // x's rows on the LN tiles are scratch (the link before the block
    // writes them), in the element pair below LayerNorm's output, not in
    // the block's private memory.
    let pair = 2 * m.element_bytes;
    assert!(p.layout.x >= p.next.scratch_low);
    assert!(p.layout.x / pair < p.layout.ln_out / pair);
    assert!(p
        .ln_tiles
        .iter()
        .all(|&t| t >= p.fc1.tiles().max(p.fc2.tiles())));
}

/// fc1 split over K in 2 and 8 parts (one and three reduction rounds,
/// its result ending in the first result buffer), weights streamed: the
/// first result lies below X (fc2's input arrives over X while exchange B
/// reads fc1's result), 8 mod 16 bytes from the receive buffer, the
/// weights right below Y; the block matches float64 on the simulator (its
/// bank checks run every round's adds).
#[test]
fn odd_reduction_rounds_keep_fc1s_result_below_its_input() {
    use ipuc_backend_ipu::lower::block::{plan_mlp_in, Weights};
    use ipuc_backend_ipu::lower::plan::Grid;
    use ipuc_backend_ipu::lower::window::Window;
    let machine = &MachineModel::c600();
    let s = shape(64, 256, 512, GeluForm::Tanh);
    for (k, seed) in [(2, 41), (8, 42)] {
        let grid = Grid {
            rows: 2,
            cols: 4,
            k,
        };
        let plan = |s: MlpShape| {
            plan_mlp_in(
                s,
                machine,
                (Some(grid), None),
                (0, machine.tiles),
                Window::alone(machine),
                Weights::Streamed,
            )
        };
        let p = plan(s).unwrap_or_else(|e| panic!("{e}"));
        let lay = &p.layout.fc1;
        let [recv, first, second] = lay.reduction.expect("a K split");
        assert_eq!(second, lay.output);
        assert!(first < lay.input, "k = {k}: {first:x} {:x}", lay.input);
        let apart = i64::from(first) - i64::from(recv);
        assert_eq!(apart.rem_euclid(16), 8, "k = {k}");
        if lay.home.is_some() {
            assert!(lay.weights < lay.output && lay.weights > lay.input);
        }
        assert_block_accuracy(s, run_planned(s, seed, &plan), 0.999, 1e-2);
    }
}
