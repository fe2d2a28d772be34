//! Builtin types, spelled as MLIR spells them.
//!
//! A [`Type`] is an immutable, reference-counted value with structural
//! equality: cloning is a pointer copy and two types are equal when they
//! print the same. Dialect types that `ir` does not know are kept as
//! [`TypeKind::Dialect`] with their parameter text, so they round-trip.

use std::fmt;
use std::sync::Arc;

use crate::attributes::Attribute;

/// The marker for a dynamic dimension (`?`) in a shape.
pub const DYNAMIC: i64 = i64::MIN;

/// Signedness semantics of an integer type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Signedness {
    /// `iN`: no sign semantics (printed as signed where a value is shown).
    Signless,
    /// `siN`.
    Signed,
    /// `uiN`.
    Unsigned,
}

/// Floating-point formats.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FloatKind {
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single.
    F32,
    /// IEEE double.
    F64,
    /// OCP FP8 E4M3 (finite only, NaN = 0x7f/0xff).
    F8E4M3FN,
    /// OCP FP8 E5M2 (IEEE-like).
    F8E5M2,
    /// FP8 E4M3 with exponent bias 8, no infinities, NaN = 0x80: the IPU's F143.
    F8E4M3FNUZ,
    /// FP8 E5M2 with bias 16, no infinities, NaN = 0x80.
    F8E5M2FNUZ,
    /// OCP MX scale: an unsigned 8-bit exponent (bias 127), NaN = 0xff (ONNX FLOAT8E8M0).
    F8E8M0FNU,
    /// OCP MXFP4: 4 bits, E2M1, finite only (ONNX FLOAT4E2M1).
    F4E2M1FN,
}

impl FloatKind {
    /// All float kinds, for keyword lookup.
    pub const ALL: [FloatKind; 10] = [
        FloatKind::F16,
        FloatKind::BF16,
        FloatKind::F32,
        FloatKind::F64,
        FloatKind::F8E4M3FN,
        FloatKind::F8E5M2,
        FloatKind::F8E4M3FNUZ,
        FloatKind::F8E5M2FNUZ,
        FloatKind::F8E8M0FNU,
        FloatKind::F4E2M1FN,
    ];

    /// The MLIR keyword of this format.
    pub fn keyword(self) -> &'static str {
        match self {
            FloatKind::F16 => "f16",
            FloatKind::BF16 => "bf16",
            FloatKind::F32 => "f32",
            FloatKind::F64 => "f64",
            FloatKind::F8E4M3FN => "f8E4M3FN",
            FloatKind::F8E5M2 => "f8E5M2",
            FloatKind::F8E4M3FNUZ => "f8E4M3FNUZ",
            FloatKind::F8E5M2FNUZ => "f8E5M2FNUZ",
            FloatKind::F8E8M0FNU => "f8E8M0FNU",
            FloatKind::F4E2M1FN => "f4E2M1FN",
        }
    }

    /// Parses an MLIR float keyword.
    pub fn from_keyword(s: &str) -> Option<FloatKind> {
        FloatKind::ALL.into_iter().find(|k| k.keyword() == s)
    }

    /// Bytes one element takes in memory and in dense attributes (`f4E2M1FN`
    /// takes a whole byte, as MLIR stores it).
    pub fn byte_size(self) -> usize {
        self.bit_width().div_ceil(8) as usize
    }

    /// Storage width in bits.
    pub fn bit_width(self) -> u32 {
        match self {
            FloatKind::F16 | FloatKind::BF16 => 16,
            FloatKind::F32 => 32,
            FloatKind::F64 => 64,
            FloatKind::F4E2M1FN => 4,
            _ => 8,
        }
    }
}

/// The structure of a type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `iN`, `siN`, `uiN`.
    Integer { width: u32, signedness: Signedness },
    /// `index`.
    Index,
    /// A floating-point type.
    Float(FloatKind),
    /// `none`.
    None,
    /// `(inputs) -> results`.
    Function {
        inputs: Vec<Type>,
        results: Vec<Type>,
    },
    /// `tensor<4x?xf32>` with an optional encoding attribute.
    RankedTensor {
        shape: Vec<i64>,
        element: Type,
        encoding: Option<Attribute>,
    },
    /// `tensor<*xf32>`.
    UnrankedTensor { element: Type },
    /// `vector<4x[8]xf32>`; `scalable[i]` marks `[n]` dimensions.
    Vector {
        shape: Vec<i64>,
        scalable: Vec<bool>,
        element: Type,
    },
    /// `memref<4x?xf32, layout, memspace>`.
    MemRef {
        shape: Vec<i64>,
        element: Type,
        layout: Option<Attribute>,
        memory_space: Option<Attribute>,
    },
    /// `memref<*xf32, memspace>`.
    UnrankedMemRef {
        element: Type,
        memory_space: Option<Attribute>,
    },
    /// `complex<f32>`.
    Complex(Type),
    /// `tuple<i32, f32>`.
    Tuple(Vec<Type>),
    /// A dialect type: `!dialect.mnemonic<params>` or `!dialect<"body">`.
    /// `body` is the exact text between the delimiters (empty if none).
    Dialect {
        dialect: Arc<str>,
        mnemonic: Option<Arc<str>>,
        body: Arc<str>,
    },
}

/// An immutable, shared type.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Type(Arc<TypeKind>);

impl Type {
    /// Wraps a type structure.
    pub fn new(kind: TypeKind) -> Type {
        Type(Arc::new(kind))
    }
    /// The structure of this type.
    #[inline]
    pub fn kind(&self) -> &TypeKind {
        &self.0
    }
    /// Signless integer type `iN`.
    pub fn int(width: u32) -> Type {
        let common = common();
        match width {
            1 => common.i1.clone(),
            8 => common.i8.clone(),
            16 => common.i16.clone(),
            32 => common.i32.clone(),
            64 => common.i64.clone(),
            _ => Type::new(TypeKind::Integer {
                width,
                signedness: Signedness::Signless,
            }),
        }
    }
    /// `i1`.
    pub fn i1() -> Type {
        Type::int(1)
    }
    /// `i32`.
    pub fn i32() -> Type {
        Type::int(32)
    }
    /// `i64`.
    pub fn i64() -> Type {
        Type::int(64)
    }
    /// `index`.
    pub fn index() -> Type {
        common().index.clone()
    }
    /// A float type.
    pub fn float(kind: FloatKind) -> Type {
        let common = common();
        match kind {
            FloatKind::F16 => common.f16.clone(),
            FloatKind::F32 => common.f32.clone(),
            _ => Type::new(TypeKind::Float(kind)),
        }
    }
    /// `f32`.
    pub fn f32() -> Type {
        Type::float(FloatKind::F32)
    }
    /// `f16`.
    pub fn f16() -> Type {
        Type::float(FloatKind::F16)
    }
    /// `none`.
    pub fn none() -> Type {
        Type::new(TypeKind::None)
    }
    /// A function type.
    pub fn function(inputs: Vec<Type>, results: Vec<Type>) -> Type {
        Type::new(TypeKind::Function { inputs, results })
    }
    /// A ranked tensor type without encoding.
    pub fn tensor(shape: &[i64], element: Type) -> Type {
        Type::new(TypeKind::RankedTensor {
            shape: shape.to_vec(),
            element,
            encoding: None,
        })
    }

    /// Whether two types are the same object (cheap pre-check before structural equality).
    pub fn ptr_eq(&self, other: &Type) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// Whether this is an integer type (any signedness).
    pub fn is_integer(&self) -> bool {
        matches!(self.kind(), TypeKind::Integer { .. })
    }
    /// Whether this is an integer of the given width.
    pub fn is_integer_of_width(&self, w: u32) -> bool {
        matches!(self.kind(), TypeKind::Integer { width, .. } if *width == w)
    }
    /// Whether this is `index`.
    pub fn is_index(&self) -> bool {
        matches!(self.kind(), TypeKind::Index)
    }
    /// Whether this is a float type.
    pub fn is_float(&self) -> bool {
        matches!(self.kind(), TypeKind::Float(_))
    }
    /// The float format, if this is a float type.
    pub fn float_kind(&self) -> Option<FloatKind> {
        match self.kind() {
            TypeKind::Float(k) => Some(*k),
            _ => None,
        }
    }
    /// Whether integers, index and floats: the element types of dense attributes.
    pub fn is_int_or_index_or_float(&self) -> bool {
        self.is_integer() || self.is_index() || self.is_float()
    }
    /// Whether this is a (ranked or unranked) tensor.
    pub fn is_tensor(&self) -> bool {
        matches!(
            self.kind(),
            TypeKind::RankedTensor { .. } | TypeKind::UnrankedTensor { .. }
        )
    }
    /// The shape of a ranked shaped type (tensor, vector, memref).
    pub fn shape(&self) -> Option<&[i64]> {
        match self.kind() {
            TypeKind::RankedTensor { shape, .. }
            | TypeKind::Vector { shape, .. }
            | TypeKind::MemRef { shape, .. } => Some(shape),
            _ => None,
        }
    }
    /// The element type of a shaped type.
    pub fn element_type(&self) -> Option<&Type> {
        match self.kind() {
            TypeKind::RankedTensor { element, .. }
            | TypeKind::UnrankedTensor { element }
            | TypeKind::Vector { element, .. }
            | TypeKind::MemRef { element, .. }
            | TypeKind::UnrankedMemRef { element, .. } => Some(element),
            _ => None,
        }
    }
    /// Whether a ranked shape with only static dimensions.
    pub fn has_static_shape(&self) -> bool {
        self.shape()
            .is_some_and(|s| s.iter().all(|&d| d != DYNAMIC))
    }
    /// The element count of a statically shaped type.
    pub fn num_elements(&self) -> Option<u64> {
        let shape = self.shape()?;
        let mut n: u64 = 1;
        for &d in shape {
            if d == DYNAMIC || d < 0 {
                return None;
            }
            n = n.checked_mul(d as u64)?;
        }
        Some(n)
    }
    /// Bit width of an integer or float type (`index` counts as 64).
    pub fn int_or_float_bit_width(&self) -> Option<u32> {
        match self.kind() {
            TypeKind::Integer { width, .. } => Some(*width),
            TypeKind::Index => Some(64),
            TypeKind::Float(k) => Some(k.bit_width()),
            _ => None,
        }
    }
    /// Inputs and results of a function type.
    pub fn function_signature(&self) -> Option<(&[Type], &[Type])> {
        match self.kind() {
            TypeKind::Function { inputs, results } => Some((inputs, results)),
            _ => None,
        }
    }
}

impl fmt::Debug for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::printer::write_type(&mut s, self, None);
        f.write_str(&s)
    }
}

/// The types every IR mentions constantly (an integer attribute's `i64`,
/// an index), made once and shared: building one is an allocation, and
/// emitted code holds millions of integer attributes.
struct Common {
    i1: Type,
    i8: Type,
    i16: Type,
    i32: Type,
    i64: Type,
    index: Type,
    f16: Type,
    f32: Type,
}

fn common() -> &'static Common {
    static COMMON: std::sync::OnceLock<Common> = std::sync::OnceLock::new();
    COMMON.get_or_init(|| {
        let int = |width| {
            Type::new(TypeKind::Integer {
                width,
                signedness: Signedness::Signless,
            })
        };
        Common {
            i1: int(1),
            i8: int(8),
            i16: int(16),
            i32: int(32),
            i64: int(64),
            index: Type::new(TypeKind::Index),
            f16: Type::new(TypeKind::Float(FloatKind::F16)),
            f32: Type::new(TypeKind::Float(FloatKind::F32)),
        }
    })
}
