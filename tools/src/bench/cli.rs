//! Command-line interface of `ipu-bench`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use ipuc_backend_ipu::codelets::amp::{AmpMode, AmpVariant};
use ipuc_ipu_arch::MachineModel;

use super::amp::{format_amp_report, run_amp_report, AmpBench};
use super::attention::{format_attention, run_attention};
use super::codelets::{format_codelets, run_codelets};
use super::gemm::{format_gemm, run_gemm};
use super::mlp::{format_mlp, run_mlp};
use super::reference::{format_reference_report, run_reference, ReferenceBench};
use super::sim_speed::{format_speed, run_sim_speed};
use super::BenchError;
use ipuc_backend_ipu::lower::plan::Grid;

/// Performance benchmarks on the simulated IPU.
#[derive(Debug, Parser)]
#[command(name = "ipu-bench", version, about)]
pub struct Cli {
    /// What to measure.
    #[command(subcommand)]
    pub command: Command,
    /// Host threads that simulate the tiles (default: `IPUC_SIM_THREADS`,
    /// else the available parallelism); every count gives the same cycles
    /// and results.
    #[arg(long, global = true, value_name = "N")]
    pub sim_threads: Option<std::num::NonZeroUsize>,
}

/// The AMP instruction of `ipu-bench amp`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum VariantArg {
    /// `f16v4hihov4amp`: `[N,16] x [16,16]`, f16 partials.
    F16,
    /// `f16v4sisoamp`: `[N,16] x [16,8]`, f32 partials.
    F16F32p,
    /// `f32sisov2amp`: `[N,8] x [8,8]`, f32.
    F32,
    /// `f8v8hihov4amp`: `[N,32] x [32,16]`, FP8 inputs, f16 partials.
    F8,
    /// FP8 weights, f16 activations cast to FP8 (scale 2^0) in the same
    /// launch, then `f8v8hihov4amp`: `[N,32] x [32,16]`, f16 partials.
    #[value(name = "f8-f16acts")]
    F8F16acts,
}

/// How the FP16 block is launched.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum VertexArg {
    /// The lean block: weights loaded, six workers on their own vertex
    /// states, one `sync`.
    Lean,
    /// As poplibs' `ConvPartial1x1Out` vertex: called with a supervisor
    /// state it parses, a worklist, output-group loop, weight reload per
    /// pass (f16 only, overwrite); the estimate column is poplibs' formula.
    PoplibsShaped,
}

/// Accumulate into partials or overwrite.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// out = partials + in x W.
    Accumulate,
    /// out = in x W.
    Overwrite,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The AMP matrix block on every tile at once: cycles, TFLOPS, % of peak.
    Amp {
        /// Machine model: `c600` (1.5 GHz) or `bow` (1.85 GHz, no FP8).
        #[arg(long, default_value = "c600")]
        machine: String,
        /// Rows N per tile, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "16,64,256,512,1024,2048")]
        n: Vec<u32>,
        /// The AMP instruction.
        #[arg(long, value_enum, default_value = "f16")]
        variant: VariantArg,
        /// Accumulate into partials or overwrite (default: accumulate for
        /// the lean block, overwrite for the poplibs-shaped vertex).
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        /// The lean block or the poplibs-shaped vertex (f16, overwrite).
        #[arg(long, value_enum, default_value = "lean")]
        vertex: VertexArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Every codelet family once at a representative size on one tile:
    /// simulated cycles beside the codelet's estimate.
    Codelets {
        /// Machine model: `c600` or `bow`.
        #[arg(long, default_value = "c600")]
        machine: String,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The host reference executor against onnxruntime (from PyPI) on one
    /// ONNX model: same weights and inputs, medians of wall and CPU time per
    /// thread count, their ratios, and the outputs' largest difference.
    Reference {
        /// The `.onnx` model.
        model: std::path::PathBuf,
        /// Missing external weights: `require`, `zeros` or `random` (saved
        /// next to the model copy so onnxruntime runs the same values).
        #[arg(long, default_value = "require")]
        weights: String,
        /// Seed of random weights and of the synthesised inputs.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Thread counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        threads: Vec<usize>,
        /// Runs per side and thread count (the median is reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// A static shape for a graph input (repeatable), `name=1x3x384x384`.
        #[arg(long = "input-shape", value_parser = crate::import::parse_input_shape)]
        input_shapes: Vec<(String, Vec<i64>)>,
        /// Where to write the model copy, weights and data (default: a
        /// temporary directory; use a RAM disk such as /dev/shm for so400m).
        #[arg(long)]
        work_dir: Option<std::path::PathBuf>,
        /// Run the imported graph as it is, instead of the graph fused by
        /// `eqsat-fuse` (the fused LayerNorm, GELU, linear and attention
        /// kernels replace element-wise chains, as onnxruntime's own graph
        /// fusions do on its side).
        #[arg(long)]
        unfused: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One matrix product planned over the tiles, lowered and simulated:
    /// plan, estimate, simulated cycles per superstep, TFLOPS, % of peak.
    Gemm {
        /// Machine model: `c600` or `bow`.
        #[arg(long, default_value = "c600")]
        machine: String,
        /// Rows of X (so400m's tokens).
        #[arg(long, default_value_t = 729)]
        m: u32,
        /// The contracted dimension.
        #[arg(long, default_value_t = 1152)]
        k: u32,
        /// Columns of W.
        #[arg(long, default_value_t = 4304)]
        n: u32,
        /// Element type: `f16` or `f32`.
        #[arg(long, default_value = "f16")]
        dtype: String,
        /// Force a grid `ROWSxCOLS` or `ROWSxCOLSxKPARTS` (a K split, a
        /// power of two) instead of the planner's choice.
        #[arg(long)]
        grid: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The transformer MLP block `x + fc2(gelu(fc1(layer_norm(x))))` in
    /// f16 or FP8, lowered whole and simulated: the plan, its estimate per
    /// step, simulated cycles per superstep, % of the precision's AMP peak,
    /// compile time.
    Mlp {
        #[command(flatten)]
        block: BlockArgs,
        /// The MLP's inner size (so400m: 4304).
        #[arg(long, default_value_t = 4304)]
        mlp: u32,
        /// The products' precision: `fp16`, or `fp8` (FP8 weights and
        /// activations on the FP8 AMP, f16 everywhere else).
        #[arg(long, default_value = "fp16", value_parser = ["fp16", "fp8"])]
        precision: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The transformer attention block `x + attention(qkv(layer_norm(x)))
    /// W_o + b_o` in f16 or with FP8 weights, lowered whole and simulated:
    /// the plan, its estimate per step, simulated cycles per superstep, %
    /// of the FP16 AMP peak, compile time.
    Attention {
        #[command(flatten)]
        block: BlockArgs,
        /// Heads (so400m: 16).
        #[arg(long, default_value_t = 16)]
        heads: u32,
        /// Images in the batch, each attending over its own `--tokens`
        /// (the products' rows every image's, the attention tiles per image
        /// and head).
        #[arg(long, default_value_t = 1)]
        images: u32,
        /// The products' precision: `fp16`, or `fp8` (FP8 weight codes,
        /// LayerNorm's and the attention's outputs cast to FP8; the three
        /// products on the FP8 AMP).
        #[arg(long, default_value = "fp16", value_parser = ["fp16", "fp8"])]
        precision: String,
        /// Force the key-split form with this many blocks of keys per
        /// head (1: the materialised form) instead of the planner's
        /// choice by estimate.
        #[arg(long, value_name = "N")]
        key_blocks: Option<u32>,
        /// Force the flash-style form: each attention tile takes its
        /// head's keys in this many chunks (at least 2).
        #[arg(long, value_name = "N", conflicts_with = "key_blocks")]
        chunks: Option<u32>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Simulated instructions per host second.
    SimSpeed {
        /// Loop iterations of the benchmark program (48 instructions each).
        #[arg(long, default_value_t = 1_000_000)]
        iterations: u32,
        /// Print JSON instead of a line.
        #[arg(long)]
        json: bool,
    },
}

/// The machine model called `name`, or a usage error naming the known ones.
fn machine_named(name: &str) -> Result<MachineModel, BenchError> {
    MachineModel::by_name(name).ok_or_else(|| {
        BenchError::Usage(format!(
            "unknown machine `{name}` (known: {})",
            MachineModel::NAMES.join(", ")
        ))
    })
}

/// Runs a parsed command; returns what to print.
pub fn run(cli: Cli) -> Result<String, BenchError> {
    match cli.command {
        Command::Amp {
            machine,
            n,
            variant,
            mode,
            vertex,
            json,
        } => {
            let m = machine_named(&machine)?;
            if n.is_empty() {
                return Err(BenchError::Usage("--n needs at least one row count".into()));
            }
            let variant = match variant {
                VariantArg::F16 => AmpBench::Block(AmpVariant::F16),
                VariantArg::F16F32p => AmpBench::Block(AmpVariant::F16F32Partials),
                VariantArg::F32 => AmpBench::Block(AmpVariant::F32),
                VariantArg::F8 => AmpBench::Block(AmpVariant::F8),
                VariantArg::F8F16acts => AmpBench::F8WeightsF16Acts,
            };
            let mode = match (mode, vertex) {
                (Some(ModeArg::Accumulate), _) | (None, VertexArg::Lean) => AmpMode::Accumulate,
                (Some(ModeArg::Overwrite), _) | (None, VertexArg::PoplibsShaped) => {
                    AmpMode::Overwrite
                }
            };
            let variant = match (vertex, variant, mode) {
                (VertexArg::Lean, v, _) => v,
                (VertexArg::PoplibsShaped, AmpBench::Block(AmpVariant::F16), AmpMode::Overwrite) => {
                    AmpBench::PoplibsShaped
                }
                (VertexArg::PoplibsShaped, ..) => {
                    return Err(BenchError::Usage(
                        "--vertex poplibs-shaped runs the f16 block zeroing its partials: use --variant f16 --mode overwrite".into(),
                    ))
                }
            };
            let report = run_amp_report(&m, variant, mode, &n)?;
            render(
                &report,
                json.then_some(JsonLayout::Pretty),
                format_amp_report,
            )
        }
        Command::Codelets { machine, json } => {
            let m = machine_named(&machine)?;
            let rows = run_codelets(&m)?;
            render(&rows, json.then_some(JsonLayout::Pretty), |r| {
                format_codelets(&m, r)
            })
        }
        Command::Reference {
            model,
            weights,
            seed,
            threads,
            runs,
            input_shapes,
            work_dir,
            unfused,
            json,
        } => {
            let weights = crate::import::weights_policy(&crate::import::OnnxFlags {
                weights,
                seed,
                ..Default::default()
            })
            .map_err(BenchError::Usage)?;
            let report = run_reference(&ReferenceBench {
                model,
                weights,
                threads,
                runs,
                seed,
                input_shapes,
                work_dir,
                fuse: !unfused,
            })?;
            render(
                &report,
                json.then_some(JsonLayout::Pretty),
                format_reference_report,
            )
        }
        Command::Gemm {
            machine,
            m,
            k,
            n,
            dtype,
            grid,
            json,
        } => {
            let mm = machine_named(&machine)?;
            let grid = grid
                .map(|g| {
                    let parts: Option<Vec<u32>> = g.split('x').map(|p| p.parse().ok()).collect();
                    match parts.as_deref() {
                        Some(&[rows, cols]) => Ok(Grid { rows, cols, k: 1 }),
                        Some(&[rows, cols, k]) => Ok(Grid { rows, cols, k }),
                        _ => Err(BenchError::Usage(format!(
                            "--grid must be ROWSxCOLS or ROWSxCOLSxKPARTS, e.g. 16x90 or 8x18x8, not `{g}`"
                        ))),
                    }
                })
                .transpose()?;
            let r = run_gemm(&mm, (m, k, n), &dtype, grid)?;
            render(&r, json.then_some(JsonLayout::OneLine), format_gemm)
        }
        Command::Mlp {
            block,
            mlp,
            precision,
            json,
        } => {
            let mm = machine_named(&block.machine)?;
            let r = run_mlp(&mm, (block.tokens, block.hidden, mlp), precision == "fp8")?;
            render(&r, json.then_some(JsonLayout::OneLine), format_mlp)
        }
        Command::Attention {
            block,
            heads,
            images,
            precision,
            key_blocks,
            chunks,
            json,
        } => {
            let mm = machine_named(&block.machine)?;
            let forced = match (key_blocks, chunks) {
                (Some(0), _) => return Err(BenchError::Usage("--key-blocks must be at least 1".into())),
                (_, Some(0 | 1)) => {
                    return Err(BenchError::Usage(
                        "--chunks must be at least 2 (one chunk is the materialised form: --key-blocks 1)"
                            .into(),
                    ))
                }
                (Some(n), _) => Some((n, 1)),
                (_, Some(n)) => Some((1, n)),
                (None, None) => None,
            };
            if images == 0 {
                return Err(BenchError::Usage("--images must be at least 1".into()));
            }
            let r = run_attention(
                &mm,
                (images, block.tokens, block.hidden, heads),
                precision == "fp8",
                forced,
            )?;
            render(&r, json.then_some(JsonLayout::OneLine), format_attention)
        }
        Command::SimSpeed { iterations, json } => {
            if iterations == 0 || iterations >= 1 << 20 {
                return Err(BenchError::Usage(
                    "--iterations must be in 1..1048576 (a 20-bit immediate)".into(),
                ));
            }
            let r = run_sim_speed(iterations);
            if json {
                let v = serde_json::json!({
                    "instructions": r.instructions,
                    "cycles": r.cycles,
                    "wall_seconds": r.seconds,
                    "instructions_per_wall_second": r.instructions_per_second,
                    "cpu_seconds": r.cpu_seconds,
                    "instructions_per_cpu_second": r.instructions_per_cpu_second,
                });
                Ok(format!("{v:#}\n"))
            } else {
                Ok(format_speed(&r))
            }
        }
    }
}

/// The machine and the encoder's shape, as the block benchmarks (`mlp`,
/// `attention`) both take them.
#[derive(Debug, Args)]
pub struct BlockArgs {
    /// Machine model: `c600` or `bow`.
    #[arg(long, default_value = "c600")]
    pub machine: String,
    /// Tokens (so400m: 729).
    #[arg(long, default_value_t = 729)]
    pub tokens: u32,
    /// Hidden size (so400m: 1152).
    #[arg(long, default_value_t = 1152)]
    pub hidden: u32,
}

/// How a report is laid out as JSON.
#[derive(Clone, Copy)]
enum JsonLayout {
    /// Indented, one field a line.
    Pretty,
    /// On one line.
    OneLine,
}

/// `r` as JSON laid out by `json` (followed by a newline), or without it
/// as `text` formats it.
fn render<R: serde::Serialize>(
    r: &R,
    json: Option<JsonLayout>,
    text: impl FnOnce(&R) -> String,
) -> Result<String, BenchError> {
    let Some(layout) = json else {
        return Ok(text(r));
    };
    match layout {
        JsonLayout::Pretty => serde_json::to_string_pretty(r),
        JsonLayout::OneLine => serde_json::to_string(r),
    }
    .map(|s| s + "\n")
    .map_err(|e| BenchError::Other(e.to_string()))
}
