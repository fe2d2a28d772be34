//! Malformed models give clear errors naming the culprit, never panics.

use std::path::Path;

use bytes::Bytes;
use ipuc_frontends::onnx::proto::{attribute_proto::AttributeType, ModelProto};
use ipuc_frontends::onnx::{LoadOptions, Model, OnnxError};
use proptest::prelude::*;
use prost::Message;

fn tiny_bytes() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/models/siglip-tiny/model.onnx"),
    )
    .unwrap()
}

fn tiny_proto() -> ModelProto {
    ModelProto::decode(tiny_bytes().as_slice()).unwrap()
}

fn decode(proto: &ModelProto) -> Result<Model, OnnxError> {
    Model::decode(
        Bytes::from(proto.encode_to_vec()),
        "test model",
        None,
        &LoadOptions::default(),
    )
}

fn error_of(proto: &ModelProto) -> String {
    decode(proto).unwrap_err().to_string()
}

#[test]
fn truncated_file() {
    let bytes = tiny_bytes();
    let err = Model::decode(
        Bytes::copy_from_slice(&bytes[..bytes.len() / 2]),
        "half.onnx",
        None,
        &LoadOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("half.onnx is not a valid ONNX protobuf message"),
        "{err}"
    );
}

#[test]
fn dangling_input_names_the_node() {
    let mut proto = tiny_proto();
    let graph = proto.graph.as_mut().unwrap();
    let node = graph.node.iter_mut().find(|n| !n.input.is_empty()).unwrap();
    node.input[0] = "no_such_value".into();
    let name = node.name.clone().unwrap();
    let err = error_of(&proto);
    assert!(
        err.contains(&format!("node `{name}`")) && err.contains("input `no_such_value` is not"),
        "{err}"
    );
}

#[test]
fn cycle_is_reported() {
    let mut proto = tiny_proto();
    let graph = proto.graph.as_mut().unwrap();
    // Feed the first node's output back into it through a later consumer.
    let last_output = graph.node.last().unwrap().output[0].clone();
    let first_non_constant = graph.node.iter().position(|n| !n.input.is_empty()).unwrap();
    graph.node[first_non_constant].input[0] = last_output;
    let err = error_of(&proto);
    assert!(
        err.contains("the graph has a cycle through node `"),
        "{err}"
    );
}

#[test]
fn duplicate_output_names_the_node() {
    let mut proto = tiny_proto();
    let graph = proto.graph.as_mut().unwrap();
    let first = graph.node[0].output[0].clone();
    graph.node[1].output[0] = first.clone();
    let err = error_of(&proto);
    assert!(
        err.contains(&format!("output `{first}` is already defined")),
        "{err}"
    );
}

#[test]
fn wrong_initializer_byte_count_names_the_initializer() {
    let mut proto = tiny_proto();
    let init = &mut proto.graph.as_mut().unwrap().initializer[0];
    let raw = init.raw_data.clone().unwrap();
    init.raw_data = Some(raw.slice(..raw.len() - 1));
    let name = init.name.clone().unwrap();
    let err = error_of(&proto);
    assert!(
        err.contains(&format!("tensor `{name}`")) && err.contains("raw_data has"),
        "{err}"
    );
}

#[test]
fn mistyped_attribute_names_node_and_attribute() {
    let mut proto = tiny_proto();
    let graph = proto.graph.as_mut().unwrap();
    let node = graph
        .node
        .iter_mut()
        .find(|n| {
            n.attribute
                .iter()
                .any(|a| a.r#type == Some(AttributeType::Int as i32))
        })
        .unwrap();
    let attr = node
        .attribute
        .iter_mut()
        .find(|a| a.r#type == Some(AttributeType::Int as i32))
        .unwrap();
    attr.r#type = Some(AttributeType::Tensor as i32);
    let (node_name, attr_name) = (node.name.clone().unwrap(), attr.name.clone().unwrap());
    let err = error_of(&proto);
    assert_eq!(
        err,
        format!("node `{node_name}`: attribute `{attr_name}`: declared TENSOR but `t` is not set")
    );
}

#[test]
fn missing_graph_and_output() {
    let mut proto = tiny_proto();
    proto.graph.as_mut().unwrap().output[0].name = Some("ghost".into());
    assert!(error_of(&proto).contains("value `ghost`: graph output is not produced"));
    proto.graph = None;
    assert_eq!(error_of(&proto), "the model has no graph");
}

#[test]
fn unnamed_nodes_get_stable_unique_names() {
    let mut proto = tiny_proto();
    let graph = proto.graph.as_mut().unwrap();
    let op = graph.node[3].op_type.clone().unwrap();
    graph.node[3].name = None;
    // Collide with the name the loader would synthesise.
    graph.node[4].name = Some(format!("{op}_3"));
    let model = decode(&proto).unwrap();
    assert_eq!(model.graph.nodes[3].name, format!("{op}_3_1"));
    assert_eq!(model.graph.nodes[4].name, format!("{op}_3"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = Model::decode(Bytes::from(bytes), "fuzz", None, &LoadOptions::default());
    }

    #[test]
    fn mutated_model_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = tiny_bytes();
        for (index, value) in edits {
            let i = index.index(bytes.len());
            bytes[i] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        let _ = Model::decode(Bytes::from(bytes), "fuzz", Some(Path::new("/nonexistent")), &LoadOptions::default());
    }
}

/// The packed element types (INT4, UINT4, INT2, UINT2, FLOAT4E2M1): any dims and
/// any amount of `raw_data` or `int32_data` give a tensor or an error, and a
/// tensor always re-encodes to the bytes it came from (the padding bits of the
/// last byte aside).
mod packed_tensors {
    use super::*;
    use ipuc_frontends::onnx::proto::{tensor_proto::DataType, TensorProto};
    use ipuc_frontends::onnx::Tensor;

    const PACKED: [DataType; 5] = [
        DataType::Int4,
        DataType::Uint4,
        DataType::Int2,
        DataType::Uint2,
        DataType::Float4e2m1,
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn decode_never_panics_and_round_trips(
            k in 0usize..5,
            dims in proptest::collection::vec(0i64..6, 0..3),
            data in proptest::collection::vec(any::<u8>(), 0..24),
            typed in any::<bool>(),
        ) {
            let data_type = PACKED[k];
            let proto = TensorProto {
                name: Some("t".into()),
                dims: dims.clone(),
                data_type: Some(data_type as i32),
                raw_data: (!typed).then(|| Bytes::from(data.clone())),
                int32_data: if typed { data.iter().map(|&b| i32::from(b)).collect() } else { vec![] },
                ..Default::default()
            };
            let count: usize = dims.iter().map(|&d| d as usize).product();
            let per_byte = if matches!(data_type, DataType::Int2 | DataType::Uint2) { 4 } else { 2 };
            match Tensor::from_proto(&proto) {
                Ok(t) => {
                    prop_assert_eq!(data.len(), count.div_ceil(per_byte));
                    prop_assert_eq!(t.data.len(), count);
                    let back = t.to_proto("t").raw_data.unwrap();
                    let bits = 8 / per_byte;
                    for i in 0..count {
                        let shift = (i % per_byte) * bits;
                        let mask = ((1u16 << bits) - 1) as u8;
                        prop_assert_eq!(
                            (back[i / per_byte] >> shift) & mask,
                            (data[i / per_byte] >> shift) & mask
                        );
                    }
                }
                Err(e) => {
                    prop_assert_ne!(data.len(), count.div_ceil(per_byte));
                    prop_assert!(e.to_string().contains("elements per byte"), "{}", e);
                }
            }
        }
    }
}
