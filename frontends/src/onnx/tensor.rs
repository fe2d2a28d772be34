//! Host tensors decoded from `TensorProto`s.

use bytes::Bytes;
use ipuc_ir::numeric::{storage, ElementKind};

use super::data_type::{data_type_name, data_type_of, element_kind_of};
use super::error::{OnnxError, Result};
use super::proto::{tensor_proto, TensorProto};

/// A dense tensor in host memory: element kind, dims and little-endian bytes.
///
/// The bytes are a shared, reference-counted buffer: cloning a `Tensor` or slicing
/// weights out of a model file never copies element data.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Element type.
    pub kind: ElementKind,
    /// Dimensions (row-major, outermost first). Empty for a scalar.
    pub dims: Vec<usize>,
    /// `element_count() * kind.byte_size()` little-endian bytes.
    pub data: Bytes,
}

impl Tensor {
    /// A tensor from its parts, checking that the byte count matches the dims.
    pub fn new(kind: ElementKind, dims: Vec<usize>, data: Bytes) -> Result<Tensor> {
        let expected = byte_len(kind, &dims).ok_or_else(|| OnnxError::InvalidDims {
            tensor: String::new(),
            dims: dims.iter().map(|&d| d as i64).collect(),
        })?;
        if data.len() != expected {
            return Err(OnnxError::tensor_data(
                "",
                format!(
                    "{} bytes of data for dims {dims:?} of {kind} (expected {expected})",
                    data.len()
                ),
            ));
        }
        Ok(Tensor { kind, dims, data })
    }

    /// An f32 tensor from values (little-endian encoding). Panics if the count
    /// does not match the dims (a programming error, not input).
    pub fn from_f32(dims: Vec<usize>, values: &[f32]) -> Tensor {
        assert_eq!(
            values.len(),
            dims.iter().product::<usize>(),
            "values do not fill dims"
        );
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor {
            kind: ElementKind::F32,
            dims,
            data: data.into(),
        }
    }

    /// An i64 tensor from values. Panics if the count does not match the dims.
    pub fn from_i64(dims: Vec<usize>, values: &[i64]) -> Tensor {
        assert_eq!(
            values.len(),
            dims.iter().product::<usize>(),
            "values do not fill dims"
        );
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor {
            kind: ElementKind::I64,
            dims,
            data: data.into(),
        }
    }

    /// Number of elements (1 for a scalar).
    pub fn element_count(&self) -> usize {
        self.dims.iter().product()
    }

    /// Every element converted to f64 (exact for floats and integers up to 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.element_count())
            .map(|i| storage::load_f64(self.kind, &self.data, i))
            .collect()
    }

    /// Every element as an integer (floats truncated toward zero).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        (0..self.element_count())
            .map(|i| storage::load_i128(self.kind, &self.data, i) as i64)
            .collect()
    }

    /// Decodes a `TensorProto` whose data is inside the message (`raw_data` or the
    /// typed fields). External data is resolved by [`super::Model`] loading; here it
    /// is an error.
    pub fn from_proto(proto: &TensorProto) -> Result<Tensor> {
        let name = proto.name.as_deref().unwrap_or("");
        let (kind, dims) = kind_and_dims(proto)?;
        if is_external(proto) {
            return Err(OnnxError::tensor_data(name, "data is stored externally"));
        }
        if proto.segment.is_some() {
            return Err(OnnxError::tensor_data(
                name,
                "segmented tensors are not supported",
            ));
        }
        let count: usize = dims.iter().product();
        let expected = count * kind.byte_size();
        if let Some(raw) = &proto.raw_data {
            if raw.len() != expected {
                return Err(OnnxError::tensor_data(
                    name,
                    format!(
                        "raw_data has {} bytes but dims {dims:?} of {kind} need {expected}",
                        raw.len()
                    ),
                ));
            }
            // Zero-copy: `raw` is a slice of the buffer the model was decoded from.
            return Ok(Tensor {
                kind,
                dims,
                data: raw.clone(),
            });
        }
        let data = typed_field_bytes(proto, kind, count, name)?;
        Ok(Tensor {
            kind,
            dims,
            data: data.into(),
        })
    }

    /// Encodes as a `TensorProto` with `raw_data` (sharing the bytes).
    pub fn to_proto(&self, name: &str) -> TensorProto {
        TensorProto {
            name: Some(name.to_string()),
            dims: self.dims.iter().map(|&d| d as i64).collect(),
            data_type: Some(data_type_of(self.kind)),
            raw_data: Some(self.data.clone()),
            ..Default::default()
        }
    }
}

/// `count(dims) * byte_size(kind)`, or `None` on overflow.
pub(crate) fn byte_len(kind: ElementKind, dims: &[usize]) -> Option<usize> {
    dims.iter()
        .try_fold(kind.byte_size(), |acc, &d| acc.checked_mul(d))
}

/// True if the proto says its data lives in an external file.
pub(crate) fn is_external(proto: &TensorProto) -> bool {
    proto.data_location == Some(tensor_proto::DataLocation::External as i32)
}

/// The element kind and checked dims of a tensor proto.
pub(crate) fn kind_and_dims(proto: &TensorProto) -> Result<(ElementKind, Vec<usize>)> {
    let name = proto.name.as_deref().unwrap_or("");
    let data_type = proto.data_type.unwrap_or(0);
    let kind = element_kind_of(data_type).ok_or_else(|| OnnxError::UnsupportedDataType {
        tensor: name.to_string(),
        data_type,
        type_name: data_type_name(data_type),
    })?;
    let invalid = || OnnxError::InvalidDims {
        tensor: name.to_string(),
        dims: proto.dims.clone(),
    };
    let dims = proto
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| invalid()))
        .collect::<Result<Vec<usize>>>()?;
    // Reject dims whose byte size overflows (or is absurd for host memory).
    byte_len(kind, &dims)
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(invalid)?;
    Ok((kind, dims))
}

/// Re-encodes the typed repeated fields into little-endian element bytes.
fn typed_field_bytes(
    proto: &TensorProto,
    kind: ElementKind,
    count: usize,
    name: &str,
) -> Result<Vec<u8>> {
    let check = |field: &str, len: usize| -> Result<()> {
        if len == count {
            Ok(())
        } else {
            Err(OnnxError::tensor_data(
                name,
                format!("{field} has {len} element(s) but dims need {count}"),
            ))
        }
    };
    // Capacity grows with the data actually present, never with the claimed dims:
    // a corrupt file can claim terabytes.
    let mut out = Vec::new();
    match kind {
        ElementKind::F32 => {
            check("float_data", proto.float_data.len())?;
            proto
                .float_data
                .iter()
                .for_each(|v| out.extend(v.to_le_bytes()));
        }
        ElementKind::F64 => {
            check("double_data", proto.double_data.len())?;
            proto
                .double_data
                .iter()
                .for_each(|v| out.extend(v.to_le_bytes()));
        }
        ElementKind::I64 => {
            check("int64_data", proto.int64_data.len())?;
            proto
                .int64_data
                .iter()
                .for_each(|v| out.extend(v.to_le_bytes()));
        }
        ElementKind::U32 | ElementKind::U64 => {
            check("uint64_data", proto.uint64_data.len())?;
            for &v in &proto.uint64_data {
                if kind == ElementKind::U32 {
                    out.extend((v as u32).to_le_bytes());
                } else {
                    out.extend(v.to_le_bytes());
                }
            }
        }
        // Every other kind is one element per int32_data entry: the value itself for
        // integers and bool, the bit pattern for f16/bf16/f8.
        _ => {
            check("int32_data", proto.int32_data.len())?;
            let width = kind.byte_size();
            for &v in &proto.int32_data {
                out.extend_from_slice(&v.to_le_bytes()[..width]);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_fields_decode_to_little_endian_bytes() {
        let proto = TensorProto {
            name: Some("h".into()),
            dims: vec![2],
            data_type: Some(tensor_proto::DataType::Float16 as i32),
            int32_data: vec![0x3C00, 0xC000],
            ..Default::default()
        };
        let t = Tensor::from_proto(&proto).unwrap();
        assert_eq!(t.kind, ElementKind::F16);
        assert_eq!(t.to_f64_vec(), vec![1.0, -2.0]);

        let proto = TensorProto {
            dims: vec![3],
            data_type: Some(tensor_proto::DataType::Uint32 as i32),
            uint64_data: vec![1, 2, u32::MAX as u64],
            ..Default::default()
        };
        assert_eq!(
            Tensor::from_proto(&proto).unwrap().to_i64_vec(),
            vec![1, 2, u32::MAX as i64]
        );
    }

    #[test]
    fn wrong_byte_counts_are_errors_naming_the_tensor() {
        let proto = TensorProto {
            name: Some("w".into()),
            dims: vec![2, 2],
            data_type: Some(1),
            raw_data: Some(Bytes::from_static(&[0; 12])),
            ..Default::default()
        };
        let err = Tensor::from_proto(&proto).unwrap_err().to_string();
        assert!(err.contains("`w`") && err.contains("12 bytes"), "{err}");
        let proto = TensorProto {
            name: Some("v".into()),
            dims: vec![3],
            data_type: Some(1),
            float_data: vec![1.0],
            ..Default::default()
        };
        assert!(Tensor::from_proto(&proto)
            .unwrap_err()
            .to_string()
            .contains("float_data has 1"));
        let proto = TensorProto {
            name: Some("n".into()),
            dims: vec![-1],
            data_type: Some(1),
            ..Default::default()
        };
        assert!(matches!(
            Tensor::from_proto(&proto),
            Err(OnnxError::InvalidDims { .. })
        ));
        let proto = TensorProto {
            name: Some("s".into()),
            dims: vec![1],
            data_type: Some(8),
            ..Default::default()
        };
        assert!(Tensor::from_proto(&proto)
            .unwrap_err()
            .to_string()
            .contains("STRING"));
        let proto = TensorProto {
            name: Some("o".into()),
            dims: vec![1 << 40, 1 << 40],
            data_type: Some(1),
            ..Default::default()
        };
        assert!(matches!(
            Tensor::from_proto(&proto),
            Err(OnnxError::InvalidDims { .. })
        ));
    }

    #[test]
    fn huge_claimed_dims_without_data_do_not_allocate() {
        let proto = TensorProto {
            name: Some("big".into()),
            dims: vec![1 << 40],
            data_type: Some(1),
            ..Default::default()
        };
        let err = Tensor::from_proto(&proto).unwrap_err().to_string();
        assert!(err.contains("float_data has 0 element(s)"), "{err}");
    }

    #[test]
    fn proto_round_trip_shares_bytes() {
        let t = Tensor::from_f32(vec![2, 1], &[1.5, -3.0]);
        let back = Tensor::from_proto(&t.to_proto("x")).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.data.as_ptr(), t.data.as_ptr());
    }
}
