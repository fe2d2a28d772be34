//! Codelet library: parameterised tile programs, each with a float64 Rust
//! reference and a cycle estimate derived from its instruction counts.
//! Codelets emit `ipu` ops through one [`emitter::Emitter`], which counts
//! issue slots as it emits; [`program::CodeletProgram`] holds the result.
//! The simulator tests in `ipuc-runtime` (`tests/codelets_*.rs`) run every
//! template over random inputs and hold it to both.

pub mod amp;
pub mod amp_f16acts;
pub mod amp_poplibs;
pub mod attention;
pub mod attention_combine;
pub mod broadcast;
pub mod cast;
pub mod copy;
pub mod elementwise;
pub mod emitter;
pub mod estimate;
pub mod fill;
pub mod gelu;
pub mod gelu_f8;
pub mod gemm;
pub mod instance_memo;
pub mod launch;
pub mod layernorm;
pub mod pair_cast;
pub mod program;
pub mod reduce;
pub mod scale;
pub mod scope;
pub mod softmax;
pub mod softmax_join;
pub mod softmax_panels;
pub mod subroutine;
pub mod transpose;

/// A codelet cannot be built with the given parameters.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("codelet `{codelet}`: {message}")]
pub struct CodeletError {
    /// The codelet family and variant.
    pub codelet: String,
    /// What is wrong.
    pub message: String,
}

impl CodeletError {
    /// An error of `codelet`.
    pub fn new(codelet: impl Into<String>, message: impl Into<String>) -> Self {
        CodeletError {
            codelet: codelet.into(),
            message: message.into(),
        }
    }
}

/// Checks a row codelet's shape: at least one row, and a positive number
/// of columns that is a multiple of `multiple` (its vector width).
pub(crate) fn check_rows(
    codelet: &str,
    rows: u32,
    cols: u32,
    multiple: u32,
) -> Result<(), CodeletError> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(multiple) {
        return Err(CodeletError::new(
            codelet,
            format!(
                "needs rows > 0 and columns a positive multiple of {multiple}, got {rows}x{cols}"
            ),
        ));
    }
    Ok(())
}

/// Checks that every `(what, address, alignment)` is a multiple of its
/// alignment. The codelets' wide loads and stores (`ld64`, `ld128`, `st64`)
/// fault on an unaligned address, so a launch that would fault is refused
/// while it is built, naming the operand and the alignment it needs.
pub(crate) fn check_alignment(
    codelet: &str,
    addresses: &[(&str, u32, u32)],
) -> Result<(), CodeletError> {
    for &(what, address, align) in addresses {
        if !address.is_multiple_of(align) {
            return Err(CodeletError::new(
                codelet,
                format!("{what} address 0x{address:x} is not {align}-byte aligned"),
            ));
        }
    }
    Ok(())
}
