//! The ipuc IR core.
//!
//! Arena-owned operations, blocks, regions and values with use-lists
//! ([`Context`]); builtin types and attributes in MLIR spelling; the
//! textual format (a pest grammar plus printer); the verifier; symbol
//! tables; analyses; pattern rewriting; and the pass manager.
//!
//! ```
//! use std::sync::Arc;
//! use ipuc_ir::{Context, DialectRegistry, parse_source, print_op, PrintOptions, verify};
//!
//! let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
//! ctx.allow_unregistered = true;
//! let src = "%0 = \"test.constant\"() {value = 42 : i32} : () -> i32\n";
//! let parsed = parse_source(&mut ctx, "example.mlir", src).unwrap();
//! verify(&ctx, parsed.module).unwrap();
//! let text = print_op(&ctx, parsed.module, &PrintOptions::default());
//! assert!(text.contains("\"test.constant\"() {value = 42 : i32} : () -> i32"));
//! ```

extern crate alloc; // pest_derive without `std` names `::alloc`.

pub mod affine;
pub mod analysis;
pub mod asm;
pub mod assembly_format;
pub mod attributes;
pub mod builtin;
pub mod context;
pub mod conversion;
pub mod diagnostics;
pub mod dialect;
pub mod dialect_symbols;
pub mod entity;
pub mod float_format;
pub mod interfaces;
pub mod location;
pub use ipuc_numeric as numeric;
pub mod parser;
pub mod pass;
pub mod print_aliases;
pub mod printer;
pub mod rewrite;
pub mod symbol_table;
pub mod test_dialect;
pub mod test_passes;
mod transfer;
pub mod types;
pub mod verifier;

pub use attributes::{AttrKind, Attribute, Dictionary};
pub use context::{BlockId, Context, OpId, OperationState, RegionId, Value, ValueDef, WalkOrder};
pub use diagnostics::{Diagnostic, Severity, SourceMgr};
pub use dialect::{Dialect, DialectRegistry, OpDefinition, OperationName, Traits};
pub use location::Location;
pub use parser::{parse_source, parse_source_with, ParseOptions, ParsedSource};
pub use printer::{print_op, PrintOptions};
pub use types::{FloatKind, Type, TypeKind};
pub use verifier::verify;

/// Registers every pass of this crate: the test-only passes of
/// [`test_passes`], which exercise the infrastructure from lit tests.
pub fn register_passes(r: &mut pass::PassRegistry) -> Result<(), pass::RegistrationError> {
    test_passes::register_passes(r)
}
