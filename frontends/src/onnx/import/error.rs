//! Errors of the ONNX → `nn` importer.

use ipuc_ir::{Diagnostic, Location};

use crate::onnx::OnnxError;

/// Why a model could not be imported.
///
/// Every message names what to look at in the model (the node and its op type,
/// or the graph input) and, where there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Reading or checking the model failed, or it uses unsupported operators
    /// (one error listing every unsupported op type with its count and first node).
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    /// A graph input cannot be given a static type.
    #[error("graph input `{input}`: {detail}")]
    Input {
        /// The input's name.
        input: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// A node cannot be imported.
    #[error("node `{node}` ({op_type}): {detail}")]
    Node {
        /// The node's name (its location in the IR).
        node: String,
        /// The node's op type.
        op_type: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// The model as a whole cannot be imported (opset, outputs, context setup).
    #[error("{0}")]
    Model(String),
}

impl ImportError {
    /// The node or input this error is about, if any.
    pub fn subject(&self) -> Option<&str> {
        match self {
            ImportError::Input { input, .. } => Some(input),
            ImportError::Node { node, .. } => Some(node),
            ImportError::Onnx(OnnxError::Node { node, .. })
            | ImportError::Onnx(OnnxError::Attribute { node, .. }) => Some(node),
            ImportError::Onnx(OnnxError::UnsupportedOps(ops)) => {
                ops.first().map(|o| o.first_node.as_str())
            }
            _ => None,
        }
    }

    /// This error as a diagnostic located at the node's (or input's) name
    /// location `loc("name")`, as the imported IR spells it.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let loc = self
            .subject()
            .map_or_else(Location::unknown, |n| Location::name(n, None));
        Diagnostic::error(loc, self.to_string())
    }
}

impl From<ImportError> for Diagnostic {
    fn from(e: ImportError) -> Diagnostic {
        e.to_diagnostic()
    }
}
