//! The custom assembly format interface: what a dialect's print and parse
//! hooks receive.

pub use crate::parser::custom::{Argument, UnresolvedOperand};
pub use crate::parser::CustomParser;
pub use crate::printer::OpPrinter;
