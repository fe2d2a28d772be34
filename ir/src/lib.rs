//! ipuc IR core: context, operations, types, attributes, textual format, verifier, passes.
pub mod numeric;
