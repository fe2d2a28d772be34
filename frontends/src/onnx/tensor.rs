//! Host tensors decoded from `TensorProto`s.

use bytes::Bytes;
use ipuc_ir::numeric::{packing, storage, ElementKind};

use super::data_type::{data_type_name, data_type_of, element_kind_of};
use super::error::{OnnxError, Result};
use super::proto::{tensor_proto, TensorProto};

/// A dense tensor in host memory: element kind, dims and little-endian bytes.
///
/// The bytes are a shared, reference-counted buffer: cloning a `Tensor` or slicing
/// weights out of a model file never copies element data. The 4- and 2-bit kinds,
/// which ONNX files pack two or four to a byte, are unpacked to a byte each on
/// loading (a copy) and packed again by [`Tensor::to_proto`].
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
        Self::from_values(ElementKind::F32, dims, values, f32::to_le_bytes)
    }

    /// An i64 tensor from values. Panics if the count does not match the dims.
    pub fn from_i64(dims: Vec<usize>, values: &[i64]) -> Tensor {
        Self::from_values(ElementKind::I64, dims, values, i64::to_le_bytes)
    }

    fn from_values<T: Copy, const N: usize>(
        kind: ElementKind,
        dims: Vec<usize>,
        values: &[T],
        to_le: fn(T) -> [u8; N],
    ) -> Tensor {
        assert_eq!(
            values.len(),
            dims.iter().product::<usize>(),
            "values do not fill dims"
        );
        Tensor {
            kind,
            dims,
            data: le_bytes(values, to_le).into(),
        }
    }

    /// Number of elements (1 for a scalar).
    pub fn element_count(&self) -> usize {
        self.dims.iter().product()
    }

    /// Every element converted to f64 (exact for floats and integers up to 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        storage::load_all_f64(self.kind, &self.data, self.element_count())
    }

    /// Every element as an integer (floats truncated toward zero).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        storage::load_all_i64(self.kind, &self.data, self.element_count())
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
        let expected = stored_len(kind, &dims).expect("kind_and_dims checked the size");
        if let Some(raw) = &proto.raw_data {
            if raw.len() != expected {
                return Err(OnnxError::tensor_data(
                    name,
                    format!(
                        "raw_data has {} bytes but dims {dims:?} of {kind} need {expected}{}",
                        raw.len(),
                        packing_note(kind)
                    ),
                ));
            }
            // Zero-copy (but for packed kinds): `raw` is a slice of the buffer the
            // model was decoded from.
            return Ok(Tensor {
                kind,
                dims,
                data: unpack_stored(kind, raw.clone(), count),
            });
        }
        let data = typed_field_bytes(proto, kind, count, name)?;
        Ok(Tensor {
            kind,
            dims,
            data: data.into(),
        })
    }

    /// Encodes as a `TensorProto` with `raw_data` (sharing the bytes; the 4- and
    /// 2-bit kinds are packed as ONNX requires).
    pub fn to_proto(&self, name: &str) -> TensorProto {
        TensorProto {
            name: Some(name.to_string()),
            dims: self.dims.iter().map(|&d| d as i64).collect(),
            data_type: Some(data_type_of(self.kind)),
            raw_data: Some(self.stored_bytes()),
            ..Default::default()
        }
    }

    /// The bytes as an ONNX file stores them: packed for the 4- and 2-bit kinds
    /// (a new buffer), the shared bytes otherwise.
    pub fn stored_bytes(&self) -> Bytes {
        if self.kind.is_sub_byte() {
            packing::pack(self.kind, &self.data).into()
        } else {
            self.data.clone()
        }
    }
}

/// Bytes the elements of `dims` take in an ONNX file (`raw_data`, external data):
/// packed for the 4- and 2-bit kinds. `None` on overflow.
pub(crate) fn stored_len(kind: ElementKind, dims: &[usize]) -> Option<usize> {
    let count = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))?;
    packing::packed_len(kind, count)
}

/// The in-memory bytes of `count` elements stored as an ONNX file stores them
/// (`stored` holds at least [`stored_len`] bytes): unpacked for the 4- and 2-bit
/// kinds, shared as they are otherwise.
pub(crate) fn unpack_stored(kind: ElementKind, stored: Bytes, count: usize) -> Bytes {
    if kind.is_sub_byte() {
        packing::unpack(kind, &stored, count)
            .expect("caller checked the stored length")
            .into()
    } else {
        stored
    }
}

/// Explains the expected size of a packed kind in an error message.
fn packing_note(kind: ElementKind) -> String {
    if kind.is_sub_byte() {
        format!(
            " (packed {} elements per byte, as ONNX stores {kind})",
            packing::elements_per_byte(kind)
        )
    } else {
        String::new()
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
        .filter(|_| stored_len(kind, &dims).is_some())
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(invalid)?;
    Ok((kind, dims))
}

/// `values` as little-endian bytes, element after element.
fn le_bytes<T: Copy, const N: usize>(values: &[T], to_le: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| to_le(v)).collect()
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
            out = le_bytes(&proto.float_data, f32::to_le_bytes);
        }
        ElementKind::F64 => {
            check("double_data", proto.double_data.len())?;
            out = le_bytes(&proto.double_data, f64::to_le_bytes);
        }
        ElementKind::I64 => {
            check("int64_data", proto.int64_data.len())?;
            out = le_bytes(&proto.int64_data, i64::to_le_bytes);
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
        // The 4- and 2-bit kinds: each int32_data entry holds one packed byte (two or
        // four elements, low bits first).
        _ if kind.is_sub_byte() => {
            let packed = packing::packed_len(kind, count).expect("kind_and_dims checked");
            if proto.int32_data.len() != packed {
                return Err(OnnxError::tensor_data(
                    name,
                    format!(
                        "int32_data has {} entries but dims need {packed}{}",
                        proto.int32_data.len(),
                        packing_note(kind)
                    ),
                ));
            }
            let bytes: Vec<u8> = proto.int32_data.iter().map(|&v| v as u8).collect();
            out = packing::unpack(kind, &bytes, count).expect("length checked");
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
    fn packed_kinds_unpack_low_bits_first_and_pack_back() {
        // test_cast_FLOAT16_to_INT4's expected output: 7, -8, -7, ... in 5x5.
        let raw = Bytes::from_static(&[0x87, 0xA9, 0xCB, 0xED, 0x0F]);
        let proto = TensorProto {
            name: Some("q".into()),
            dims: vec![3, 3],
            data_type: Some(tensor_proto::DataType::Int4 as i32),
            raw_data: Some(raw.clone()),
            ..Default::default()
        };
        let t = Tensor::from_proto(&proto).unwrap();
        assert_eq!(t.kind, ElementKind::I4);
        assert_eq!(t.to_i64_vec(), vec![7, -8, -7, -6, -5, -4, -3, -2, -1]);
        assert_eq!(t.to_proto("q").raw_data, Some(raw));
        // The same data in int32_data: one packed byte per entry.
        let typed = TensorProto {
            raw_data: None,
            int32_data: vec![0x87, 0xA9, 0xCB, 0xED, 0x0F],
            ..proto.clone()
        };
        assert_eq!(Tensor::from_proto(&typed).unwrap(), t);
        // Four per byte for 2-bit kinds.
        let proto = TensorProto {
            dims: vec![5],
            data_type: Some(tensor_proto::DataType::Uint2 as i32),
            raw_data: Some(Bytes::from_static(&[0xE4, 0x03])),
            ..Default::default()
        };
        assert_eq!(
            Tensor::from_proto(&proto).unwrap().to_i64_vec(),
            vec![0, 1, 2, 3, 3]
        );
        // A wrong size says how the kind is packed.
        let proto = TensorProto {
            name: Some("f".into()),
            dims: vec![5],
            data_type: Some(tensor_proto::DataType::Float4e2m1 as i32),
            raw_data: Some(Bytes::from_static(&[0; 5])),
            ..Default::default()
        };
        let err = Tensor::from_proto(&proto).unwrap_err().to_string();
        assert!(err.contains("need 3 (packed 2 elements per byte"), "{err}");
    }

    #[test]
    fn proto_round_trip_shares_bytes() {
        let t = Tensor::from_f32(vec![2, 1], &[1.5, -3.0]);
        let back = Tensor::from_proto(&t.to_proto("x")).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.data.as_ptr(), t.data.as_ptr());
    }
}
