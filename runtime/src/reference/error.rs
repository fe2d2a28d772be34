//! Errors of the reference kernels.

/// A kernel could not run on the given operands or attributes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// Operand shapes do not fit together.
    #[error("{op}: {detail}")]
    Shape {
        /// The kernel.
        op: &'static str,
        /// What does not fit.
        detail: String,
    },
    /// An operand's element type is not supported by the kernel.
    #[error("{op}: unsupported element type {kind}")]
    ElementType {
        /// The kernel.
        op: &'static str,
        /// The element type (MLIR spelling).
        kind: String,
    },
    /// An attribute value is invalid.
    #[error("{op}: {detail}")]
    Attribute {
        /// The kernel.
        op: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// An arithmetic error in exact integer arithmetic (division by zero).
    #[error("{op}: {detail}")]
    Arithmetic {
        /// The kernel.
        op: &'static str,
        /// What happened.
        detail: String,
    },
}

/// Result alias of the reference kernels.
pub type KernelResult<T> = Result<T, KernelError>;

pub(crate) fn shape_error(op: &'static str, detail: impl Into<String>) -> KernelError {
    KernelError::Shape {
        op,
        detail: detail.into(),
    }
}

pub(crate) fn attribute_error(op: &'static str, detail: impl Into<String>) -> KernelError {
    KernelError::Attribute {
        op,
        detail: detail.into(),
    }
}
