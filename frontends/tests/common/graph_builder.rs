//! A small builder of ONNX models for the importer tests: nodes with
//! attributes, typed inputs, initializers, and a graph imported in one call.

use bytes::Bytes;
use ipuc_frontends::onnx::import::ImportOptions;
use ipuc_frontends::onnx::import::{import_model, ImportError};
use ipuc_frontends::onnx::proto::{
    attribute_proto::AttributeType, tensor_shape_proto::dimension, tensor_shape_proto::Dimension,
    type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use ipuc_frontends::onnx::{LoadOptions, Model};
use ipuc_ir::{verify, Context, OpId};
use prost::Message;

/// A context with every ipuc dialect.
pub fn new_context() -> Context {
    Context::new(ipuc_dialects::registry())
}

pub const F32: i32 = 1;
pub const I64: i32 = 7;

pub enum A<'a> {
    I(i64),
    Is(&'a [i64]),
    F(f32),
    Fs(&'a [f32]),
    S(&'a str),
    T(Box<TensorProto>),
}

pub fn node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<(&str, A)>,
) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs
            .into_iter()
            .map(|(n, a)| {
                let mut p = AttributeProto {
                    name: Some(n.into()),
                    ..Default::default()
                };
                match a {
                    A::I(v) => {
                        p.r#type = Some(AttributeType::Int as i32);
                        p.i = Some(v);
                    }
                    A::Is(v) => {
                        p.r#type = Some(AttributeType::Ints as i32);
                        p.ints = v.to_vec();
                    }
                    A::F(v) => {
                        p.r#type = Some(AttributeType::Float as i32);
                        p.f = Some(v);
                    }
                    A::Fs(v) => {
                        p.r#type = Some(AttributeType::Floats as i32);
                        p.floats = v.to_vec();
                    }
                    A::S(v) => {
                        p.r#type = Some(AttributeType::String as i32);
                        p.s = Some(Bytes::from(v.as_bytes().to_vec()));
                    }
                    A::T(t) => {
                        p.r#type = Some(AttributeType::Tensor as i32);
                        p.t = Some(*t);
                    }
                }
                p
            })
            .collect(),
        ..Default::default()
    }
}

/// A tensor value info; dims `< 0` are symbolic, named `d{index}` (or `batch` at 0).
pub fn value(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| Dimension {
            value: Some(if d >= 0 {
                dimension::Value::DimValue(d)
            } else if i == 0 {
                dimension::Value::DimParam("batch".into())
            } else {
                dimension::Value::DimParam(format!("d{i}"))
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(elem),
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn ints(name: &str, dims: &[i64], values: &[i64]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(I64),
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

pub fn floats(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(F32),
        float_data: values.to_vec(),
        ..Default::default()
    }
}

pub struct G {
    pub opset: i64,
    pub nodes: Vec<NodeProto>,
    pub inputs: Vec<ValueInfoProto>,
    pub outputs: Vec<&'static str>,
    pub inits: Vec<TensorProto>,
}

impl G {
    pub fn new(opset: i64) -> G {
        G {
            opset,
            nodes: vec![],
            inputs: vec![],
            outputs: vec![],
            inits: vec![],
        }
    }
    pub fn model(&self) -> Model {
        let bytes = Bytes::from(self.proto().encode_to_vec());
        Model::decode(bytes, "test", None, &LoadOptions::default()).unwrap()
    }
    pub fn proto(&self) -> ModelProto {
        ModelProto {
            ir_version: Some(8),
            opset_import: vec![OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(self.opset),
            }],
            graph: Some(GraphProto {
                name: Some("g".into()),
                node: self.nodes.clone(),
                input: self.inputs.clone(),
                output: self
                    .outputs
                    .iter()
                    .map(|o| ValueInfoProto {
                        name: Some(o.to_string()),
                        ..Default::default()
                    })
                    .collect(),
                initializer: self.inits.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    pub fn import_with(&self, opts: &ImportOptions) -> Result<(Context, OpId), ImportError> {
        let mut ctx = new_context();
        let module = import_model(&mut ctx, &self.model(), opts)?;
        verify(&ctx, module).unwrap();
        Ok((ctx, module))
    }
    pub fn import(&self) -> (Context, OpId) {
        self.import_with(&Default::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }
    pub fn error(&self) -> String {
        match self.import_with(&Default::default()) {
            Ok(_) => panic!("import succeeded"),
            Err(e) => e.to_string(),
        }
    }
}
