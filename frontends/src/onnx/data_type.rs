//! ONNX `TensorProto.DataType` codes and their element kinds.

use ipuc_ir::numeric::ElementKind;

use super::proto::tensor_proto::DataType;

/// The ipuc element kind of an ONNX data type code, if ipuc supports it.
///
/// Strings, complex numbers and the 6-bit floats have no element kind and return
/// `None`.
pub fn element_kind_of(data_type: i32) -> Option<ElementKind> {
    Some(match DataType::try_from(data_type).ok()? {
        DataType::Float => ElementKind::F32,
        DataType::Uint8 => ElementKind::U8,
        DataType::Int8 => ElementKind::I8,
        DataType::Uint16 => ElementKind::U16,
        DataType::Int16 => ElementKind::I16,
        DataType::Int32 => ElementKind::I32,
        DataType::Int64 => ElementKind::I64,
        DataType::Bool => ElementKind::Bool,
        DataType::Float16 => ElementKind::F16,
        DataType::Double => ElementKind::F64,
        DataType::Uint32 => ElementKind::U32,
        DataType::Uint64 => ElementKind::U64,
        DataType::Bfloat16 => ElementKind::BF16,
        DataType::Float8e4m3fn => ElementKind::F8E4M3FN,
        DataType::Float8e4m3fnuz => ElementKind::F8E4M3FNUZ,
        DataType::Float8e5m2 => ElementKind::F8E5M2,
        DataType::Float8e5m2fnuz => ElementKind::F8E5M2FNUZ,
        DataType::Float8e8m0 => ElementKind::F8E8M0FNU,
        DataType::Float4e2m1 => ElementKind::F4E2M1FN,
        DataType::Int4 => ElementKind::I4,
        DataType::Uint4 => ElementKind::U4,
        DataType::Int2 => ElementKind::I2,
        DataType::Uint2 => ElementKind::U2,
        _ => return None,
    })
}

/// The ONNX data type code of an element kind.
pub fn data_type_of(kind: ElementKind) -> i32 {
    let data_type = match kind {
        ElementKind::F32 => DataType::Float,
        ElementKind::U8 => DataType::Uint8,
        ElementKind::I8 => DataType::Int8,
        ElementKind::U16 => DataType::Uint16,
        ElementKind::I16 => DataType::Int16,
        ElementKind::I32 => DataType::Int32,
        ElementKind::I64 => DataType::Int64,
        ElementKind::Bool => DataType::Bool,
        ElementKind::F16 => DataType::Float16,
        ElementKind::F64 => DataType::Double,
        ElementKind::U32 => DataType::Uint32,
        ElementKind::U64 => DataType::Uint64,
        ElementKind::BF16 => DataType::Bfloat16,
        ElementKind::F8E4M3FN => DataType::Float8e4m3fn,
        ElementKind::F8E4M3FNUZ => DataType::Float8e4m3fnuz,
        ElementKind::F8E5M2 => DataType::Float8e5m2,
        ElementKind::F8E5M2FNUZ => DataType::Float8e5m2fnuz,
        ElementKind::F8E8M0FNU => DataType::Float8e8m0,
        ElementKind::F4E2M1FN => DataType::Float4e2m1,
        ElementKind::I4 => DataType::Int4,
        ElementKind::U4 => DataType::Uint4,
        ElementKind::I2 => DataType::Int2,
        ElementKind::U2 => DataType::Uint2,
    };
    data_type as i32
}

/// The ONNX name of a data type code (`FLOAT`, `INT64`, ...), or `unknown`.
pub fn data_type_name(data_type: i32) -> &'static str {
    DataType::try_from(data_type)
        .map(|t| t.as_str_name())
        .unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_code() {
        for kind in ElementKind::ALL {
            assert_eq!(element_kind_of(data_type_of(kind)), Some(kind));
        }
        assert_eq!(element_kind_of(DataType::String as i32), None);
        assert_eq!(element_kind_of(9999), None);
        assert_eq!(data_type_name(1), "FLOAT");
    }
}
