//! Loading the model to run: ipuc IR (`.mlir`) is parsed and verified; ONNX
//! (`.onnx`) goes through the frontend's importer.

use std::path::Path;
use std::sync::Arc;

use ipuc_frontends::onnx::import::{import_file, ImportOptions};
use ipuc_frontends::onnx::LoadOptions;
use ipuc_ir::{parse_source, verify, Context, OpId, SourceMgr};

use super::cli::RunArgs;

/// A loaded model: the context and its top-level operation.
pub struct LoadedModel {
    /// The IR.
    pub ctx: Context,
    /// The top-level operation (a `builtin.module`).
    pub root: OpId,
}

/// Loads `args.model` by its extension.
pub fn load(args: &RunArgs) -> Result<LoadedModel, String> {
    let path = &args.model;
    let mut ctx = Context::new(crate::registry::dialects());
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let root = match extension {
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
            import_onnx(&mut ctx, path, &load, &args.input_shapes)?
        }
        _ => {
            return Err(format!(
                "{}: unknown model format (expected a .onnx or .mlir file)",
                path.display()
            ))
        }
    };
    if let Some(block) = &args.extract {
        run_pipeline(
            &mut ctx,
            root,
            &ipuc_passes::extract::extract_pipeline(block),
        )?;
    }
    if let Some(precision) = &args.precision {
        run_pipeline(
            &mut ctx,
            root,
            &ipuc_passes::precision::precision_pipeline(precision),
        )?;
    }
    Ok(LoadedModel { ctx, root })
}

/// Runs a pass pipeline of the tools' registry on the loaded model (the
/// transformations `ipu-run`'s flags ask for before running).
fn run_pipeline(ctx: &mut Context, root: OpId, pipeline: &str) -> Result<(), String> {
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
/// verifier, converts it to `nn` and verifies that.
fn load_upstream(ctx: &mut Context, path: &Path) -> Result<OpId, String> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read '{name}': {e}"))?;
    let mut sources = SourceMgr::new();
    sources.add(&name, Arc::from(text.as_str()));
    let render =
        |d: &[ipuc_ir::Diagnostic]| d.iter().map(|d| sources.render(d)).collect::<String>();
    let module = crate::upstream::read(ctx, &name, &text).map_err(|d| render(&d))?;
    ipuc_frontends::tosa::to_nn::convert_tosa_to_nn(ctx, module).map_err(|d| render(&[d]))?;
    verify(ctx, module).map_err(|d| sources.render(&d))?;
    Ok(module)
}

/// Imports an ONNX model into `ctx` with the frontend's importer.
fn import_onnx(
    ctx: &mut Context,
    path: &Path,
    load: &LoadOptions,
    input_shapes: &[(String, Vec<i64>)],
) -> Result<OpId, String> {
    let opts = ImportOptions {
        input_shapes: input_shapes.to_vec(),
        file_name: path.display().to_string(),
    };
    import_file(ctx, path, load, &opts).map_err(|e| SourceMgr::new().render(&e.to_diagnostic()))
}
