//! The decoded graph: values, nodes and initializers.

use std::collections::HashSet;

use ipuc_ir::numeric::ElementKind;

use super::attribute::Attribute;
use super::data_type::{data_type_name, element_kind_of};
use super::error::{OnnxError, Result};
use super::external_data::ExternalData;
use super::proto::{
    tensor_shape_proto::dimension, type_proto, GraphProto, NodeProto, ValueInfoProto,
};
use super::tensor::Tensor;
use super::weights::{infer_roles, WeightRole};
use super::LoadContext;

/// One dimension of a declared shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A known size.
    Fixed(usize),
    /// A named symbolic size (`batch`), kept as written.
    Symbolic(String),
    /// A dimension with neither a value nor a name.
    Unknown,
}

/// The declared type of a graph input, output or intermediate value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueType {
    /// A tensor with an element kind and, if declared, a shape.
    Tensor {
        /// Element type.
        kind: ElementKind,
        /// The shape, `None` when the rank is unknown.
        shape: Option<Vec<Dim>>,
    },
    /// A type ipuc does not handle (sequence, map, optional, string tensor, ...),
    /// described in ONNX terms for error messages.
    Unsupported(String),
    /// No type given.
    Unspecified,
}

/// A named, typed value (graph input, output or `value_info` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueInfo {
    /// The value's name.
    pub name: String,
    /// Its declared type.
    pub ty: ValueType,
}

/// Where an initializer's bytes came from.
#[derive(Clone, Debug, PartialEq)]
pub enum WeightSource {
    /// Inside the model file (`raw_data` or typed fields).
    Inline,
    /// Read from an external data file.
    External(ExternalData),
    /// The external file was missing and the data was synthesised (zeros or random)
    /// as asked by the load options; the reference is kept so the weights can be
    /// saved in the layout the model expects.
    Synthesized(ExternalData),
}

/// A constant tensor of the graph (a weight).
#[derive(Clone, Debug, PartialEq)]
pub struct Initializer {
    /// The value name nodes refer to.
    pub name: String,
    /// The data.
    pub tensor: Tensor,
    /// Where the data came from.
    pub source: WeightSource,
    /// The role the graph gives it (used to synthesise realistic random weights).
    pub role: WeightRole,
}

/// An operator application.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's name: the model's, or `<op_type>_<index>` synthesised for unnamed
    /// nodes (index = position in the graph's node list), made unique.
    pub name: String,
    /// Operator name (`MatMul`).
    pub op_type: String,
    /// Operator domain (`""` is the default ONNX domain `ai.onnx`).
    pub domain: String,
    /// Input value names; `""` marks an omitted optional input.
    pub inputs: Vec<String>,
    /// Output value names; `""` marks an omitted optional output.
    pub outputs: Vec<String>,
    /// Attributes in file order.
    pub attributes: Vec<(String, Attribute)>,
}

/// A graph: inputs, outputs, nodes in file order, initializers.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Graph {
    /// Graph name.
    pub name: String,
    /// Graph inputs (may include initializer names in old IR versions).
    pub inputs: Vec<ValueInfo>,
    /// Graph outputs.
    pub outputs: Vec<ValueInfo>,
    /// Declared types of intermediate values.
    pub value_info: Vec<ValueInfo>,
    /// Nodes, in file order (ONNX requires topological order; see
    /// [`Graph::topological_order`]).
    pub nodes: Vec<Node>,
    /// Constant tensors.
    pub initializers: Vec<Initializer>,
}

impl Node {
    /// The attribute named `name`, if present.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, a)| a)
    }

    fn wrong_type(&self, name: &str, expected: &str, got: &Attribute) -> OnnxError {
        OnnxError::Attribute {
            node: self.name.clone(),
            attribute: name.to_string(),
            detail: format!("expected {expected}, found {}", got.type_name()),
        }
    }

    /// An `INT` attribute, or `default` when absent; a clear error if mistyped.
    pub fn int_attr(&self, name: &str, default: i64) -> Result<i64> {
        match self.attribute(name) {
            None => Ok(default),
            Some(Attribute::Int(v)) => Ok(*v),
            Some(other) => Err(self.wrong_type(name, "INT", other)),
        }
    }

    /// A `FLOAT` attribute, or `default` when absent.
    pub fn float_attr(&self, name: &str, default: f32) -> Result<f32> {
        match self.attribute(name) {
            None => Ok(default),
            Some(Attribute::Float(v)) => Ok(*v),
            Some(other) => Err(self.wrong_type(name, "FLOAT", other)),
        }
    }

    /// A `STRING` attribute, or `default` when absent.
    pub fn string_attr<'a>(&'a self, name: &str, default: &'a str) -> Result<&'a str> {
        match self.attribute(name) {
            None => Ok(default),
            Some(Attribute::String(v)) => Ok(v),
            Some(other) => Err(self.wrong_type(name, "STRING", other)),
        }
    }

    /// An `INTS` attribute, `None` when absent.
    pub fn ints_attr(&self, name: &str) -> Result<Option<&[i64]>> {
        match self.attribute(name) {
            None => Ok(None),
            Some(Attribute::Ints(v)) => Ok(Some(v)),
            Some(other) => Err(self.wrong_type(name, "INTS", other)),
        }
    }

    /// A `FLOATS` attribute, `None` when absent.
    pub fn floats_attr(&self, name: &str) -> Result<Option<&[f32]>> {
        match self.attribute(name) {
            None => Ok(None),
            Some(Attribute::Floats(v)) => Ok(Some(v)),
            Some(other) => Err(self.wrong_type(name, "FLOATS", other)),
        }
    }

    /// A `TENSOR` attribute, `None` when absent.
    pub fn tensor_attr(&self, name: &str) -> Result<Option<&Tensor>> {
        match self.attribute(name) {
            None => Ok(None),
            Some(Attribute::Tensor(v)) => Ok(Some(v)),
            Some(other) => Err(self.wrong_type(name, "TENSOR", other)),
        }
    }

    /// Input `index` if present and not omitted (`""`).
    pub fn input(&self, index: usize) -> Option<&str> {
        self.inputs
            .get(index)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// Subgraphs held in attributes (e.g. `If` branches, `Loop` bodies).
    pub fn subgraphs(&self) -> impl Iterator<Item = &Graph> {
        self.attributes.iter().flat_map(|(_, a)| match a {
            Attribute::Graph(g) => std::slice::from_ref(g.as_ref()).iter(),
            Attribute::Graphs(gs) => gs.iter(),
            _ => [].iter(),
        })
    }

    /// A clear error about this node.
    pub fn error(&self, detail: impl Into<String>) -> OnnxError {
        OnnxError::Node {
            node: self.name.clone(),
            op_type: self.op_type.clone(),
            detail: detail.into(),
        }
    }
}

impl Graph {
    /// The first node (in file order) of `op_type`.
    pub fn first_node(&self, op_type: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.op_type == op_type)
    }

    /// The initializer named `name`.
    pub fn initializer(&self, name: &str) -> Option<&Initializer> {
        self.initializers.iter().find(|i| i.name == name)
    }

    /// Graph inputs that are not initializers (the values a caller must feed).
    pub fn runtime_inputs(&self) -> impl Iterator<Item = &ValueInfo> {
        let constants: HashSet<&str> = self.initializers.iter().map(|i| i.name.as_str()).collect();
        self.inputs
            .iter()
            .filter(move |v| !constants.contains(v.name.as_str()))
    }

    pub(crate) fn from_proto(proto: &GraphProto, ctx: &mut LoadContext) -> Result<Graph> {
        let values =
            |list: &[ValueInfoProto]| list.iter().map(value_info).collect::<Result<Vec<_>>>();
        let inputs = values(&proto.input)?;
        let outputs = values(&proto.output)?;
        let value_info = values(&proto.value_info)?;

        let taken: HashSet<&str> = proto
            .node
            .iter()
            .filter_map(|n| n.name.as_deref())
            .collect();
        let mut synthesized = HashSet::new();
        let mut nodes = Vec::with_capacity(proto.node.len());
        for (index, node) in proto.node.iter().enumerate() {
            let name = match node.name.as_deref() {
                Some(name) if !name.is_empty() => name.to_string(),
                _ => unique_name(node, index, &taken, &mut synthesized),
            };
            nodes.push(decode_node(node, name, ctx)?);
        }

        let roles = infer_roles(&nodes);
        let initializers = proto
            .initializer
            .iter()
            .map(|t| {
                let name = t.name.clone().unwrap_or_default();
                let role = roles.get(name.as_str()).copied().unwrap_or_default();
                let (tensor, source) = ctx.initializer(t, role)?;
                Ok(Initializer {
                    name,
                    tensor,
                    source,
                    role,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if !proto.sparse_initializer.is_empty() {
            return Err(OnnxError::Value {
                value: proto.sparse_initializer[0]
                    .values
                    .as_ref()
                    .and_then(|v| v.name.clone())
                    .unwrap_or_default(),
                detail: "sparse initializers are not supported".to_string(),
            });
        }
        Ok(Graph {
            name: proto.name.clone().unwrap_or_default(),
            inputs,
            outputs,
            value_info,
            nodes,
            initializers,
        })
    }
}

fn unique_name(
    node: &NodeProto,
    index: usize,
    taken: &HashSet<&str>,
    synthesized: &mut HashSet<String>,
) -> String {
    let op = node
        .op_type
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or("node");
    let base = format!("{op}_{index}");
    let mut name = base.clone();
    let mut k = 1;
    while taken.contains(name.as_str()) || synthesized.contains(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    synthesized.insert(name.clone());
    name
}

fn decode_node(proto: &NodeProto, name: String, ctx: &mut LoadContext) -> Result<Node> {
    let op_type = proto.op_type.clone().unwrap_or_default();
    if op_type.is_empty() {
        return Err(OnnxError::Node {
            node: name,
            op_type,
            detail: "has no op_type".to_string(),
        });
    }
    let mut attributes = Vec::with_capacity(proto.attribute.len());
    for a in &proto.attribute {
        let attr_name = a.name.clone().unwrap_or_default();
        if attributes.iter().any(|(n, _)| *n == attr_name) {
            return Err(OnnxError::Attribute {
                node: name,
                attribute: attr_name,
                detail: "appears twice".to_string(),
            });
        }
        let value = Attribute::from_proto(a, &name, ctx)?;
        attributes.push((attr_name, value));
    }
    Ok(Node {
        name,
        op_type,
        domain: proto.domain.clone().unwrap_or_default(),
        inputs: proto.input.clone(),
        outputs: proto.output.clone(),
        attributes,
    })
}

fn value_info(proto: &ValueInfoProto) -> Result<ValueInfo> {
    let name = proto.name.clone().unwrap_or_default();
    let ty = match proto.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        None => ValueType::Unspecified,
        Some(type_proto::Value::TensorType(t)) => {
            let data_type = t.elem_type.unwrap_or(0);
            match element_kind_of(data_type) {
                None => ValueType::Unsupported(format!(
                    "tensor({})",
                    data_type_name(data_type).to_lowercase()
                )),
                Some(kind) => {
                    let shape = t.shape.as_ref().map(|s| {
                        s.dim
                            .iter()
                            .map(|d| match &d.value {
                                Some(dimension::Value::DimValue(v)) if *v >= 0 => {
                                    Ok(Dim::Fixed(*v as usize))
                                }
                                Some(dimension::Value::DimValue(v)) => Err(OnnxError::Value {
                                    value: name.clone(),
                                    detail: format!("negative dimension {v}"),
                                }),
                                Some(dimension::Value::DimParam(p)) if !p.is_empty() => {
                                    Ok(Dim::Symbolic(p.clone()))
                                }
                                _ => Ok(Dim::Unknown),
                            })
                            .collect::<Result<Vec<_>>>()
                    });
                    ValueType::Tensor {
                        kind,
                        shape: shape.transpose()?,
                    }
                }
            }
        }
        Some(type_proto::Value::SequenceType(_)) => ValueType::Unsupported("sequence".into()),
        Some(type_proto::Value::MapType(_)) => ValueType::Unsupported("map".into()),
        Some(type_proto::Value::OptionalType(_)) => ValueType::Unsupported("optional".into()),
        Some(type_proto::Value::SparseTensorType(_)) => {
            ValueType::Unsupported("sparse_tensor".into())
        }
        Some(type_proto::Value::OpaqueType(_)) => ValueType::Unsupported("opaque".into()),
    };
    Ok(ValueInfo { name, ty })
}
