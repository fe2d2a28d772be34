//! The scalar element types a tensor can be stored in.

use std::fmt;
use std::str::FromStr;

use super::Float8Format;

/// A scalar element type, as stored in tensors and weights.
///
/// Spelled as MLIR spells builtin element types (`i1`, signless `i2`..`i64` for
/// signed integers as MLIR's `arith`/`tensor` world does, `ui2`..`ui64`, `f16`,
/// `bf16`, `f32`, `f64`, `f8E4M3FN`, `f8E5M2`, `f8E4M3FNUZ`, `f8E5M2FNUZ`,
/// `f8E8M0FNU`, `f4E2M1FN`).
/// Signed integers use the signless spelling because MLIR's standard dialects treat
/// signless integers as two's-complement signed where a sign matters.
///
/// Every kind takes at least one byte per element in memory, as MLIR's dense
/// elements store them: the 4- and 2-bit kinds hold their value in the low bits of
/// a byte (signed integers sign-extended to the whole byte). Packing two or four
/// of them per byte is a file format's business (ONNX: [`crate::packing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementKind {
    /// Boolean, one byte per element (0 or 1), MLIR `i1`.
    Bool,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE 754 binary16.
    F16,
    /// bfloat16 (the upper half of an f32).
    BF16,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// 8-bit float, 4 exponent bits (bias 7), 3 mantissa bits, no infinity, NaN = S.1111.111.
    F8E4M3FN,
    /// 8-bit float, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like with infinities.
    F8E5M2,
    /// 8-bit float, 4 exponent bits (bias 8), 3 mantissa bits, no infinity, no negative
    /// zero, NaN = 0x80. The IPU's F143 format.
    F8E4M3FNUZ,
    /// 8-bit float, 5 exponent bits (bias 16), 2 mantissa bits, no infinity, no negative
    /// zero, NaN = 0x80.
    F8E5M2FNUZ,
    /// 8-bit power of two, 8 exponent bits (bias 127), no sign, no mantissa, NaN = 0xFF:
    /// the OCP microscaling scale format (ONNX `FLOAT8E8M0`).
    F8E8M0FNU,
    /// 4-bit float, 2 exponent bits (bias 1), 1 mantissa bit, finite only (max 6):
    /// the OCP MXFP4 element format (ONNX `FLOAT4E2M1`).
    F4E2M1FN,
    /// Signed 2-bit integer (ONNX `INT2`, -2..=1).
    I2,
    /// Signed 4-bit integer (ONNX `INT4`, -8..=7).
    I4,
    /// Unsigned 2-bit integer (ONNX `UINT2`, 0..=3).
    U2,
    /// Unsigned 4-bit integer (ONNX `UINT4`, 0..=15).
    U4,
}

impl ElementKind {
    /// Every element kind, in declaration order.
    pub const ALL: [ElementKind; 23] = [
        ElementKind::Bool,
        ElementKind::I8,
        ElementKind::I16,
        ElementKind::I32,
        ElementKind::I64,
        ElementKind::U8,
        ElementKind::U16,
        ElementKind::U32,
        ElementKind::U64,
        ElementKind::F16,
        ElementKind::BF16,
        ElementKind::F32,
        ElementKind::F64,
        ElementKind::F8E4M3FN,
        ElementKind::F8E5M2,
        ElementKind::F8E4M3FNUZ,
        ElementKind::F8E5M2FNUZ,
        ElementKind::F8E8M0FNU,
        ElementKind::F4E2M1FN,
        ElementKind::I2,
        ElementKind::I4,
        ElementKind::U2,
        ElementKind::U4,
    ];

    /// Bytes one element occupies in memory (one for the 4- and 2-bit kinds too).
    pub const fn byte_size(self) -> usize {
        match self {
            ElementKind::Bool
            | ElementKind::I2
            | ElementKind::I4
            | ElementKind::U2
            | ElementKind::U4
            | ElementKind::F4E2M1FN
            | ElementKind::F8E8M0FNU
            | ElementKind::I8
            | ElementKind::U8
            | ElementKind::F8E4M3FN
            | ElementKind::F8E5M2
            | ElementKind::F8E4M3FNUZ
            | ElementKind::F8E5M2FNUZ => 1,
            ElementKind::I16 | ElementKind::U16 | ElementKind::F16 | ElementKind::BF16 => 2,
            ElementKind::I32 | ElementKind::U32 | ElementKind::F32 => 4,
            ElementKind::I64 | ElementKind::U64 | ElementKind::F64 => 8,
        }
    }

    /// Bits of one element's value: what a packed file format stores per element,
    /// and the MLIR type's width (`i4`, `f4E2M1FN`, ...).
    pub const fn bit_width(self) -> u32 {
        match self {
            ElementKind::Bool => 1,
            ElementKind::I2 | ElementKind::U2 => 2,
            ElementKind::I4 | ElementKind::U4 | ElementKind::F4E2M1FN => 4,
            _ => 8 * self.byte_size() as u32,
        }
    }

    /// True for the kinds ONNX packs several to a byte (4- and 2-bit integers,
    /// `FLOAT4E2M1`).
    pub const fn is_sub_byte(self) -> bool {
        !matches!(self, ElementKind::Bool) && self.bit_width() < 8
    }

    /// True for the storage formats ONNX defines no arithmetic on: the 4- and 2-bit
    /// kinds and `FLOAT8E8M0`. ONNX admits them only in `Cast`/`CastLike`,
    /// `QuantizeLinear`/`DequantizeLinear` and ops that move elements without
    /// computing on them (Reshape, Transpose, ...); a consumer that computes refuses them.
    pub const fn is_storage_only(self) -> bool {
        self.is_sub_byte() || matches!(self, ElementKind::F8E8M0FNU)
    }

    /// The MLIR spelling of this element type.
    pub const fn mlir_name(self) -> &'static str {
        match self {
            ElementKind::Bool => "i1",
            ElementKind::I2 => "i2",
            ElementKind::I4 => "i4",
            ElementKind::U2 => "ui2",
            ElementKind::U4 => "ui4",
            ElementKind::I8 => "i8",
            ElementKind::I16 => "i16",
            ElementKind::I32 => "i32",
            ElementKind::I64 => "i64",
            ElementKind::U8 => "ui8",
            ElementKind::U16 => "ui16",
            ElementKind::U32 => "ui32",
            ElementKind::U64 => "ui64",
            ElementKind::F16 => "f16",
            ElementKind::BF16 => "bf16",
            ElementKind::F32 => "f32",
            ElementKind::F64 => "f64",
            ElementKind::F8E4M3FN => "f8E4M3FN",
            ElementKind::F8E5M2 => "f8E5M2",
            ElementKind::F8E4M3FNUZ => "f8E4M3FNUZ",
            ElementKind::F8E5M2FNUZ => "f8E5M2FNUZ",
            ElementKind::F8E8M0FNU => "f8E8M0FNU",
            ElementKind::F4E2M1FN => "f4E2M1FN",
        }
    }

    /// True for every floating-point kind (including bf16 and the 8-bit floats).
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            ElementKind::F16
                | ElementKind::BF16
                | ElementKind::F32
                | ElementKind::F64
                | ElementKind::F8E4M3FN
                | ElementKind::F8E5M2
                | ElementKind::F8E4M3FNUZ
                | ElementKind::F8E5M2FNUZ
                | ElementKind::F8E8M0FNU
                | ElementKind::F4E2M1FN
        )
    }

    /// True for the integer kinds (signed and unsigned), not for `Bool`.
    pub const fn is_integer(self) -> bool {
        self.is_signed_integer() || self.is_unsigned_integer()
    }

    /// True for `I2`..`I64`.
    pub const fn is_signed_integer(self) -> bool {
        matches!(
            self,
            ElementKind::I2
                | ElementKind::I4
                | ElementKind::I8
                | ElementKind::I16
                | ElementKind::I32
                | ElementKind::I64
        )
    }

    /// True for `U2`..`U64`.
    pub const fn is_unsigned_integer(self) -> bool {
        matches!(
            self,
            ElementKind::U2
                | ElementKind::U4
                | ElementKind::U8
                | ElementKind::U16
                | ElementKind::U32
                | ElementKind::U64
        )
    }

    /// The [`Float8Format`] of this kind, if it is one of the four sign-exponent-mantissa
    /// 8-bit floats (`F8E8M0FNU`, a bare exponent, is not).
    pub const fn float8_format(self) -> Option<Float8Format> {
        match self {
            ElementKind::F8E4M3FN => Some(Float8Format::E4M3FN),
            ElementKind::F8E5M2 => Some(Float8Format::E5M2),
            ElementKind::F8E4M3FNUZ => Some(Float8Format::E4M3FNUZ),
            ElementKind::F8E5M2FNUZ => Some(Float8Format::E5M2FNUZ),
            _ => None,
        }
    }

    /// The inclusive value range of an integer kind (`Bool` is `0..=1`); `None` for floats.
    pub const fn integer_range(self) -> Option<(i128, i128)> {
        Some(match self {
            ElementKind::Bool => (0, 1),
            ElementKind::I2 => (-2, 1),
            ElementKind::I4 => (-8, 7),
            ElementKind::U2 => (0, 3),
            ElementKind::U4 => (0, 15),
            ElementKind::I8 => (i8::MIN as i128, i8::MAX as i128),
            ElementKind::I16 => (i16::MIN as i128, i16::MAX as i128),
            ElementKind::I32 => (i32::MIN as i128, i32::MAX as i128),
            ElementKind::I64 => (i64::MIN as i128, i64::MAX as i128),
            ElementKind::U8 => (0, u8::MAX as i128),
            ElementKind::U16 => (0, u16::MAX as i128),
            ElementKind::U32 => (0, u32::MAX as i128),
            ElementKind::U64 => (0, u64::MAX as i128),
            _ => return None,
        })
    }
}

impl fmt::Display for ElementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

/// Error for a string that names no element kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownElementKind(pub String);

impl fmt::Display for UnknownElementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown element type `{}` (expected one of: {})",
            self.0,
            ElementKind::ALL.map(ElementKind::mlir_name).join(", ")
        )
    }
}

impl std::error::Error for UnknownElementKind {}

impl FromStr for ElementKind {
    type Err = UnknownElementKind;

    /// Parses the MLIR spelling (exactly as [`ElementKind::mlir_name`] prints it).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ElementKind::ALL
            .into_iter()
            .find(|k| k.mlir_name() == s)
            .ok_or_else(|| UnknownElementKind(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlir_names_round_trip_and_are_unique() {
        for kind in ElementKind::ALL {
            assert_eq!(kind.mlir_name().parse::<ElementKind>(), Ok(kind));
        }
        let mut names: Vec<_> = ElementKind::ALL.map(ElementKind::mlir_name).to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ElementKind::ALL.len());
    }

    #[test]
    fn unknown_name_is_a_clear_error() {
        let err = "si8".parse::<ElementKind>().unwrap_err();
        assert!(err.to_string().contains("unknown element type `si8`"));
        assert!(err.to_string().contains("f8E4M3FNUZ"));
    }

    #[test]
    fn classification_is_a_partition() {
        for kind in ElementKind::ALL {
            let classes = [
                kind.is_float(),
                kind.is_integer(),
                kind == ElementKind::Bool,
            ];
            assert_eq!(classes.iter().filter(|c| **c).count(), 1, "{kind}");
            assert_eq!(
                kind.float8_format().is_some(),
                kind.is_float() && kind.bit_width() == 8 && kind != ElementKind::F8E8M0FNU
            );
            if let Some((lo, hi)) = kind.integer_range().filter(|_| kind.is_integer()) {
                let bits = kind.bit_width();
                assert_eq!(hi - lo + 1, 1i128 << bits, "{kind}");
                assert_eq!(lo < 0, kind.is_signed_integer(), "{kind}");
            }
        }
    }

    #[test]
    fn sub_byte_kinds_are_the_packed_ones() {
        let sub: Vec<_> = ElementKind::ALL
            .into_iter()
            .filter(|k| k.is_sub_byte())
            .collect();
        use ElementKind::*;
        assert_eq!(sub, [F4E2M1FN, I2, I4, U2, U4]);
        assert!(F8E8M0FNU.is_storage_only() && !F8E8M0FNU.is_sub_byte());
        assert!(!Bool.is_storage_only() && !F8E4M3FN.is_storage_only());
    }
}
