//! Command-line flags of `ipu-run`.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use ipuc_backend_ipu::lower::stream::Weights;
use ipuc_frontends::onnx::WeightsPolicy;

use super::device::DeviceKind;

/// `--device` when not given, for every input.
pub const DEFAULT_DEVICE: DeviceKind = DeviceKind::Sim;
/// `--precision` when not given, for an ONNX model on `--device sim`.
pub const DEFAULT_SIM_PRECISION: &str = "fp16";

/// Run a model on a device and compare its outputs with reference outputs.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "ipu-run",
    about = "Run an ONNX model, ipuc IR or a saved executable on a device and compare with reference outputs",
    after_help = "\
Inputs: --input DIR is one ONNX test data set (input_K.pb, output_K.pb) or a \
directory of test_data_set_* folders. Inputs bind to the function's parameters \
by name when every input file and every parameter is named, else by position. \
Without --input, inputs are synthesised from --seed (floats uniform in [-1, 1), \
integers and booleans zero).

Executables: inputs bind to the executable's input tensors by name (else by \
position), expected outputs pair with its output tensors by position, and the \
report adds the simulator's profile (total cycles, instructions, and per \
superstep the largest compute, exchange and sync cycles over the tiles).

Comparison (as numpy.allclose): an element passes when |actual - expected| <= \
atol + rtol * |expected|; NaN matches NaN and infinities must match exactly.

Exit status: 0 when every output is within tolerance (or nothing was compared), \
1 when an output exceeds the tolerances, 2 on any other error."
)]
pub struct RunArgs {
    /// The model: an ONNX file (`.onnx`), ipuc IR (`.mlir`), or an executable
    /// saved by `ipu-opt --emit=exe` (`.ipuexe`, or recognised by its magic bytes).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// The device to run on: `sim` (the default, for every input: the IPU
    /// simulator; a model or IR is compiled first, which fails with the
    /// lowering's error where it does not cover the graph yet, and is
    /// compared with the data set's stored outputs, or without any with the
    /// reference executor's) or `reference` (the host `nn` interpreter,
    /// which runs any graph the importer reads, in the model's own
    /// precision).
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// A test data set directory, or a directory of `test_data_set_*` folders.
    #[arg(long, value_name = "DIR")]
    pub input: Option<PathBuf>,
    /// Absolute tolerance of the elementwise comparison [default: 1e-4].
    #[arg(long, value_name = "A")]
    pub atol: Option<f64>,
    /// Relative tolerance of the elementwise comparison [default: 1e-3].
    #[arg(long, value_name = "R")]
    pub rtol: Option<f64>,
    /// With `--device sim` on a model or IR: print the plan of every
    /// product (its grid, estimate per part, tile bytes) and the best
    /// rejected candidates with the reason, on stderr.
    #[arg(long)]
    pub plan_report: bool,
    /// With `--device sim` on a model whose layers run as a chain: keep
    /// every product's weights streamed (once, in pieces over its grid
    /// rows, gathered before it runs) even where they would fit resident:
    /// what a model too large for resident weights (so400m) runs, on a
    /// model small enough to compare (`ipu-lower{weights=streamed}`).
    #[arg(long)]
    pub stream_weights: bool,
    /// Judge outputs as whole tensors instead: the smallest accepted cosine
    /// similarity [default: 0.999; 0.99 at `--precision fp8`]. A model
    /// compiled for `--device sim` is judged this way unless
    /// `--atol`/`--rtol` are given.
    #[arg(long, value_name = "C")]
    pub min_cosine: Option<f64>,
    /// Judge outputs as whole tensors: the largest accepted relative L2
    /// error [default: 1e-2; 0.15 at `--precision fp8`].
    #[arg(long, value_name = "E")]
    pub max_rel_l2: Option<f64>,
    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,
    /// Write the outputs as `output_K.pb` (and synthesised inputs as `input_K.pb`) to DIR.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// What to do when an ONNX model's external weight files are missing.
    #[arg(long, value_enum, default_value_t = WeightsArg::Require)]
    pub weights: WeightsArg,
    /// Write the weights the model runs with as the external data file(s) its graph expects, into DIR.
    #[arg(long = "save-weights", value_name = "DIR")]
    pub save_weights: Option<PathBuf>,
    /// Seed for `--weights random` and for synthesised inputs.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// A static shape for an ONNX graph input (repeatable), e.g. `pixel_values=1x3x384x384`.
    #[arg(long = "input-shape", value_name = "NAME=AxB", value_parser = crate::import::parse_input_shape)]
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// Images per run for an ONNX model: the size of its inputs' symbolic
    /// batch dimensions (default 1), run as one program (`--device sim`:
    /// the products take every image's tokens as rows, the attention runs
    /// per image). `auto`: the largest batch whose plan fits the chip
    /// (`--device sim`), found by planning the model for each batch it
    /// tries; the report says which and why one more does not fit.
    #[arg(long, value_name = "N|auto", value_parser = crate::import::parse_batch)]
    pub batch: Option<crate::import::Batch>,
    /// Parse and verify a `.mlir` model with upstream MLIR and convert its
    /// TOSA (with func, arith, tensor) to `nn` (needs the `mlir` feature).
    #[arg(long)]
    pub upstream: bool,
    /// Print every output's values (`name = [v0, v1, ...]`) before the report.
    #[arg(long = "print-outputs")]
    pub print_outputs: bool,
    /// The function to run (default: `@main`, or the only public function).
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
    /// Run one block of encoder layer N instead of the model: fuse the model
    /// (eqsat-fuse, canonicalize) and cut out `mlp:N` (LayerNorm, MLP,
    /// residual add), `attention:N` (LayerNorm, attention, residual add) or
    /// `layer:N`, or the model's tail after its last layer, `head` (the
    /// post-LayerNorm and the pooling head, both of the model's outputs),
    /// found through the ONNX node scopes in op locations.
    #[arg(long, value_name = "KIND:N|head", value_parser = parse_block)]
    pub extract: Option<String>,
    /// Run the model converted to `fp16` (f16 weights and activations, f32
    /// accumulation in LayerNorm, softmax and attention) or `fp8`
    /// (f8E4M3FNUZ weights with power-of-two scales, the activations they
    /// multiply cast to f8E4M3FNUZ, f16 elsewhere) by the
    /// `convert-precision` pass, after `--extract`; inputs and outputs stay
    /// f32. Default: `fp16` for an ONNX model on `--device sim` (the
    /// lowering's precision: the model's f32 does not lower); IR (`.mlir`)
    /// runs in the types it is written in, and on `--device reference` a
    /// model runs in its own precision.
    #[arg(long, value_name = "fp16|fp8", value_parser = ["fp16", "fp8"])]
    pub precision: Option<String>,
    /// What the simulator's outputs are compared with when a data set holds
    /// no stored outputs (seeded random inputs, `--extract`ed blocks): the
    /// reference executor on the `converted` IR (the default: the IR the
    /// device runs, after `--precision`; the comparison isolates the
    /// lowering) or on the `source` model in its own precision (before
    /// `--precision`'s conversion: the comparison measures what the
    /// precision costs as well).
    #[arg(long, value_enum, default_value_t = OracleArg::Converted)]
    pub oracle: OracleArg,
    /// Whether `precision` is the device's default, not given (set by
    /// [`RunArgs::with_defaults`]).
    #[arg(skip)]
    pub precision_is_default: bool,
    /// With `--device sim` on a model or IR: record the run and write its
    /// profile into DIR: `profile.json` (the data, schema in the README),
    /// `trace.json` (Chrome trace events for Perfetto or
    /// chrome://tracing) and `report.html` (a self-contained report).
    /// `ipu-prof DIR` reads it.
    #[arg(long, value_name = "DIR")]
    pub profile: Option<PathBuf>,
    /// With `--profile`: the MiB the recording may hold (fractions
    /// allowed). Past it the recording stops: the profile keeps the later
    /// supersteps' cycles alone and says from which superstep on.
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_PROFILE_LIMIT_MIB, value_parser = parse_mib)]
    pub profile_limit: f64,
    /// Host threads that simulate the tiles on `--device sim` (default:
    /// `IPUC_SIM_THREADS`, else the available parallelism); every count
    /// gives the same cycles and results.
    #[arg(long, value_name = "N")]
    pub sim_threads: Option<std::num::NonZeroUsize>,
}

/// `--profile-limit`'s default, [`ipuc_runtime::sim::DEFAULT_RECORD_LIMIT`] in MiB.
pub const DEFAULT_PROFILE_LIMIT_MIB: f64 =
    ipuc_runtime::sim::DEFAULT_RECORD_LIMIT as f64 / (1u64 << 20) as f64;

fn parse_mib(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a size in MiB (a number, 0 or more)")),
    }
}

impl RunArgs {
    /// The weights a chain is planned from: `--stream-weights`.
    pub fn weights(&self) -> Weights {
        match self.stream_weights {
            true => Weights::Streamed,
            false => Weights::Resident,
        }
    }

    /// `--profile-limit` in bytes.
    pub fn profile_limit_bytes(&self) -> u64 {
        (self.profile_limit * f64::from(1u32 << 20)) as u64
    }
}

fn parse_block(s: &str) -> Result<String, String> {
    s.parse::<ipuc_passes::extract::BlockSpec>()
        .map(|b| b.to_string())
}

/// `--oracle`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum OracleArg {
    /// The reference executor on the IR the device runs.
    Converted,
    /// The reference executor on the model before `--precision`.
    Source,
}

/// `--weights`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum WeightsArg {
    /// Fail when a weight file is missing.
    Require,
    /// Fill missing weights with zeros.
    Zeros,
    /// Fill missing weights with seeded random values.
    Random,
}

impl RunArgs {
    /// The flags as the run uses them: `device` named (`sim` when not
    /// given), and for an ONNX model on the simulator `precision` set
    /// (`fp16` when not given), so that what reports them shows what ran.
    pub fn with_defaults(&self, device: DeviceKind, is_onnx: bool) -> RunArgs {
        let default = self.precision.is_none() && device == DeviceKind::Sim && is_onnx;
        RunArgs {
            device: Some(device.name().to_string()),
            precision: if default {
                Some(DEFAULT_SIM_PRECISION.to_string())
            } else {
                self.precision.clone()
            },
            precision_is_default: default,
            ..self.clone()
        }
    }

    /// The loader's weights policy.
    pub fn weights_policy(&self) -> WeightsPolicy {
        match self.weights {
            WeightsArg::Require => WeightsPolicy::Require,
            WeightsArg::Zeros => WeightsPolicy::Zeros,
            WeightsArg::Random => WeightsPolicy::Random { seed: self.seed },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> RunArgs {
        RunArgs::try_parse_from([&["ipu-run"], args].concat()).unwrap()
    }

    /// `(device, precision, precision_is_default)` as the run uses them.
    fn resolved(
        args: &[&str],
        device: DeviceKind,
        is_onnx: bool,
    ) -> (String, Option<String>, bool) {
        let a = parse(args).with_defaults(device, is_onnx);
        (a.device.unwrap(), a.precision, a.precision_is_default)
    }

    #[test]
    fn an_onnx_model_runs_at_fp16_on_the_simulator_unless_told_otherwise() {
        let fp16 = Some("fp16".to_string());
        assert_eq!(
            resolved(&["m.onnx"], DeviceKind::Sim, true),
            ("sim".into(), fp16.clone(), true)
        );
        assert_eq!(
            resolved(&["m.onnx", "--precision", "fp8"], DeviceKind::Sim, true),
            ("sim".into(), Some("fp8".into()), false)
        );
        assert_eq!(
            resolved(&["m.onnx", "--precision", "fp16"], DeviceKind::Sim, true),
            ("sim".into(), fp16.clone(), false)
        );
        // IR keeps its own types; the reference device keeps the model's.
        assert_eq!(
            resolved(&["m.mlir"], DeviceKind::Sim, false),
            ("sim".into(), None, false)
        );
        assert_eq!(
            resolved(&["m.onnx"], DeviceKind::Reference, true),
            ("reference".into(), None, false)
        );
        assert_eq!(
            resolved(
                &["m.onnx", "--precision", "fp16"],
                DeviceKind::Reference,
                true
            ),
            ("reference".into(), fp16, false)
        );
    }
}
