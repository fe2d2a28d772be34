//! `ipu-bench amp`: an AMP matrix block `[N,C] x [C,K] -> [N,K]` on all
//! tiles of the chip at once, reporting simulated cycles per tile, TFLOPS
//! and the fraction of the FP16 AMP peak.

use ipuc_backend_ipu::codelets::amp::{AmpBlock, AmpMode, AmpVariant, Elem};
use ipuc_backend_ipu::target::{assemble, AsmOptions, Executable, MachineModel, TileProgram};
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use rand::{Rng, SeedableRng};
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
    let v: Vec<f64> = (0..n)
        .map(|_| {
            let m = rng.random_range(lo..hi);
            if rng.random_bool(0.5) {
                m
            } else {
                -m
            }
        })
        .collect();
    elem.encode(&v)
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
    let text = block.assembly()?;
    let opts = AsmOptions {
        file: format!("amp_{}.S", variant.name()),
        machine: machine.clone(),
        ..AsmOptions::default()
    };
    let image = assemble(&text, &opts).map_err(|e| BenchError::Other(e.to_string()))?;
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
    let rows = n as usize;
    let (lo, hi) = if variant == AmpVariant::F8 {
        (0.05, 2.0)
    } else {
        (0.01, 1.0)
    };
    // Tiles whose numerics are checked: the first, one in the middle, the last.
    let checked = [0, machine.tiles / 2, machine.tiles - 1];
    let mut inputs = Vec::new();
    for tile in 0..machine.tiles {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (u64::from(tile) << 20));
        let input = random_bytes(
            &mut rng,
            variant.input_elem(),
            rows * variant.in_channels(),
            lo,
            hi,
        );
        let weights = random_bytes(
            &mut rng,
            variant.input_elem(),
            variant.weight_bytes() / variant.input_elem().size(),
            lo,
            hi,
        );
        let partials = random_bytes(
            &mut rng,
            variant.output_elem(),
            rows * variant.out_channels(),
            0.01,
            4.0,
        );
        sim.write_memory(tile, block.input, &input)?;
        sim.write_memory(tile, block.weights, &weights)?;
        sim.write_memory(tile, block.partials, &partials)?;
        sim.write_memory(tile, block.output, &vec![0x5a; rows * 32])?;
        if checked.contains(&tile) {
            inputs.push((tile, input, weights, partials));
        }
    }
    let start = std::time::Instant::now();
    sim.run()?;
    let host_seconds = start.elapsed().as_secs_f64();
    let mut worst: f64 = 0.0;
    for (tile, input, weights, partials) in &inputs {
        let got = variant
            .output_elem()
            .decode(&sim.read_memory(*tile, block.output, n * 32)?);
        let want = variant.reference(
            input,
            weights,
            (mode == AmpMode::Accumulate).then_some(&partials[..]),
        );
        for (i, (g, (w, mag))) in got.iter().zip(&want).enumerate() {
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
    }
    let profile = sim
        .profile()
        .ok_or_else(|| BenchError::Other("the simulator kept no profile".into()))?;
    let cycles = profile.tiles.iter().map(|t| t.end_cycle).max().unwrap_or(0);
    let flops = 2.0 * block.macs() as f64 * f64::from(machine.tiles);
    let achieved = flops / (cycles as f64 / machine.clock_hz);
    Ok(AmpResult {
        n,
        cycles_per_tile: cycles,
        estimated_cycles: block.estimate_cycles(),
        tflops: achieved / 1e12,
        percent_of_fp16_peak: 100.0 * achieved / AmpVariant::F16.peak_flops(machine),
        percent_of_variant_peak: 100.0 * achieved / variant.peak_flops(machine),
        tiles_verified: inputs.len() as u32,
        worst_error_over_tolerance: worst,
        instructions: sim.instructions(),
        host_seconds,
    })
}

/// Runs every N and collects the report.
pub fn run_amp_report(
    machine: &MachineModel,
    variant: AmpVariant,
    mode: AmpMode,
    ns: &[u32],
) -> Result<AmpReport, BenchError> {
    let mut results = Vec::new();
    for (i, &n) in ns.iter().enumerate() {
        tracing::info!(n, "running the AMP block on every tile");
        results.push(run_amp(machine, variant, mode, n, 0x1bad_5eed + i as u64)?);
    }
    Ok(AmpReport {
        machine: machine.name.clone(),
        clock_hz: machine.clock_hz,
        tiles: machine.tiles,
        instruction: variant.mnemonic().into(),
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
    s.push_str("     N  cycles/tile  estimate   TFLOPS  % FP16 peak  % instr peak  verified\n");
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
