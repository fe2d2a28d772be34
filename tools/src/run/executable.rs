//! Running a saved executable (`ipu-opt --emit=exe`) on the simulator: the
//! test data's tensors are staged on its host-to-device streams, the run
//! moves them to the tiles, runs the program and streams the outputs back
//! (every transfer a timed host step of the profile, reported apart from
//! the device cycles), and the outputs are compared like a model's.
//!
//! Inputs bind to the executable's input streams by name when every input
//! file is named and the names are those of the streams, else by position
//! (stream order). Expected outputs pair with the output streams by
//! position. FP8 tensors move as their raw `f8E4M3FNUZ` bytes (the
//! binding's scale is not applied).

use std::path::Path;
use std::sync::Arc;

use ipuc_ipu_arch::exe::{DType, MAGIC};
use ipuc_ipu_arch::{Executable, MachineModel, StreamDirection, TensorBinding};
use ipuc_ir::numeric::ElementKind;
use ipuc_runtime::device::Device as _;
use ipuc_runtime::reference::HostTensor;
use ipuc_runtime::sim::{Profile, SimConfig, Simulator};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::data::{self, DataSet, Named};
use super::report::{ProfileSummary, Report, SuperstepSummary};
use super::{check_expected_count, finish, record_outputs, RunArgs, Tolerance};

/// The file extension of saved executables.
pub const EXTENSION: &str = "ipuexe";

/// Whether `path` is a saved executable: by extension, or by its magic bytes.
pub fn is_executable(path: &Path) -> bool {
    if path.extension().and_then(|e| e.to_str()) == Some(EXTENSION) {
        return true;
    }
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && &head == MAGIC
}

fn element_kind(d: DType) -> ElementKind {
    match d {
        DType::F32 => ElementKind::F32,
        DType::F16 => ElementKind::F16,
        DType::F8E4M3FNUZ { .. } => ElementKind::F8E4M3FNUZ,
        DType::I32 => ElementKind::I32,
        DType::U32 => ElementKind::U32,
        DType::U8 => ElementKind::U8,
    }
}

/// A streamed tensor: its stream's name, its tensor's name, element kind
/// and shape.
struct Stream {
    stream: String,
    name: String,
    kind: ElementKind,
    shape: Vec<usize>,
}

fn streams(exe: &Executable, direction: StreamDirection) -> Vec<Stream> {
    exe.streams
        .iter()
        .filter(|s| s.direction == direction)
        .filter_map(|s| {
            let b: &TensorBinding = exe.tensors.iter().find(|b| b.name == s.tensor)?;
            Some(Stream {
                stream: s.name.clone(),
                name: s.tensor.clone(),
                kind: element_kind(b.dtype),
                shape: b.shape.iter().map(|&d| d as usize).collect(),
            })
        })
        .collect()
}

/// `t` in float format `kind`, rounded to nearest: the host converts
/// between the function's float type and a stream's, as Poplar's host
/// streams convert `float` data to `half` (a lowering whose function
/// casts its f32 interface to f16 streams f16, and its casts are these).
fn convert(t: &HostTensor, kind: ElementKind) -> HostTensor {
    if t.kind == kind {
        return t.clone();
    }
    HostTensor::from_values(kind, t.shape.clone(), t.values_in(kind))
}

/// The tensors of `set` in the order of `inputs`, converted to the
/// streams' float formats where they differ.
fn bind(set: &DataSet, inputs: &[Stream]) -> Result<Vec<HostTensor>, String> {
    if set.inputs.len() != inputs.len() {
        return Err(format!(
            "data set {} holds {} input(s), but the executable streams {} ({})",
            set.name,
            set.inputs.len(),
            inputs.len(),
            inputs
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let by_name = set.inputs.iter().all(|n| !n.name.is_empty())
        && inputs
            .iter()
            .all(|s| set.inputs.iter().any(|n| n.name == s.name));
    let mut out = Vec::new();
    for (k, s) in inputs.iter().enumerate() {
        let t = if by_name {
            &set.inputs
                .iter()
                .find(|n| n.name == s.name)
                .expect("checked")
                .tensor
        } else {
            &set.inputs[k].tensor
        };
        let floats = t.kind.is_float() && s.kind.is_float();
        if (t.kind != s.kind && !floats) || t.shape != s.shape {
            return Err(format!(
                "data set {}: input `{}` is {} {:?}, but the executable expects {} {:?}",
                set.name, s.name, t.kind, t.shape, s.kind, s.shape
            ));
        }
        out.push(convert(t, s.kind));
    }
    Ok(out)
}

/// Summarises a simulator profile: per superstep, the largest compute,
/// exchange and sync-wait cycles over the tiles; the host link's steps
/// apart, in cycles and in seconds at `clock_hz`.
pub fn summary(p: &Profile, clock_hz: f64) -> ProfileSummary {
    let steps = p
        .tiles
        .iter()
        .map(|t| t.supersteps.len())
        .max()
        .unwrap_or(0);
    let supersteps = (0..steps)
        .map(|k| {
            let of = |f: fn(&ipuc_runtime::sim::SuperstepCycles) -> u64| {
                p.tiles
                    .iter()
                    .filter_map(|t| t.supersteps.get(k))
                    .map(f)
                    .max()
                    .unwrap_or(0)
            };
            SuperstepSummary {
                compute: of(|s| s.compute),
                exchange: of(|s| s.exchange),
                sync: of(|s| s.sync_wait),
            }
        })
        .collect();
    ProfileSummary {
        total_cycles: p.total_cycles,
        host_cycles: p.host_cycles,
        host_steps: p.host_steps.len(),
        host_io_s: p.host_cycles as f64 / clock_hz,
        instructions: p.tiles.iter().map(|t| t.instructions).sum(),
        tiles: p.tiles.len(),
        supersteps,
    }
}

/// Runs the executable at `args.model` on the simulator.
pub fn run(args: &RunArgs, tolerance: Tolerance) -> Result<Report, String> {
    let path = &args.model;
    let started = std::time::Instant::now();
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let exe = Executable::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let import_s = started.elapsed().as_secs_f64();
    let inputs = streams(&exe, StreamDirection::HostToDevice);
    let sets: Vec<DataSet> = match &args.input {
        Some(dir) => data::discover(dir)?,
        None => {
            let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
            vec![DataSet {
                name: "synthesized".into(),
                inputs: inputs
                    .iter()
                    .map(|s| Named {
                        name: s.name.clone(),
                        tensor: data::synthesize_tensor(&mut rng, s.kind, s.shape.clone()),
                    })
                    .collect(),
                expected: Vec::new(),
                synthesized: true,
            }]
        }
    };
    let model = path.display().to_string();
    run_executable(&exe, &model, import_s, &sets, args, tolerance)
}

/// Runs `exe` on the simulator once per data set (inputs bound to its
/// input streams by name or position), compares with each set's expected
/// outputs, and reports them with the profile of the last run.
pub fn run_executable(
    exe: &Executable,
    model: &str,
    import_s: f64,
    sets: &[DataSet],
    args: &RunArgs,
    tolerance: Tolerance,
) -> Result<Report, String> {
    let machine = MachineModel::by_name(&exe.machine)
        .ok_or_else(|| format!("{model}: unknown machine '{}'", exe.machine))?;
    let inputs = streams(exe, StreamDirection::HostToDevice);
    let outputs = streams(exe, StreamDirection::DeviceToHost);
    let mut report = Report::new(
        model.to_string(),
        "sim".into(),
        String::new(),
        import_s,
        tolerance,
    );
    for set in sets {
        let tensors = bind(set, &inputs)?;
        let started = std::time::Instant::now();
        let defaults = SimConfig::default();
        let config = SimConfig {
            record: args.profile.is_some(),
            record_limit: args.profile_limit_bytes(),
            threads: args.sim_threads.or(defaults.threads),
            ..defaults
        };
        let mut sim = Simulator::new(machine.clone(), config);
        sim.load(exe).map_err(|e| e.to_string())?;
        // Inputs and outputs go through the executable's host streams, so
        // the run's profile counts their link time as host steps.
        for (s, t) in inputs.iter().zip(&tensors) {
            sim.write_stream(&s.stream, &t.data)
                .map_err(|e| format!("data set {}: {e}", set.name))?;
        }
        sim.run()
            .map_err(|e| format!("data set {}: {e}", set.name))?;
        let mut named = Vec::new();
        for s in &outputs {
            let data = sim
                .read_stream(&s.stream)
                .map_err(|e| format!("data set {}: {e}", set.name))?;
            let tensor = HostTensor::new(s.kind, s.shape.clone(), Arc::from(data));
            // Back in the expected output's float format, if it differs.
            let want = set.expected.get(named.len()).map(|n| n.tensor.kind);
            let tensor = match want {
                Some(k) if k != s.kind && k.is_float() && s.kind.is_float() => convert(&tensor, k),
                _ => tensor,
            };
            // Named as the data set names the output at this position (a
            // model's own output names, as the reference device reports
            // them), else as the stream.
            let name = set
                .expected
                .get(named.len())
                .map_or_else(|| s.name.clone(), |n| n.name.clone());
            named.push(Named { name, tensor });
        }
        report.run_s += started.elapsed().as_secs_f64();
        check_expected_count(set, named.len(), "the executable streams")?;
        record_outputs(&mut report, args, set, sets.len(), &named, tolerance)?;
        if let Some(p) = sim.take_profile() {
            let s = summary(&p, machine.clock_hz);
            report.ops = s.instructions as usize;
            report.profile = Some(s);
            if args.profile.is_some() {
                report.recorded = Some(Box::new(p));
            }
        }
    }
    Ok(finish(report))
}
