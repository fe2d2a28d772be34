//! `.pb` tensor files in the ONNX backend-test layout
//! (`test_data_set_0/input_0.pb`, `output_0.pb`, ...).

use std::path::Path;

use bytes::Bytes;
use prost::Message;

use super::error::{OnnxError, Result};
use super::proto::TensorProto;
use super::tensor::Tensor;

/// A tensor with the name stored in its file.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedTensor {
    /// `TensorProto.name` (may be empty).
    pub name: String,
    /// The data.
    pub tensor: Tensor,
}

/// Reads one serialized `TensorProto` file.
pub fn read_tensor_pb(path: &Path) -> Result<NamedTensor> {
    let bytes = std::fs::read(path).map_err(|e| OnnxError::io(path, e))?;
    let what = path.display().to_string();
    let mut proto =
        TensorProto::decode(Bytes::from(bytes)).map_err(|source| OnnxError::Decode {
            what: what.clone(),
            source,
        })?;
    // Errors about the data name the file, which is what a user can act on.
    let name = proto.name.replace(what).unwrap_or_default();
    let tensor = Tensor::from_proto(&proto)?;
    Ok(NamedTensor { name, tensor })
}

/// Writes a tensor as a serialized `TensorProto` (`raw_data` encoding).
pub fn write_tensor_pb(path: &Path, name: &str, tensor: &Tensor) -> Result<()> {
    std::fs::write(path, tensor.to_proto(name).encode_to_vec()).map_err(|e| OnnxError::io(path, e))
}

/// Reads `input_<k>.pb` and `output_<k>.pb` for k = 0, 1, ... until the first gap,
/// returning (inputs, outputs).
pub fn read_test_data_set(dir: &Path) -> Result<(Vec<NamedTensor>, Vec<NamedTensor>)> {
    let read_all = |prefix: &str| -> Result<Vec<NamedTensor>> {
        let mut tensors = Vec::new();
        loop {
            let path = dir.join(format!("{prefix}_{}.pb", tensors.len()));
            if !path.exists() {
                return Ok(tensors);
            }
            tensors.push(read_tensor_pb(&path)?);
        }
    };
    if !dir.is_dir() {
        return Err(OnnxError::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "test data set directory not found",
            ),
        ));
    }
    Ok((read_all("input")?, read_all("output")?))
}
