//! Whole models: loading, checking, saving weights.

use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;

use super::error::{OnnxError, Result};
use super::external_data::{ExternalData, ExternalFiles};
use super::graph::{Graph, WeightSource};
use super::proto::{ModelProto, TensorProto};
use super::tensor::{is_external, kind_and_dims, stored_len, unpack_stored, Tensor};
use super::weights::{synthesize, WeightRole, WeightsPolicy};

/// Options for loading a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// What to do when external weight files are missing.
    pub weights: WeightsPolicy,
}

/// A decoded ONNX model.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// `ir_version` of the file.
    pub ir_version: i64,
    /// `producer_name` and `producer_version`, space separated.
    pub producer: String,
    /// Operator set versions by domain. The default domain is stored as `""`
    /// (files may also write it `ai.onnx`; both are normalised to `""`).
    pub opset_imports: BTreeMap<String, i64>,
    /// The main graph, checked (see [`Graph::check`]).
    pub graph: Graph,
    /// Directory external data is resolved against (the model file's directory).
    pub model_dir: Option<PathBuf>,
}

/// State shared while decoding one model: where external files are and which have
/// been read, and the weights policy.
pub(crate) struct LoadContext {
    model_dir: Option<PathBuf>,
    files: ExternalFiles,
    policy: WeightsPolicy,
}

impl LoadContext {
    /// Decodes a tensor that is not an initializer (attribute values).
    pub(crate) fn tensor(&mut self, proto: &TensorProto) -> Result<Tensor> {
        self.initializer(proto, WeightRole::Weight).map(|(t, _)| t)
    }

    /// Decodes an initializer, resolving external data (and synthesising it when the
    /// file is missing and the policy allows).
    pub(crate) fn initializer(
        &mut self,
        proto: &TensorProto,
        role: WeightRole,
    ) -> Result<(Tensor, WeightSource)> {
        if !is_external(proto) {
            return Ok((Tensor::from_proto(proto)?, WeightSource::Inline));
        }
        let name = proto.name.clone().unwrap_or_default();
        let (kind, dims) = kind_and_dims(proto)?;
        let reference = ExternalData::from_proto(proto)?;
        let count: usize = dims.iter().product();
        let expected = stored_len(kind, &dims).expect("kind_and_dims checked the size");
        if let Some(length) = reference.length {
            if length != expected as u64 {
                return Err(OnnxError::InvalidExternalData {
                    initializer: name,
                    detail: format!(
                        "length {length} but dims {dims:?} of {kind} need {expected} bytes"
                    ),
                });
            }
        }
        let dir = self
            .model_dir
            .as_deref()
            .ok_or_else(|| OnnxError::NoModelDirectory {
                initializer: name.clone(),
                location: reference.location.clone(),
            })?;
        let path = reference.path(dir);
        let Some(file) = self.files.get(&path)? else {
            if self.policy == WeightsPolicy::Require {
                return Err(OnnxError::MissingExternalData {
                    initializer: name,
                    file: path,
                });
            }
            let data = synthesize(&name, kind, count, role, self.policy);
            return Ok((
                Tensor { kind, dims, data },
                WeightSource::Synthesized(reference),
            ));
        };
        let start = usize::try_from(reference.offset)
            .ok()
            .filter(|&s| s <= file.len());
        let Some(range) = start
            .and_then(|s| Some(s..s.checked_add(expected)?))
            .filter(|r| r.end <= file.len())
        else {
            return Err(OnnxError::InvalidExternalData {
                initializer: name,
                detail: format!(
                    "bytes {}..{} are beyond the end of `{}` ({} bytes)",
                    reference.offset,
                    reference.offset.saturating_add(expected as u64),
                    path.display(),
                    file.len()
                ),
            });
        };
        // A slice of the file buffer: no copy of the weight bytes (but for the
        // packed 4- and 2-bit kinds, unpacked to a byte per element).
        let data: Bytes = unpack_stored(kind, file.slice(range), count);
        Ok((
            Tensor { kind, dims, data },
            WeightSource::External(reference),
        ))
    }
}

impl Model {
    /// Reads and checks a `.onnx` file. External data is resolved against the file's
    /// directory.
    pub fn load(path: &Path, options: &LoadOptions) -> Result<Model> {
        let bytes = std::fs::read(path).map_err(|e| OnnxError::io(path, e))?;
        let dir = path.parent().map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        });
        Model::decode(
            Bytes::from(bytes),
            &path.display().to_string(),
            dir,
            options,
        )
    }

    /// Decodes and checks a model from bytes. `what` names the source in errors;
    /// `model_dir` resolves external data (`None`: external data is an error).
    ///
    /// Initializer `raw_data` is not copied: tensors share `bytes`.
    pub fn decode(
        bytes: Bytes,
        what: &str,
        model_dir: Option<&Path>,
        options: &LoadOptions,
    ) -> Result<Model> {
        let proto = ModelProto::decode(bytes).map_err(|source| OnnxError::Decode {
            what: what.to_string(),
            source,
        })?;
        let mut ctx = LoadContext {
            model_dir: model_dir.map(Path::to_path_buf),
            files: ExternalFiles::default(),
            policy: options.weights,
        };
        let graph_proto = proto.graph.as_ref().ok_or(OnnxError::MissingGraph)?;
        let graph = Graph::from_proto(graph_proto, &mut ctx)?;
        graph.check()?;
        let opset_imports = proto
            .opset_import
            .iter()
            .map(|o| {
                let domain = o.domain.clone().unwrap_or_default();
                let domain = if domain == "ai.onnx" {
                    String::new()
                } else {
                    domain
                };
                (domain, o.version.unwrap_or(0))
            })
            .collect();
        let producer = [
            proto.producer_name.as_deref(),
            proto.producer_version.as_deref(),
        ]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
        Ok(Model {
            ir_version: proto.ir_version.unwrap_or(0),
            producer,
            opset_imports,
            graph,
            model_dir: model_dir.map(Path::to_path_buf),
        })
    }

    /// The opset version imported for `domain` (`""` or `ai.onnx` for the default).
    pub fn opset_version(&self, domain: &str) -> Option<i64> {
        let domain = if domain == "ai.onnx" { "" } else { domain };
        self.opset_imports.get(domain).copied()
    }

    /// Total bytes of initializer data held.
    pub fn weight_bytes(&self) -> usize {
        self.graph
            .initializers
            .iter()
            .map(|i| i.tensor.data.len())
            .sum()
    }

    /// Writes the externally stored weights this model was loaded with (read or
    /// synthesised) into the external data files the graph expects, under
    /// `model_dir`, with the same location/offset/length layout, so any ONNX runtime
    /// can run the very same model. Gaps between tensors are zero-filled. Returns the
    /// files written.
    pub fn save_weights(&self, model_dir: &Path) -> Result<Vec<PathBuf>> {
        let mut by_file: BTreeMap<&str, Vec<(&ExternalData, &Tensor, &str)>> = BTreeMap::new();
        for init in &self.graph.initializers {
            if let WeightSource::External(r) | WeightSource::Synthesized(r) = &init.source {
                by_file
                    .entry(r.location.as_str())
                    .or_default()
                    .push((r, &init.tensor, &init.name));
            }
        }
        let mut written = Vec::new();
        for (location, mut tensors) in by_file {
            tensors.sort_by_key(|(r, _, _)| r.offset);
            let path = model_dir.join(location);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| OnnxError::io(parent, e))?;
            }
            let mut file = std::fs::File::create(&path).map_err(|e| OnnxError::io(&path, e))?;
            let mut end = 0u64;
            for (reference, tensor, name) in tensors {
                if reference.offset < end {
                    return Err(OnnxError::InvalidExternalData {
                        initializer: name.to_string(),
                        detail: format!(
                            "offset {} overlaps the previous tensor in `{location}`",
                            reference.offset
                        ),
                    });
                }
                let stored = tensor.stored_bytes();
                file.seek(SeekFrom::Start(reference.offset))
                    .and_then(|_| file.write_all(&stored))
                    .map_err(|e| OnnxError::io(&path, e))?;
                end = reference.offset + stored.len() as u64;
            }
            file.set_len(end)
                .and_then(|_| file.sync_all())
                .map_err(|e| OnnxError::io(&path, e))?;
            tracing::info!(file = %path.display(), bytes = end, "wrote external weights");
            written.push(path);
        }
        Ok(written)
    }
}
