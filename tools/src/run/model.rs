//! Loading the model to run: ipuc IR (`.mlir`) is parsed and verified; ONNX
//! (`.onnx`) goes through the frontend's importer, bound to the data set
//! first as onnxruntime binds at run time: dynamic dimensions take the data's
//! sizes, and inputs an operator reads as a shape, axes or sizes become
//! constants holding their data (`ipuc_frontends::onnx::import::bind_inputs`).
//! A later data set that binds differently (other shapes or other shape
//! values) re-imports the model.

use std::path::Path;
use std::sync::Arc;

use ipuc_frontends::onnx::import::{import_file_with_data, BoundInputs, ImportOptions};
use ipuc_frontends::onnx::{LoadOptions, NamedTensor};
use ipuc_ir::{parse_source, verify, Context, OpId, SourceMgr};

use super::cli::RunArgs;
use super::compiled::with_reference_hint;
use super::data::{to_onnx, DataSet};
use super::device::DeviceKind;

/// A loaded model: the context and its top-level operation.
pub struct LoadedModel {
    /// The IR.
    pub ctx: Context,
    /// The top-level operation (a `builtin.module`).
    pub root: OpId,
    /// How an ONNX model was bound to a data set (`None`: not bound), and
    /// to which set's tensors.
    pub binding: Option<(BoundInputs, DataSet)>,
}

impl LoadedModel {
    /// The function to run: the one named `name` (`--function`), else the
    /// entry function.
    pub fn function(&self, name: Option<&str>) -> Result<OpId, String> {
        match name {
            Some(name) => super::find_function(&self.ctx, self.root, name),
            None => ipuc_runtime::reference::interpreter::entry_function(&self.ctx, self.root)
                .map_err(|e| e.to_string()),
        }
    }

    /// The data set's inputs the function takes, in parameter order: all of
    /// them, or for a bound ONNX model those not made constants.
    pub fn fed_inputs<'s>(&self, set: &'s DataSet) -> Vec<&'s super::data::Named> {
        match &self.binding {
            Some((bound, _)) => bound.fed.iter().map(|&k| &set.inputs[k]).collect(),
            None => set.inputs.iter().collect(),
        }
    }

    /// Whether `set` binds this model as the set it was imported with did:
    /// the same shapes and kinds, and the same values where they became constants.
    fn binds_like(&self, set: &DataSet) -> bool {
        let Some((bound, first)) = &self.binding else {
            return true;
        };
        first.inputs.len() == set.inputs.len()
            && first
                .inputs
                .iter()
                .zip(&set.inputs)
                .enumerate()
                .all(|(k, (a, b))| {
                    let (a, b) = (&a.tensor, &b.tensor);
                    a.kind == b.kind
                        && a.shape == b.shape
                        && (bound.fed.contains(&k) || a.data == b.data)
                })
    }
}

/// What an ONNX model compiled for the simulator runs before the lowering
/// (and `ipu-bench reference --fuse` before its timed runs): the fusion,
/// and each LayerNorm's scale and shift folded into the products that
/// read it (`fold-layernorm-affine`, before `--precision` quantises the
/// folded weights).
pub const FUSE_PIPELINE: &str =
    "builtin.module(func.func(eqsat-fuse,canonicalize,fold-layernorm-affine))";

/// Whether `path` is an ONNX model, as [`load`] tells: a `.onnx`
/// extension or a protobuf first byte ([`crate::import::is_onnx`], which
/// `ipu-opt` asks too).
pub fn is_onnx(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) != Some("mlir")
        && crate::import::is_onnx(&path.to_string_lossy())
}

/// Loads `args.model` by its kind ([`is_onnx`], else its extension); an
/// ONNX model is bound to `set` when given (see the module documentation).
/// Then converts it to `--precision` ([`convert`]).
pub fn load(args: &RunArgs, set: Option<&DataSet>) -> Result<LoadedModel, String> {
    let mut loaded = load_source(args, set)?;
    convert(args, &mut loaded)?;
    Ok(loaded)
}

/// [`load`] without the conversion to `--precision`: the model in its own
/// precision, fused or cut as the device takes it (`--oracle source` runs
/// the reference executor on it).
pub fn load_source(args: &RunArgs, set: Option<&DataSet>) -> Result<LoadedModel, String> {
    let path = &args.model;
    let mut ctx = Context::new(crate::registry::dialects());
    let kind = if is_onnx(path) {
        "onnx"
    } else {
        path.extension().and_then(|e| e.to_str()).unwrap_or("")
    };
    let mut binding = None;
    let root = match kind {
        "mlir" => {
            if !args.input_shapes.is_empty() {
                eprintln!(
                    "warning: --input-shape applies to ONNX models only; ignored for IR input"
                );
            }
            if args.upstream {
                load_upstream(&mut ctx, path)?
            } else {
                load_mlir(&mut ctx, path)?
            }
        }
        "onnx" => {
            let load = LoadOptions {
                weights: args.weights_policy(),
            };
            if let Some(dir) = &args.save_weights {
                crate::import::save_weights(&path.display().to_string(), load.weights, dir)
                    .map_err(|d| SourceMgr::new().render(&d))?;
            }
            let data: Vec<NamedTensor> = set.map_or_else(Vec::new, |s| {
                s.inputs
                    .iter()
                    .map(|t| NamedTensor {
                        name: t.name.clone(),
                        tensor: to_onnx(&t.tensor),
                    })
                    .collect()
            });
            // A data set's shapes carry its batch (`repeat_batch`).
            let batch = args
                .batch
                .and_then(crate::import::Batch::images)
                .filter(|_| data.is_empty());
            let (root, bound) = import_onnx(&mut ctx, path, &load, (&args.input_shapes, batch), &data)
                .map_err(|e| match set {
                    Some(s) => format!("data set {}: {e}", s.name),
                    None => e,
                })?;
            binding = set.map(|s| (bound, s.clone()));
            root
        }
        _ => {
            return Err(format!(
                "{}: unknown model format (expected an ONNX model, `.onnx` or a file starting as one, `.mlir` IR or an executable from `ipu-opt --emit=exe`)",
                path.display()
            ))
        }
    };
    // What fails in the transformations made only for the simulator (the
    // fusion, the default precision) fails on the way to it: the error
    // says how to run the model anyway.
    let on_sim = args.device.as_deref() == Some(DeviceKind::Sim.name());
    if let Some(block) = &args.extract {
        run_pipeline(
            &mut ctx,
            root,
            &ipuc_passes::extract::extract_pipeline(block),
        )?;
    } else if is_onnx(path) && on_sim {
        // The lowering takes the fused ops (`nn.linear`, `nn.attention`,
        // `nn.gelu`, ...) that an imported graph spells out in primitives,
        // as `--extract` fuses before it cuts.
        run_pipeline(&mut ctx, root, FUSE_PIPELINE).map_err(with_reference_hint)?;
    }
    Ok(LoadedModel { ctx, root, binding })
}

/// Converts a model [`load_source`] loaded to `--precision` (where given).
pub fn convert(args: &RunArgs, loaded: &mut LoadedModel) -> Result<(), String> {
    if let Some(precision) = &args.precision {
        let pipeline = ipuc_passes::precision::precision_pipeline(precision);
        let converted = run_pipeline(&mut loaded.ctx, loaded.root, &pipeline);
        if args.precision_is_default {
            converted.map_err(with_reference_hint)?;
        } else {
            converted?;
        }
    }
    Ok(())
}

/// `loaded`, or the model imported again when `set` binds it differently
/// from the set it was imported with.
pub fn rebind(args: &RunArgs, loaded: LoadedModel, set: &DataSet) -> Result<LoadedModel, String> {
    rebind_with(args, loaded, set, load)
}

/// [`rebind`] importing again with `load` ([`load`], or [`load_source`]
/// for a model loaded unconverted).
pub fn rebind_with(
    args: &RunArgs,
    loaded: LoadedModel,
    set: &DataSet,
    load: fn(&RunArgs, Option<&DataSet>) -> Result<LoadedModel, String>,
) -> Result<LoadedModel, String> {
    if loaded.binds_like(set) {
        return Ok(loaded);
    }
    tracing::info!(data_set = %set.name, "the data set binds the model differently; importing again");
    drop(loaded);
    load(args, Some(set))
}

/// Runs a pass pipeline of the tools' registry on the loaded model (the
/// transformations `ipu-run`'s flags ask for before running).
pub(crate) fn run_pipeline(ctx: &mut Context, root: OpId, pipeline: &str) -> Result<(), String> {
    use ipuc_ir::pass::{
        parse_pipeline, PassManager, PassManagerOptions, PassRegistry, PipelineError,
    };
    let mut registry = PassRegistry::new();
    crate::registry::register_passes(&mut registry).map_err(|e| format!("{e:?}"))?;
    let elems = parse_pipeline(pipeline).map_err(|(_, msg)| format!("{pipeline}: {msg}"))?;
    let mut pm = PassManager::new(PassManagerOptions::default());
    pm.add_pipeline(&registry, &elems)
        .map_err(|e| format!("{pipeline}: {e:?}"))?;
    pm.run(ctx, root).map_err(|e| match e {
        PipelineError::PassFailed { diagnostic, .. } => SourceMgr::new().render(&diagnostic),
        PipelineError::VerifyFailed { pass, diagnostic } => format!(
            "verification failed after pass '{pass}': {}",
            SourceMgr::new().render(&diagnostic)
        ),
        other => format!("{other:?}"),
    })
}

fn load_mlir(ctx: &mut Context, path: &Path) -> Result<OpId, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read '{name}': {e}"))?;
    let mut sources = SourceMgr::new();
    sources.add(&name, Arc::from(text.as_str()));
    let parsed = parse_source(ctx, &name, &text).map_err(|d| sources.render(&d))?;
    verify(ctx, parsed.module).map_err(|d| sources.render(&d))?;
    Ok(parsed.module)
}

/// Reads an upstream MLIR model (TOSA) through upstream's parser and
/// verifier, converts it to `nn` and verifies that. The file's text goes to
/// upstream and is dropped once parsed (a model's text is about twice its
/// weights); diagnostics read it again to show their source lines.
fn load_upstream(ctx: &mut Context, path: &Path) -> Result<OpId, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read '{name}': {e}"))?;
    let render = |d: &[ipuc_ir::Diagnostic]| {
        let mut sources = SourceMgr::new();
        if let Ok(text) = std::fs::read_to_string(path) {
            sources.add(&name, Arc::from(text));
        }
        d.iter().map(|d| sources.render(d)).collect::<String>()
    };
    let module = crate::upstream::read(ctx, &name, text.into()).map_err(|d| render(&d))?;
    ipuc_frontends::tosa::to_nn::convert_tosa_to_nn(ctx, module).map_err(|d| render(&[d]))?;
    verify(ctx, module).map_err(|d| render(&[d]))?;
    Ok(module)
}

/// Imports an ONNX model into `ctx` with the frontend's importer, bound to
/// `data` when it is not empty.
fn import_onnx(
    ctx: &mut Context,
    path: &Path,
    load: &LoadOptions,
    (input_shapes, batch): (&[(String, Vec<i64>)], Option<i64>),
    data: &[NamedTensor],
) -> Result<(OpId, BoundInputs), String> {
    let opts = ImportOptions {
        input_shapes: input_shapes.to_vec(),
        batch,
        file_name: path.display().to_string(),
    };
    import_file_with_data(ctx, path, load, &opts, data)
        .map_err(|e| SourceMgr::new().render(&e.to_diagnostic()))
}
