//! The pest-generated parser for `grammar.pest`.

#[derive(pest_derive::Parser)]
#[grammar = "parser/grammar.pest"]
pub(crate) struct MlirGrammar;
