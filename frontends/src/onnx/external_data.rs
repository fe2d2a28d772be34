//! External tensor data (`data_location = EXTERNAL`): references and file access.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;

use super::error::{OnnxError, Result};
use super::proto::tensor_proto::DataLocation;
use super::proto::{ModelProto, StringStringEntryProto, TensorProto};

/// Where an externally stored tensor's bytes are: `location` (relative to the model
/// file's directory), byte `offset` and `length`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalData {
    /// File path relative to the model directory, as written in the model.
    pub location: String,
    /// Byte offset in the file.
    pub offset: u64,
    /// Byte length (`None` when the model leaves it implicit: the tensor's size).
    pub length: Option<u64>,
}

impl ExternalData {
    /// Parses the `external_data` key/value entries of a tensor.
    pub(crate) fn from_proto(proto: &TensorProto) -> Result<ExternalData> {
        let name = proto.name.clone().unwrap_or_default();
        let invalid = |detail: String| OnnxError::InvalidExternalData {
            initializer: name.clone(),
            detail,
        };
        let mut location = None;
        let mut offset = 0;
        let mut length = None;
        for entry in &proto.external_data {
            let value = entry.value.as_deref().unwrap_or("");
            let number = |what: &str| {
                value
                    .parse::<u64>()
                    .map_err(|_| invalid(format!("{what} `{value}` is not a non-negative integer")))
            };
            match entry.key.as_deref().unwrap_or("") {
                "location" => location = Some(value.to_string()),
                "offset" => offset = number("offset")?,
                "length" => length = Some(number("length")?),
                // `checksum` and unknown keys do not affect where the data is.
                _ => {}
            }
        }
        let location = location.ok_or_else(|| invalid("no `location` entry".to_string()))?;
        // Like the ONNX checker: the file must stay inside the model directory.
        let path = Path::new(&location);
        if location.is_empty()
            || path.is_absolute()
            || path
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(invalid(format!(
                "location `{location}` must be a relative path inside the model directory"
            )));
        }
        Ok(ExternalData {
            location,
            offset,
            length,
        })
    }

    /// The file this reference points to, resolved against the model directory.
    pub fn path(&self, model_dir: &Path) -> PathBuf {
        model_dir.join(&self.location)
    }
}

/// Moves the raw data of every initializer of `min_bytes` or more out of
/// `model` into the external file `location`, each at the next multiple of
/// `align` bytes, as onnx's `convert_model_to_external_data` does. Returns
/// the file's bytes: the caller writes them next to the model, or leaves the
/// file missing to make a graph-only model.
pub fn externalize_initializers(
    model: &mut ModelProto,
    location: &str,
    min_bytes: usize,
    align: usize,
) -> Vec<u8> {
    let mut file = Vec::new();
    let Some(graph) = model.graph.as_mut() else {
        return file;
    };
    for t in &mut graph.initializer {
        let Some(raw) = t.raw_data.take_if(|raw| raw.len() >= min_bytes) else {
            continue;
        };
        file.resize(file.len().next_multiple_of(align.max(1)), 0);
        let entry = |key: &str, value: String| StringStringEntryProto {
            key: Some(key.into()),
            value: Some(value),
        };
        t.external_data = vec![
            entry("location", location.to_string()),
            entry("offset", file.len().to_string()),
            entry("length", raw.len().to_string()),
        ];
        t.data_location = Some(DataLocation::External as i32);
        file.extend_from_slice(&raw);
    }
    file
}

/// Reads each external data file at most once and hands out zero-copy slices.
#[derive(Default)]
pub(crate) struct ExternalFiles {
    files: HashMap<PathBuf, Option<Bytes>>,
}

impl ExternalFiles {
    /// The whole file, or `None` if it does not exist (other I/O errors are errors).
    pub(crate) fn get(&mut self, path: &Path) -> Result<Option<Bytes>> {
        if let Some(cached) = self.files.get(path) {
            return Ok(cached.clone());
        }
        let contents = match std::fs::read(path) {
            Ok(bytes) => {
                tracing::debug!(file = %path.display(), bytes = bytes.len(), "read external data file");
                Some(Bytes::from(bytes))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(OnnxError::io(path, e)),
        };
        self.files.insert(path.to_path_buf(), contents.clone());
        Ok(contents)
    }
}
