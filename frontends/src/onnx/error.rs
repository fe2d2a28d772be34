//! Errors of the ONNX frontend.

use std::path::PathBuf;

/// Everything that can go wrong while reading, checking or writing ONNX files.
///
/// Messages name the offending file, node, initializer or value so a user can find
/// it in the model (for example with Netron) without a debugger.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid protobuf message of the expected type.
    #[error("{what} is not a valid ONNX protobuf message: {source}")]
    Decode {
        /// What was being decoded (a file path or a description).
        what: String,
        /// The protobuf error.
        #[source]
        source: prost::DecodeError,
    },
    /// The model declares no graph.
    #[error("the model has no graph")]
    MissingGraph,
    /// A tensor's element type is not one ipuc can hold.
    #[error("tensor `{tensor}`: unsupported element type {data_type} ({type_name})")]
    UnsupportedDataType {
        /// Tensor (initializer, value or attribute) name.
        tensor: String,
        /// The ONNX `TensorProto.DataType` code.
        data_type: i32,
        /// Its ONNX name, or `unknown`.
        type_name: &'static str,
    },
    /// A tensor's dimensions are negative or overflow.
    #[error("tensor `{tensor}`: invalid dims {dims:?}")]
    InvalidDims {
        /// Tensor name.
        tensor: String,
        /// The dims as stored.
        dims: Vec<i64>,
    },
    /// A tensor's data has the wrong number of bytes or elements for its dims.
    #[error("tensor `{tensor}`: {detail}")]
    TensorData {
        /// Tensor name.
        tensor: String,
        /// What is inconsistent.
        detail: String,
    },
    /// An initializer's external data file does not exist.
    #[error(
        "initializer `{initializer}`: external data file `{}` not found; the model's weights \
         live outside the .onnx file. Put the file beside the model, or load with \
         `--weights=zeros` or `--weights=random` to synthesise them",
        file.display()
    )]
    MissingExternalData {
        /// The initializer.
        initializer: String,
        /// The file the model points to (resolved against the model directory).
        file: PathBuf,
    },
    /// External data was referenced but the model was decoded from memory without a
    /// directory to resolve it against.
    #[error("initializer `{initializer}`: external data `{location}` cannot be resolved without the model's directory")]
    NoModelDirectory {
        /// The initializer.
        initializer: String,
        /// The location key.
        location: String,
    },
    /// An external data reference is malformed (bad offset/length, path escaping the
    /// model directory, range beyond the file).
    #[error("initializer `{initializer}`: invalid external data reference: {detail}")]
    InvalidExternalData {
        /// The initializer.
        initializer: String,
        /// What is wrong.
        detail: String,
    },
    /// A node attribute is malformed.
    #[error("node `{node}`: attribute `{attribute}`: {detail}")]
    Attribute {
        /// The node name.
        node: String,
        /// The attribute name.
        attribute: String,
        /// What is wrong.
        detail: String,
    },
    /// A node is malformed or its connections are inconsistent (dangling input,
    /// duplicate output, ...).
    #[error("node `{node}` ({op_type}): {detail}")]
    Node {
        /// The node name.
        node: String,
        /// The node's op type.
        op_type: String,
        /// What is wrong.
        detail: String,
    },
    /// The graph has a cycle.
    #[error("the graph has a cycle through node `{node}` (and {others} other node(s) that cannot be ordered)")]
    Cycle {
        /// One node on (or downstream of) the cycle.
        node: String,
        /// How many other nodes could not be ordered.
        others: usize,
    },
    /// The graph uses operators the consumer does not support: every such op type,
    /// with its count and first node, in one error.
    #[error("{}", unsupported_ops_message(.0))]
    UnsupportedOps(Vec<super::OpCount>),
    /// A graph input/output or value_info is malformed.
    #[error("value `{value}`: {detail}")]
    Value {
        /// The value name.
        value: String,
        /// What is wrong.
        detail: String,
    },
}

fn unsupported_ops_message(ops: &[super::OpCount]) -> String {
    let total: usize = ops.iter().map(|o| o.count).sum();
    let mut message = format!(
        "{} unsupported operator type(s) ({total} node(s)):",
        ops.len()
    );
    for op in ops {
        let domain = if op.domain.is_empty() {
            String::new()
        } else {
            format!("{}.", op.domain)
        };
        message.push_str(&format!(
            "\n  {domain}{} x{} (first: node `{}`)",
            op.op_type, op.count, op.first_node
        ));
    }
    message
}

/// Result alias of the ONNX frontend.
pub type Result<T, E = OnnxError> = std::result::Result<T, E>;

impl OnnxError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        OnnxError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn tensor_data(tensor: &str, detail: impl Into<String>) -> Self {
        OnnxError::TensorData {
            tensor: tensor.to_string(),
            detail: detail.into(),
        }
    }
}
