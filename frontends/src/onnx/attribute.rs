//! Node attributes decoded into a typed enum.

use super::error::{OnnxError, Result};
use super::graph::Graph;
use super::proto::{attribute_proto::AttributeType, AttributeProto};
use super::tensor::Tensor;
use super::LoadContext;

/// A node attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attribute {
    /// `f`
    Float(f32),
    /// `i`
    Int(i64),
    /// `s` (ONNX strings are bytes; non-UTF-8 bytes are replaced by U+FFFD).
    String(String),
    /// `t`
    Tensor(Tensor),
    /// `g` (a subgraph, e.g. an `If` branch).
    Graph(Box<Graph>),
    /// `floats`
    Floats(Vec<f32>),
    /// `ints`
    Ints(Vec<i64>),
    /// `strings`
    Strings(Vec<String>),
    /// `tensors`
    Tensors(Vec<Tensor>),
    /// `graphs`
    Graphs(Vec<Graph>),
}

impl Attribute {
    /// The ONNX name of this attribute's type (`INT`, `FLOATS`, ...), for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Attribute::Float(_) => "FLOAT",
            Attribute::Int(_) => "INT",
            Attribute::String(_) => "STRING",
            Attribute::Tensor(_) => "TENSOR",
            Attribute::Graph(_) => "GRAPH",
            Attribute::Floats(_) => "FLOATS",
            Attribute::Ints(_) => "INTS",
            Attribute::Strings(_) => "STRINGS",
            Attribute::Tensors(_) => "TENSORS",
            Attribute::Graphs(_) => "GRAPHS",
        }
    }

    /// Decodes an attribute of node `node`. Old models leave `type` unset; then the
    /// type is inferred from the one field that is set.
    pub(crate) fn from_proto(
        proto: &AttributeProto,
        node: &str,
        ctx: &mut LoadContext,
    ) -> Result<Attribute> {
        let name = proto.name.as_deref().unwrap_or("");
        let err = |detail: String| OnnxError::Attribute {
            node: node.to_string(),
            attribute: name.to_string(),
            detail,
        };
        let declared = proto.r#type.unwrap_or(0);
        let ty = match AttributeType::try_from(declared) {
            Ok(AttributeType::Undefined) => {
                infer_type(proto).ok_or_else(|| err("has no type and no value".to_string()))?
            }
            Ok(ty) => ty,
            Err(_) => return Err(err(format!("unknown attribute type {declared}"))),
        };
        let missing = |field: &str| {
            err(format!(
                "declared {} but `{field}` is not set",
                ty.as_str_name()
            ))
        };
        let string = |b: &bytes::Bytes| String::from_utf8_lossy(b).into_owned();
        let tensor = |t: &super::proto::TensorProto, ctx: &mut LoadContext| {
            ctx.tensor(t).map_err(|e| err(format!("tensor value: {e}")))
        };
        Ok(match ty {
            AttributeType::Float => Attribute::Float(proto.f.ok_or_else(|| missing("f"))?),
            AttributeType::Int => Attribute::Int(proto.i.ok_or_else(|| missing("i"))?),
            AttributeType::String => {
                Attribute::String(string(proto.s.as_ref().ok_or_else(|| missing("s"))?))
            }
            AttributeType::Tensor => {
                Attribute::Tensor(tensor(proto.t.as_ref().ok_or_else(|| missing("t"))?, ctx)?)
            }
            AttributeType::Graph => {
                let g = proto.g.as_ref().ok_or_else(|| missing("g"))?;
                Attribute::Graph(Box::new(Graph::from_proto(g, ctx)?))
            }
            AttributeType::Floats => Attribute::Floats(proto.floats.clone()),
            AttributeType::Ints => Attribute::Ints(proto.ints.clone()),
            AttributeType::Strings => {
                Attribute::Strings(proto.strings.iter().map(string).collect())
            }
            AttributeType::Tensors => Attribute::Tensors(
                proto
                    .tensors
                    .iter()
                    .map(|t| tensor(t, ctx))
                    .collect::<Result<_>>()?,
            ),
            AttributeType::Graphs => Attribute::Graphs(
                proto
                    .graphs
                    .iter()
                    .map(|g| Graph::from_proto(g, ctx))
                    .collect::<Result<_>>()?,
            ),
            other => {
                return Err(err(format!(
                    "{} attributes are not supported",
                    other.as_str_name()
                )))
            }
        })
    }
}

fn infer_type(proto: &AttributeProto) -> Option<AttributeType> {
    Some(if proto.f.is_some() {
        AttributeType::Float
    } else if proto.i.is_some() {
        AttributeType::Int
    } else if proto.s.is_some() {
        AttributeType::String
    } else if proto.t.is_some() {
        AttributeType::Tensor
    } else if proto.g.is_some() {
        AttributeType::Graph
    } else if !proto.floats.is_empty() {
        AttributeType::Floats
    } else if !proto.ints.is_empty() {
        AttributeType::Ints
    } else if !proto.strings.is_empty() {
        AttributeType::Strings
    } else if !proto.tensors.is_empty() {
        AttributeType::Tensors
    } else if !proto.graphs.is_empty() {
        AttributeType::Graphs
    } else {
        return None;
    })
}
