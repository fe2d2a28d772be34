//! `ipu-bench amp`: an AMP matrix block `[N,C] x [C,K] -> [N,K]` on all
//! tiles of the chip at once, reporting simulated cycles per tile, TFLOPS
//! and the fraction of the FP16 AMP peak.

use ipuc_backend_ipu::codelets::amp::{AmpBlock, AmpMode, AmpVariant, Elem};
use ipuc_backend_ipu::codelets::amp_f16acts::{AmpF8WeightsF16Acts, CHANNELS};
use ipuc_backend_ipu::codelets::amp_poplibs::AmpPoplibsShaped;
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_ipu_arch::{assemble, AsmOptions, Executable, MachineModel, TileProgram};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use rand::SeedableRng;
use serde::Serialize;

use super::BenchError;

/// One measured row count.
#[derive(Clone, Debug, Serialize)]
pub struct AmpResult {
    /// Rows N per tile.
    pub n: u32,
    /// Simulated cycles of the slowest tile (supervisor start to exit).
    pub cycles_per_tile: u64,
    /// The codelet's instruction-count estimate.
    pub estimated_cycles: u64,
    /// Achieved TFLOPS over all tiles at the machine's clock.
    pub tflops: f64,
    /// Percent of the FP16 AMP peak of the machine.
    pub percent_of_fp16_peak: f64,
    /// Percent of the peak of the instruction the block uses.
    pub percent_of_variant_peak: f64,
    /// Tiles whose outputs were checked against the float64 reference.
    pub tiles_verified: u32,
    /// Largest error over the checked elements, in units of the tolerance.
    pub worst_error_over_tolerance: f64,
    /// Simulated instructions.
    pub instructions: u64,
    /// Host seconds the simulation took.
    pub host_seconds: f64,
}

/// A whole `amp` run.
#[derive(Clone, Debug, Serialize)]
pub struct AmpReport {
    /// Machine name.
    pub machine: String,
    /// Clock in Hz.
    pub clock_hz: f64,
    /// Tiles used.
    pub tiles: u32,
    /// The AMP instruction.
    pub instruction: String,
    /// `accumulate` or `overwrite`.
    pub mode: String,
    /// Input channels C and output channels K.
    pub c: usize,
    /// Output channels.
    pub k: usize,
    /// FP16 AMP peak, TFLOPS.
    pub fp16_peak_tflops: f64,
    /// One entry per N.
    pub results: Vec<AmpResult>,
}

/// Random values in +-[lo, hi]: never zero.
fn random_bytes(rng: &mut rand::rngs::StdRng, elem: Elem, n: usize, lo: f64, hi: f64) -> Vec<u8> {
    elem.encode(&ipuc_test_support::random::nonzeros(rng, n, lo, hi))
}

/// What `ipu-bench amp` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmpBench {
    /// One AMP block of the given instruction.
    Block(AmpVariant),
    /// FP8 weights with f16 activations cast to FP8 in the same launch
    /// ([`AmpF8WeightsF16Acts`], activation scale 0).
    F8WeightsF16Acts,
    /// The FP16 block as poplibs' `ConvPartial1x1Out` vertex runs it
    /// ([`AmpPoplibsShaped`], overwrite); its estimate is poplibs' formula.
    PoplibsShaped,
}

impl AmpBench {
    /// The AMP instruction the bench's block runs.
    pub fn amp_variant(self) -> AmpVariant {
        match self {
            AmpBench::Block(v) => v,
            AmpBench::F8WeightsF16Acts => AmpVariant::F8,
            AmpBench::PoplibsShaped => AmpVariant::F16,
        }
    }

    /// The instruction column of the report.
    pub fn describe(self) -> String {
        match self {
            AmpBench::Block(v) => v.mnemonic().into(),
            AmpBench::F8WeightsF16Acts => "f16v4tof8 + f8v8hihov4amp".into(),
            AmpBench::PoplibsShaped => "f16v4hihov4amp, poplibs-shaped vertex".into(),
        }
    }
}

/// Assembles `text` for every tile of `machine` and loads it.
/// Writes one tile's operands of `block`: the input at `input_at`, the
/// weights, the partials, and an output poisoned with 0x5a that the block
/// must overwrite.
fn write_operands(
    sim: &mut Simulator,
    tile: u32,
    block: &AmpBlock,
    input_at: u32,
    [input, weights, partials]: [&[u8]; 3],
    rows: usize,
) -> Result<(), BenchError> {
    sim.write_memory(tile, input_at, input)?;
    sim.write_memory(tile, block.weights, weights)?;
    sim.write_memory(tile, block.partials, partials)?;
    sim.write_memory(tile, block.output, &vec![0x5a; rows * 32])?;
    Ok(())
}

/// Runs the simulator; the host seconds it took.
fn timed_run(sim: &mut Simulator) -> Result<f64, BenchError> {
    let start = std::time::Instant::now();
    sim.run()?;
    Ok(start.elapsed().as_secs_f64())
}

/// What [`run_every_tile`] checked and measured.
struct Checked {
    /// Tiles whose numerics were checked.
    tiles: u32,
    /// The largest error over tolerance among them.
    worst: f64,
    /// The run's host time, seconds.
    host_seconds: f64,
}

/// Writes every tile's operands (`fill` draws them from the tile's own
/// generator, writes them and returns them), runs all the tiles at once,
/// then checks the first, one in the middle and the last (`check` of a
/// tile and its operands: the largest error over tolerance, or the first
/// element beyond it).
fn run_every_tile<T>(
    sim: &mut Simulator,
    machine: &MachineModel,
    seed: u64,
    mut fill: impl FnMut(&mut Simulator, u32, &mut rand::rngs::StdRng) -> Result<T, BenchError>,
    check: impl Fn(&Simulator, u32, &T) -> Result<f64, BenchError>,
) -> Result<Checked, BenchError> {
    let checked = [0, machine.tiles / 2, machine.tiles - 1];
    let mut inputs = Vec::new();
    for tile in 0..machine.tiles {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (u64::from(tile) << 20));
        let operands = fill(sim, tile, &mut rng)?;
        if checked.contains(&tile) {
            inputs.push((tile, operands));
        }
    }
    let host_seconds = timed_run(sim)?;
    let mut worst: f64 = 0.0;
    for (tile, operands) in &inputs {
        worst = worst.max(check(sim, *tile, operands)?);
    }
    Ok(Checked {
        tiles: inputs.len() as u32,
        worst,
        host_seconds,
    })
}

fn load_on_every_tile(
    machine: &MachineModel,
    text: &str,
    file: String,
) -> Result<Simulator, BenchError> {
    let opts = AsmOptions {
        file,
        machine: machine.clone(),
        ..AsmOptions::default()
    };
    let image = assemble(text, &opts).map_err(|e| BenchError::Other(e.to_string()))?;
    let tiles: Vec<TileProgram> = (0..machine.tiles)
        .map(|tile| TileProgram {
            tile,
            image: image.clone(),
        })
        .collect();
    let exe = Executable::new(&machine.name, tiles, vec![], vec![])
        .map_err(|e| BenchError::Other(e.to_string()))?;
    let mut sim = Simulator::new(machine.clone(), SimConfig::default());
    sim.load(&exe)?;
    Ok(sim)
}

/// Runs the fused f16-activation / FP8-weight block with `n` rows on every
/// tile of `machine`, checking three tiles against the quantised float64
/// reference.
pub fn run_amp_f8_f16acts(
    machine: &MachineModel,
    mode: AmpMode,
    n: u32,
    seed: u64,
) -> Result<AmpResult, BenchError> {
    if !machine.has_fp8 {
        return Err(BenchError::Usage(format!(
            "`f8v8hihov4amp` needs FP8; machine `{}` has none",
            machine.name
        )));
    }
    let c = AmpF8WeightsF16Acts::place(mode, n, 0, machine)?;
    let block = &c.block;
    let mut sim = load_on_every_tile(machine, &c.assembly()?, "amp_f8_f16acts.S".into())?;
    let rows = n as usize;
    let checked = run_every_tile(
        &mut sim,
        machine,
        seed,
        |sim, tile, rng| {
            let acts = random_bytes(rng, Elem::F16, rows * CHANNELS, 0.05, 2.0);
            let weights = random_bytes(rng, Elem::F8, AmpVariant::F8.weight_bytes(), 0.05, 2.0);
            let partials = random_bytes(rng, Elem::F16, rows * 16, 0.01, 4.0);
            write_operands(
                sim,
                tile,
                block,
                c.activations,
                [&acts, &weights, &partials],
                rows,
            )?;
            Ok((acts, weights, partials))
        },
        |sim, tile, (acts, weights, partials)| {
            let got = Elem::F16.decode(&sim.read_memory(tile, block.output, n * 32)?);
            let want = c.reference(
                acts,
                weights,
                (mode == AmpMode::Accumulate).then_some(&partials[..]),
            );
            check(AmpVariant::F8, tile, n, &got, &want)
        },
    )?;
    finish(
        machine,
        AmpVariant::F8,
        (block.rows, block.macs()),
        c.estimate_cycles()?,
        &sim,
        checked,
    )
}

/// The largest error over tolerance, or the first element beyond it.
fn check(
    variant: AmpVariant,
    tile: u32,
    n: u32,
    got: &[f64],
    want: &[(f64, f64)],
) -> Result<f64, BenchError> {
    let mut worst: f64 = 0.0;
    for (i, (g, (w, mag))) in got.iter().zip(want).enumerate() {
        let tol = variant.tolerance(*w, *mag);
        let ratio = (g - w).abs() / tol;
        if ratio.is_nan() || ratio > 1.0 {
            return Err(BenchError::WrongResults(format!(
                "tile {tile} N {n} element {i} (row {}, column {}): simulated {g}, reference {w}, tolerance {tol:e}",
                i / variant.out_channels(),
                i % variant.out_channels()
            )));
        }
        worst = worst.max(ratio);
    }
    Ok(worst)
}

/// The measured result of a finished run.
fn finish(
    machine: &MachineModel,
    variant: AmpVariant,
    (rows, macs): (u32, u64),
    estimated_cycles: u64,
    sim: &Simulator,
    checked: Checked,
) -> Result<AmpResult, BenchError> {
    let profile = sim
        .profile()
        .ok_or_else(|| BenchError::Other("the simulator kept no profile".into()))?;
    let cycles = profile.tiles.iter().map(|t| t.end_cycle).max().unwrap_or(0);
    let flops = 2.0 * macs as f64 * f64::from(machine.tiles);
    let achieved = flops / (cycles as f64 / machine.clock_hz);
    Ok(AmpResult {
        n: rows,
        cycles_per_tile: cycles,
        estimated_cycles,
        tflops: achieved / 1e12,
        percent_of_fp16_peak: 100.0 * achieved / AmpVariant::F16.peak_flops(machine),
        percent_of_variant_peak: 100.0 * achieved / variant.peak_flops(machine),
        tiles_verified: checked.tiles,
        worst_error_over_tolerance: checked.worst,
        instructions: sim.instructions(),
        host_seconds: checked.host_seconds,
    })
}

/// Runs the block with `n` rows on every tile of `machine`.
pub fn run_amp(
    machine: &MachineModel,
    variant: AmpVariant,
    mode: AmpMode,
    n: u32,
    seed: u64,
) -> Result<AmpResult, BenchError> {
    if variant.needs_fp8() && !machine.has_fp8 {
        return Err(BenchError::Usage(format!(
            "`{}` needs FP8; machine `{}` has none",
            variant.mnemonic(),
            machine.name
        )));
    }
    let block = AmpBlock::place(variant, mode, n, machine)?;
    let mut sim = load_on_every_tile(
        machine,
        &block.assembly()?,
        format!("amp_{}.S", variant.name()),
    )?;
    let rows = n as usize;
    let (lo, hi) = if variant == AmpVariant::F8 {
        (0.05, 2.0)
    } else {
        (0.01, 1.0)
    };
    let checked = run_every_tile(
        &mut sim,
        machine,
        seed,
        |sim, tile, rng| {
            let input = random_bytes(
                rng,
                variant.input_elem(),
                rows * variant.in_channels(),
                lo,
                hi,
            );
            let weights = random_bytes(
                rng,
                variant.input_elem(),
                variant.weight_bytes() / variant.input_elem().size(),
                lo,
                hi,
            );
            let partials = random_bytes(
                rng,
                variant.output_elem(),
                rows * variant.out_channels(),
                0.01,
                4.0,
            );
            write_operands(
                sim,
                tile,
                &block,
                block.input,
                [&input, &weights, &partials],
                rows,
            )?;
            Ok((input, weights, partials))
        },
        |sim, tile, (input, weights, partials)| {
            let got = variant
                .output_elem()
                .decode(&sim.read_memory(tile, block.output, n * 32)?);
            let want = variant.reference(
                input,
                weights,
                (mode == AmpMode::Accumulate).then_some(&partials[..]),
            );
            check(variant, tile, n, &got, &want)
        },
    )?;
    finish(
        machine,
        variant,
        (block.rows, block.macs()),
        block.estimate_cycles()?,
        &sim,
        checked,
    )
}

/// Runs the poplibs-shaped vertex ([`AmpPoplibsShaped`]: one conv group,
/// one output group, f16 partials zeroed) with `n` rows on every tile of
/// `machine`, checking three tiles against float64; the estimate column is
/// poplibs' published formula for `ConvPartial1x1Out`.
pub fn run_amp_poplibs(machine: &MachineModel, n: u32, seed: u64) -> Result<AmpResult, BenchError> {
    let v = AmpPoplibsShaped::place(n, 1, 1, machine)?;
    let text = v.program(0, machine)?.assembly();
    let mut sim = load_on_every_tile(machine, &text, "amp_poplibs.S".into())?;
    let rows = n as usize;
    let (input_at, panel_at, output_at) = (
        v.input_field(0, machine),
        v.panel(0, 0),
        v.output_field(0, 0, machine),
    );
    let checked = run_every_tile(
        &mut sim,
        machine,
        seed,
        |sim, tile, rng| {
            let input = random_bytes(rng, Elem::F16, rows * 16, 0.01, 1.0);
            let weights = random_bytes(rng, Elem::F16, 256, 0.01, 1.0);
            sim.write_memory(tile, input_at, &input)?;
            sim.write_memory(tile, panel_at, &weights)?;
            sim.write_memory(tile, output_at, &vec![0x5a; rows * 32])?;
            Ok((input, weights))
        },
        |sim, tile, (input, weights)| {
            let got = Elem::F16.decode(&sim.read_memory(tile, output_at, n * 32)?);
            let want = AmpVariant::F16.reference(input, weights, None);
            check(AmpVariant::F16, tile, n, &got, &want)
        },
    )?;
    finish(
        machine,
        AmpVariant::F16,
        (n, v.macs()),
        v.poplibs_estimate(),
        &sim,
        checked,
    )
}

/// Runs every N and collects the report.
pub fn run_amp_report(
    machine: &MachineModel,
    bench: AmpBench,
    mode: AmpMode,
    ns: &[u32],
) -> Result<AmpReport, BenchError> {
    let variant = bench.amp_variant();
    let mut results = Vec::new();
    for (i, &n) in ns.iter().enumerate() {
        tracing::info!(n, "running the AMP block on every tile");
        let seed = 0x1bad_5eed + i as u64;
        results.push(match bench {
            AmpBench::Block(v) => run_amp(machine, v, mode, n, seed)?,
            AmpBench::F8WeightsF16Acts => run_amp_f8_f16acts(machine, mode, n, seed)?,
            AmpBench::PoplibsShaped => run_amp_poplibs(machine, n, seed)?,
        });
    }
    Ok(AmpReport {
        machine: machine.name.clone(),
        clock_hz: machine.clock_hz,
        tiles: machine.tiles,
        instruction: bench.describe(),
        mode: match mode {
            AmpMode::Accumulate => "accumulate".into(),
            AmpMode::Overwrite => "overwrite".into(),
        },
        c: variant.in_channels(),
        k: variant.out_channels(),
        fp16_peak_tflops: AmpVariant::F16.peak_flops(machine) / 1e12,
        results,
    })
}

/// The human-readable table.
pub fn format_amp_report(r: &AmpReport) -> String {
    let mut s = format!(
        "AMP block [N,{}] x [{},{}] with {} ({}) on {} tiles of `{}` at {:.2} GHz; FP16 peak {:.1} TFLOPS\n",
        r.c,
        r.c,
        r.k,
        r.instruction,
        r.mode,
        r.tiles,
        r.machine,
        r.clock_hz / 1e9,
        r.fp16_peak_tflops
    );
    let estimate = if r.instruction.contains("poplibs") {
        "  poplibs"
    } else {
        " estimate"
    };
    s.push_str(&format!(
        "     N  cycles/tile {estimate}   TFLOPS  % FP16 peak  % instr peak  verified\n"
    ));
    for x in &r.results {
        s.push_str(&format!(
            "{:>6}  {:>11}  {:>8}  {:>7.1}  {:>11.1}  {:>12.1}  {} tiles (worst {:.2} of tolerance)\n",
            x.n,
            x.cycles_per_tile,
            x.estimated_cycles,
            x.tflops,
            x.percent_of_fp16_peak,
            x.percent_of_variant_peak,
            x.tiles_verified,
            x.worst_error_over_tolerance
        ));
    }
    s
}
