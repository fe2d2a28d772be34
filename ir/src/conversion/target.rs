//! The conversion target: which operations are legal after a conversion.
//!
//! Legality is declared per op name or per dialect; a rule for an op name
//! overrides the rule of its dialect. An op is *legal*, *illegal*,
//! *dynamically legal* (a predicate decides per op instance), or *unknown*
//! (no rule). Legal ops may be marked recursively legal: their nested ops
//! are then legal too and not visited.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::context::{Context, OpId};

/// A legality predicate for dynamically legal ops.
pub type LegalityFn = Arc<dyn Fn(&Context, OpId) -> bool + Send + Sync>;

#[derive(Clone)]
enum Action {
    Legal,
    Illegal,
    Dynamic(LegalityFn),
}

#[derive(Clone)]
struct Rule {
    action: Action,
    recursive: bool,
}

/// The legality of one op instance.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Legality {
    /// Legal; `recursive`: its nested ops are legal too.
    Legal {
        /// Whether nested ops are legal without being checked.
        recursive: bool,
    },
    /// Marked illegal (by op name or dialect).
    Illegal,
    /// Dynamically legal, but the predicate rejected this instance.
    DynamicallyIllegal,
    /// No rule applies.
    Unknown,
}

impl Legality {
    /// Whether the op is legal.
    pub fn is_legal(self) -> bool {
        matches!(self, Legality::Legal { .. })
    }
}

/// Declares the legal and illegal operations of a conversion.
#[derive(Clone, Default)]
pub struct ConversionTarget {
    ops: FxHashMap<String, Rule>,
    dialects: FxHashMap<String, Rule>,
    unknown: Option<LegalityFn>,
}

impl ConversionTarget {
    /// A target with no rules (every op unknown).
    pub fn new() -> ConversionTarget {
        ConversionTarget::default()
    }

    fn set_op(&mut self, name: &str, action: Action) -> &mut Self {
        self.ops.insert(
            name.to_string(),
            Rule {
                action,
                recursive: false,
            },
        );
        self
    }

    fn set_dialect(&mut self, name: &str, action: Action) -> &mut Self {
        self.dialects.insert(
            name.to_string(),
            Rule {
                action,
                recursive: false,
            },
        );
        self
    }

    /// Marks the op `name` (`dialect.op`) legal.
    pub fn add_legal_op(&mut self, name: &str) -> &mut Self {
        self.set_op(name, Action::Legal)
    }
    /// Marks the op `name` illegal: it must be converted.
    pub fn add_illegal_op(&mut self, name: &str) -> &mut Self {
        self.set_op(name, Action::Illegal)
    }
    /// Makes the op `name` legal where `pred` holds.
    pub fn add_dynamically_legal_op(
        &mut self,
        name: &str,
        pred: impl Fn(&Context, OpId) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.set_op(name, Action::Dynamic(Arc::new(pred)))
    }
    /// Marks every op of `dialect` legal (op rules take precedence).
    pub fn add_legal_dialect(&mut self, dialect: &str) -> &mut Self {
        self.set_dialect(dialect, Action::Legal)
    }
    /// Marks every op of `dialect` illegal (op rules take precedence).
    pub fn add_illegal_dialect(&mut self, dialect: &str) -> &mut Self {
        self.set_dialect(dialect, Action::Illegal)
    }
    /// Makes the ops of `dialect` legal where `pred` holds.
    pub fn add_dynamically_legal_dialect(
        &mut self,
        dialect: &str,
        pred: impl Fn(&Context, OpId) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.set_dialect(dialect, Action::Dynamic(Arc::new(pred)))
    }
    /// Makes ops with no rule legal where `pred` holds (instead of unknown).
    pub fn mark_unknown_op_dynamically_legal(
        &mut self,
        pred: impl Fn(&Context, OpId) -> bool + Send + Sync + 'static,
    ) -> &mut Self {
        self.unknown = Some(Arc::new(pred));
        self
    }
    /// Marks the op `name` legal together with everything nested in it.
    pub fn mark_op_recursively_legal(&mut self, name: &str) -> &mut Self {
        self.ops.insert(
            name.to_string(),
            Rule {
                action: Action::Legal,
                recursive: true,
            },
        );
        self
    }

    /// The legality of `op`.
    pub fn legality(&self, ctx: &Context, op: OpId) -> Legality {
        let name = ctx.name(op);
        let rule = self
            .ops
            .get(name.as_str())
            .or_else(|| self.dialects.get(name.dialect()));
        match rule {
            Some(Rule {
                action: Action::Legal,
                recursive,
            }) => Legality::Legal {
                recursive: *recursive,
            },
            Some(Rule {
                action: Action::Illegal,
                ..
            }) => Legality::Illegal,
            Some(Rule {
                action: Action::Dynamic(pred),
                recursive,
            }) => {
                if pred(ctx, op) {
                    Legality::Legal {
                        recursive: *recursive,
                    }
                } else {
                    Legality::DynamicallyIllegal
                }
            }
            None => match &self.unknown {
                Some(pred) if pred(ctx, op) => Legality::Legal { recursive: false },
                Some(_) => Legality::DynamicallyIllegal,
                None => Legality::Unknown,
            },
        }
    }
}
