//! ONNX input for the tools: recognising `.onnx` files and importing them
//! into a fresh context with the `--weights`, `--seed` and `--input-shape`
//! flags.

use std::path::Path;

use ipuc_frontends::onnx::import::{import_file, ImportOptions};
use ipuc_frontends::onnx::{LoadOptions, WeightsPolicy};
use ipuc_ir::{Context, Diagnostic, Location, OpId};

/// How to import an ONNX model.
#[derive(Clone, Debug, Default)]
pub struct OnnxFlags {
    /// `--weights=require|zeros|random`.
    pub weights: String,
    /// `--seed N` for `--weights=random`.
    pub seed: u64,
    /// `--input-shape name=1x3x384x384`, repeatable.
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// `--batch N`: the size of the inputs' symbolic batch dimensions.
    pub batch: Option<i64>,
    /// `--save-weights DIR`: write the weights used as the external data
    /// file(s) the graph expects, into DIR.
    pub save_weights: Option<String>,
}

/// Whether `path` is an ONNX model: a `.onnx` extension, or a file whose first
/// byte is the protobuf tag of `ModelProto.ir_version` (0x08), which no MLIR
/// text starts with.
pub fn is_onnx(path: &str) -> bool {
    if path == "-" {
        return false;
    }
    let p = Path::new(path);
    if p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
    {
        return true;
    }
    use std::io::Read;
    let mut first = [0u8; 1];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut first))
        .is_ok_and(|()| first[0] == 0x08)
}

/// Parses `--input-shape` text: `name=1x3x384x384` (a scalar input: `name=`).
pub fn parse_input_shape(text: &str) -> Result<(String, Vec<i64>), String> {
    let (name, dims) = text.rsplit_once('=').ok_or_else(|| {
        format!("expected NAME=D0xD1x..., e.g. pixel_values=1x3x384x384, got '{text}'")
    })?;
    if name.is_empty() {
        return Err(format!("missing the input name in '{text}'"));
    }
    let dims = if dims.is_empty() {
        Vec::new()
    } else {
        dims.split('x')
            .map(|d| {
                d.trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|&v| v >= 0)
                    .ok_or_else(|| {
                        format!("dimension '{d}' in '{text}' is not a non-negative integer")
                    })
            })
            .collect::<Result<_, _>>()?
    };
    Ok((name.to_string(), dims))
}

/// A `--batch` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batch {
    /// This many images.
    Images(u32),
    /// `auto`: the largest batch that fits (`ipu-run`).
    Auto,
}

impl Batch {
    /// The images, for the importer (`None` for `auto`, which the caller
    /// resolves first).
    pub fn images(self) -> Option<i64> {
        match self {
            Batch::Images(n) => Some(i64::from(n)),
            Batch::Auto => None,
        }
    }
}

/// Parses `--batch`: a positive number of images, or `auto`.
pub fn parse_batch(text: &str) -> Result<Batch, String> {
    if text.trim().eq_ignore_ascii_case("auto") {
        return Ok(Batch::Auto);
    }
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|&n| n >= 1)
        .map(Batch::Images)
        .ok_or_else(|| format!("expected a number of images (1 or more) or `auto`, got '{text}'"))
}

/// Parses `--batch` where only a number of images is accepted.
pub fn parse_batch_images(text: &str) -> Result<u32, String> {
    match parse_batch(text)? {
        Batch::Images(n) => Ok(n),
        Batch::Auto => Err(
            "`auto` is ipu-run's (it plans the model for each batch it tries); give a number of images".into(),
        ),
    }
}

/// The weights policy of `--weights` and `--seed`.
pub fn weights_policy(flags: &OnnxFlags) -> Result<WeightsPolicy, String> {
    match flags.weights.as_str() {
        "" | "require" => Ok(WeightsPolicy::Require),
        "zeros" => Ok(WeightsPolicy::Zeros),
        "random" => Ok(WeightsPolicy::Random { seed: flags.seed }),
        other => Err(format!(
            "--weights={other}: expected require, zeros or random"
        )),
    }
}

/// Loads and imports the ONNX model at `path` into a new context holding
/// `dialects` (which must include ipuc's `nn` and `func`); returns the
/// context and the `builtin.module`.
pub fn import_onnx(
    path: &str,
    flags: &OnnxFlags,
    dialects: std::sync::Arc<ipuc_ir::DialectRegistry>,
) -> Result<(Context, OpId), Diagnostic> {
    let weights = weights_policy(flags).map_err(|m| Diagnostic::error(Location::unknown(), m))?;
    if let Some(dir) = &flags.save_weights {
        save_weights(path, weights, Path::new(dir))?;
    }
    let mut ctx = Context::new(dialects);
    let opts = ImportOptions {
        input_shapes: flags.input_shapes.clone(),
        batch: flags.batch,
        file_name: path.to_string(),
    };
    let module = import_file(&mut ctx, Path::new(path), &LoadOptions { weights }, &opts)?;
    Ok((ctx, module))
}

/// Writes the weights the model at `path` is compiled with (loaded, or
/// synthesised by `weights`: the importer synthesises the very same values)
/// as the external data file(s) its graph expects, into `dir`. Copying the
/// `.onnx` file next to them gives a model other runtimes can run.
pub fn save_weights(
    path: &str,
    weights: WeightsPolicy,
    dir: &Path,
) -> Result<Vec<std::path::PathBuf>, Diagnostic> {
    let fail = |m: String| Diagnostic::error(Location::unknown(), m);
    std::fs::create_dir_all(dir).map_err(|e| {
        fail(format!(
            "--save-weights: cannot create '{}': {e}",
            dir.display()
        ))
    })?;
    let model = ipuc_frontends::onnx::Model::load(Path::new(path), &LoadOptions { weights })
        .map_err(|e| fail(format!("--save-weights: {e}")))?;
    let files = model
        .save_weights(dir)
        .map_err(|e| fail(format!("--save-weights: {e}")))?;
    if files.is_empty() {
        tracing::warn!(
            "--save-weights: '{path}' keeps all its weights inside the model file; nothing written"
        );
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_parse_and_reject_garbage() {
        assert_eq!(parse_batch("4").unwrap(), Batch::Images(4));
        assert_eq!(parse_batch("auto").unwrap(), Batch::Auto);
        assert_eq!(parse_batch("AUTO").unwrap().images(), None);
        assert_eq!(parse_batch(" 2 ").unwrap().images(), Some(2));
        for bad in ["0", "-1", "two", "", "1.5"] {
            assert!(
                parse_batch(bad).unwrap_err().contains("number of images"),
                "{bad}"
            );
        }
        assert_eq!(parse_batch_images("3").unwrap(), 3);
        assert!(parse_batch_images("auto").unwrap_err().contains("ipu-run"));
    }

    #[test]
    fn input_shapes_parse_and_reject_garbage() {
        assert_eq!(
            parse_input_shape("pixel_values=1x3x384x384").unwrap(),
            ("pixel_values".to_string(), vec![1, 3, 384, 384])
        );
        assert_eq!(parse_input_shape("s=").unwrap(), ("s".to_string(), vec![]));
        assert!(parse_input_shape("1x3").unwrap_err().contains("NAME=D0xD1"));
        assert!(parse_input_shape("x=1x-3").unwrap_err().contains("'-3'"));
        assert!(parse_input_shape("=4")
            .unwrap_err()
            .contains("missing the input name"));
    }

    #[test]
    fn weights_flags_map_to_policies() {
        let f = |w: &str, seed| OnnxFlags {
            weights: w.into(),
            seed,
            input_shapes: vec![],
            batch: None,
            save_weights: None,
        };
        assert_eq!(weights_policy(&f("", 0)), Ok(WeightsPolicy::Require));
        assert_eq!(weights_policy(&f("zeros", 0)), Ok(WeightsPolicy::Zeros));
        assert_eq!(
            weights_policy(&f("random", 7)),
            Ok(WeightsPolicy::Random { seed: 7 })
        );
        assert!(weights_policy(&f("ones", 0)).is_err());
    }
}
