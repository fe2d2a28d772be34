//! Constants: initializers and `Constant` nodes as `nn.constant`, and the
//! ops the importer computes itself because their results depend only on
//! static shapes or constants (`Shape`, `Size`, `ConstantOfShape`, `Range`).

use std::sync::Arc;

use ipuc_dialects::nn::elements::{floats, from_floats, from_ints, ints};
use ipuc_ir::attributes::{AttrKind, DenseElements, ResourceBlob};
use ipuc_ir::numeric::ElementKind;
use ipuc_ir::types::Signedness;
use ipuc_ir::{Attribute, Context, FloatKind, Location, Type, TypeKind};

use super::{error, Importer, NodeResult};
use crate::onnx::{element_kind_of, Attribute as OnnxAttribute, Node, Tensor};

/// Constants of at most this many elements (shapes, scalars, small tables)
/// are printed inline as `dense<...>`; larger ones become resource blobs.
pub const SMALL_CONSTANT_ELEMENTS: usize = 64;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Constant", "ConstantOfShape", "Shape", "Size", "Range"];

/// The IR element type of an ONNX element kind.
pub(crate) fn element_type(kind: ElementKind) -> Type {
    let int = |width, signedness| Type::new(TypeKind::Integer { width, signedness });
    match kind {
        ElementKind::Bool => Type::i1(),
        ElementKind::I8 => Type::int(8),
        ElementKind::I16 => Type::int(16),
        ElementKind::I32 => Type::int(32),
        ElementKind::I64 => Type::int(64),
        ElementKind::U8 => int(8, Signedness::Unsigned),
        ElementKind::U16 => int(16, Signedness::Unsigned),
        ElementKind::U32 => int(32, Signedness::Unsigned),
        ElementKind::U64 => int(64, Signedness::Unsigned),
        ElementKind::F16 => Type::float(FloatKind::F16),
        ElementKind::BF16 => Type::float(FloatKind::BF16),
        ElementKind::F32 => Type::f32(),
        ElementKind::F64 => Type::float(FloatKind::F64),
        ElementKind::F8E4M3FN => Type::float(FloatKind::F8E4M3FN),
        ElementKind::F8E5M2 => Type::float(FloatKind::F8E5M2),
        ElementKind::F8E4M3FNUZ => Type::float(FloatKind::F8E4M3FNUZ),
        ElementKind::F8E5M2FNUZ => Type::float(FloatKind::F8E5M2FNUZ),
        ElementKind::F8E8M0FNU => Type::float(FloatKind::F8E8M0FNU),
        ElementKind::F4E2M1FN => Type::float(FloatKind::F4E2M1FN),
        ElementKind::I2 => Type::int(2),
        ElementKind::I4 => Type::int(4),
        ElementKind::U2 => int(2, Signedness::Unsigned),
        ElementKind::U4 => int(4, Signedness::Unsigned),
    }
}

fn tensor_type(kind: ElementKind, dims: &[usize]) -> Type {
    let shape: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    Type::tensor(&shape, element_type(kind))
}

/// `dense<...>` holding a copy of `t`'s bytes (for small tensors).
pub(crate) fn tensor_attribute(t: &Tensor) -> Result<Attribute, String> {
    let d = DenseElements::new(tensor_type(t.kind, &t.dims), Arc::from(&t.data[..]), false)
        .map_err(|e| e.to_string())?;
    Ok(Attribute::new(AttrKind::DenseElements(d)))
}

/// A resource key from a value name: MLIR keys are bare identifiers, so
/// everything but letters, digits, `_` and `.` becomes `_`.
fn resource_key(name: &str) -> String {
    let mut key: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        key.insert(0, '_');
    }
    key
}

/// `dense_resource<key>` over `bytes` (shared, not copied), registered in the
/// context's resource table under a unique key derived from `name`.
pub(crate) fn resource_attribute(
    ctx: &Context,
    name: &str,
    kind: ElementKind,
    dims: &[usize],
    bytes: Arc<[u8]>,
) -> Result<Attribute, String> {
    let ty = tensor_type(kind, dims);
    let expected = kind.byte_size() * dims.iter().product::<usize>();
    if bytes.len() != expected {
        return Err(format!(
            "{} bytes of data for {ty} (expected {expected})",
            bytes.len()
        ));
    }
    let blob = ResourceBlob {
        alignment: kind.byte_size().next_power_of_two() as u32,
        data: bytes,
    };
    let resource = ctx.resources().insert_unique(&resource_key(name), blob);
    Ok(Attribute::new(AttrKind::DenseResource { resource, ty }))
}

/// Moves a folded `dense<...>` of more than [`SMALL_CONSTANT_ELEMENTS`]
/// distinct elements into a resource blob named after `loc` (sharing its bytes),
/// so that the IR never prints large constants inline.
pub(crate) fn large_dense_to_resource(ctx: &Context, attr: Attribute, loc: &Location) -> Attribute {
    let AttrKind::DenseElements(d) = attr.kind() else {
        return attr;
    };
    if d.splat || d.len() <= SMALL_CONSTANT_ELEMENTS {
        return attr;
    }
    let element = d.element_type();
    let size = DenseElements::element_size(element).unwrap_or(1);
    let blob = ResourceBlob {
        alignment: size.next_power_of_two() as u32,
        data: d.data.clone(),
    };
    let resource = ctx
        .resources()
        .insert_unique(&resource_key(loc.name_of().unwrap_or("folded")), blob);
    Attribute::new(AttrKind::DenseResource {
        resource,
        ty: d.ty.clone(),
    })
}

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let loc = Importer::loc(node);
    let attr = match node.op_type.as_str() {
        "Constant" => constant_node(node)?,
        "Shape" => {
            let x = imp.input(node, 0)?;
            let shape = imp.shape(x);
            let rank = shape.len() as i64;
            // Opset 15 added `start`/`end`, clamped to [0, rank].
            let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
            let start = clamp(node.int_attr("start", 0)?);
            let end = clamp(node.int_attr("end", rank)?);
            let dims: Vec<i128> = shape[start..end.max(start)]
                .iter()
                .map(|&d| d as i128)
                .collect();
            from_ints(&Type::tensor(&[dims.len() as i64], Type::i64()), &dims)
                .expect("i64 elements")
        }
        "Size" => {
            let x = imp.input(node, 0)?;
            let n: i64 = imp.shape(x).iter().product();
            from_ints(&Type::tensor(&[], Type::i64()), &[i128::from(n)]).expect("an i64 scalar")
        }
        "ConstantOfShape" => {
            let shape = imp.const_ints(node, 0, "shape")?;
            if let Some(d) = shape.iter().find(|&&d| d < 0) {
                return Err(error(node, format!("shape has negative dimension {d}")));
            }
            let (bytes, kind) = match node.tensor_attr("value")? {
                Some(t) if t.element_count() == 1 => (t.data.to_vec(), t.kind),
                Some(t) => {
                    return Err(error(
                        node,
                        format!(
                            "`value` must hold one element, but has {}",
                            t.element_count()
                        ),
                    ))
                }
                None => (0f32.to_le_bytes().to_vec(), ElementKind::F32),
            };
            let ty = Type::tensor(&shape, element_type(kind));
            let n: i64 = shape.iter().product();
            let d = DenseElements::new(ty, bytes.into(), n != 1).map_err(|m| error(node, m))?;
            Attribute::new(AttrKind::DenseElements(d))
        }
        "Range" => range(imp, node)?,
        other => unreachable!("`{other}` is not a constant op"),
    };
    Ok(vec![imp
        .constant(attr, loc)
        .map_err(|d| error(node, d.message))?])
}

/// The value of a `Constant` node (exactly one of its value attributes).
fn constant_node(node: &Node) -> Result<Attribute, super::ImportError> {
    let [(name, value)] = node.attributes.as_slice() else {
        return Err(error(
            node,
            format!(
                "needs exactly one value attribute, but has {}",
                node.attributes.len()
            ),
        ));
    };
    let scalar_or_list = |elem: Type, len: Option<usize>| {
        Type::tensor(len.map(|n| vec![n as i64]).as_deref().unwrap_or(&[]), elem)
    };
    let attr = match (name.as_str(), value) {
        ("value", OnnxAttribute::Tensor(t)) => tensor_attribute(t),
        ("value_float", OnnxAttribute::Float(v)) => {
            from_floats(&scalar_or_list(Type::f32(), None), &[*v as f64]).ok_or_default()
        }
        ("value_floats", OnnxAttribute::Floats(v)) => {
            let values: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            from_floats(&scalar_or_list(Type::f32(), Some(v.len())), &values).ok_or_default()
        }
        ("value_int", OnnxAttribute::Int(v)) => {
            from_ints(&scalar_or_list(Type::i64(), None), &[*v as i128]).ok_or_default()
        }
        ("value_ints", OnnxAttribute::Ints(v)) => {
            let values: Vec<i128> = v.iter().map(|&x| x as i128).collect();
            from_ints(&scalar_or_list(Type::i64(), Some(v.len())), &values).ok_or_default()
        }
        (other, value) => Err(format!(
            "value attribute `{other}` of type {} is not supported (ipuc supports value, \
             value_float(s) and value_int(s))",
            value.type_name()
        )),
    };
    attr.map_err(|m| error(node, m))
}

trait OkOrDefault {
    fn ok_or_default(self) -> Result<Attribute, String>;
}
impl OkOrDefault for Option<Attribute> {
    fn ok_or_default(self) -> Result<Attribute, String> {
        self.ok_or_else(|| "cannot build the constant".to_string())
    }
}

/// The most elements a `Range` may produce at import: its values become a
/// constant, so a runaway limit must be an error, not an allocation failure.
const MAX_RANGE_ELEMENTS: u128 = 1 << 26;

/// `Range(start, limit, delta)` on constant scalars of one element type.
fn range(imp: &mut Importer<'_>, node: &Node) -> Result<Attribute, super::ImportError> {
    let mut scalars = Vec::with_capacity(3);
    for (i, what) in ["start", "limit", "delta"].into_iter().enumerate() {
        let v = imp.input(node, i)?;
        scalars.push(imp.constant_scalar(node, v, format!("`{what}` (input #{i})"))?);
    }
    let element = scalars[0].element_type().clone();
    if let Some((i, other)) = scalars
        .iter()
        .enumerate()
        .find(|(_, d)| d.element_type() != &element)
    {
        return Err(error(
            node,
            format!(
                "`start` is {element} but input #{i} is {}; Range needs one element type                  for start, limit and delta (insert a Cast)",
                other.element_type()
            ),
        ));
    }
    let count = |n: u128| -> Result<usize, super::ImportError> {
        if n > MAX_RANGE_ELEMENTS {
            return Err(error(
                node,
                format!(
                    "would produce {n} elements (more than {MAX_RANGE_ELEMENTS}); check                      `start`, `limit` and `delta`"
                ),
            ));
        }
        Ok(n as usize)
    };
    let out = |n: usize| Type::tensor(&[n as i64], element.clone());
    let attr = if element.is_float() {
        let v: Vec<f64> = scalars
            .iter()
            .map(|d| floats(d).expect("one float type")[0])
            .collect();
        let (start, limit, delta) = (v[0], v[1], v[2]);
        if delta == 0.0 || !(start.is_finite() && limit.is_finite() && delta.is_finite()) {
            return Err(error(
                node,
                format!("needs finite values and a nonzero delta, but has start {start}, limit {limit}, delta {delta}"),
            ));
        }
        let n = count(
            ((limit - start) / delta)
                .ceil()
                .max(0.0)
                .min(u128::MAX as f64) as u128,
        )?;
        let values: Vec<f64> = (0..n).map(|i| start + i as f64 * delta).collect();
        from_floats(&out(n), &values)
    } else {
        let v: Vec<i128> = scalars
            .iter()
            .map(|d| ints(d).expect("one integer type")[0])
            .collect();
        let (start, limit, delta) = (v[0], v[1], v[2]);
        if delta == 0 {
            return Err(error(node, "delta is zero"));
        }
        let span = limit - start;
        let n = if (span > 0) == (delta > 0) && span != 0 {
            count(span.unsigned_abs().div_ceil(delta.unsigned_abs()))?
        } else {
            0
        };
        let values: Vec<i128> = (0..n as i128).map(|i| start + i * delta).collect();
        from_ints(&out(n), &values)
    };
    attr.ok_or_else(|| error(node, "cannot build the range"))
}

/// The ONNX `to` attribute of `Cast` (and friends) as an IR element type.
pub(crate) fn onnx_type_attr(node: &Node, name: &str) -> Result<Type, super::ImportError> {
    let code = node.int_attr(name, 0)?;
    element_kind_of(code as i32)
        .map(element_type)
        .ok_or_else(|| {
            error(
                node,
                format!(
                    "`{name}` = {code} ({}) is not an element type ipuc supports",
                    crate::onnx::data_type_name(code as i32)
                ),
            )
        })
}
