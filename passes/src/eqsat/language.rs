//! The e-graph language mirroring the `nn` dialect.
//!
//! An e-node is an operator plus child e-classes. Operators with attributes
//! take their attribute dictionary as a last child: an [`Op::Attr`] leaf
//! interned in the analysis, so that rules can bind it to a pattern variable
//! (`(transpose ?x ?perm)`) and inspect or rebuild it. Constants
//! (`nn.constant`) and values the pass does not model (block arguments,
//! results of impure or unknown ops) are leaves too.
//!
//! Operators are a closed enum with a derived order (not interned strings),
//! so e-class node order, and with it extraction's tie-breaking, never
//! depends on what else the process interned before.

use std::fmt;

use egg::{Id, Language};

macro_rules! ops {
    ($($variant:ident = $text:literal, $ir:literal, $attrs:literal;)*) => {
        /// An operator of the e-graph language.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Op {
            $(
                #[doc = concat!("`", $ir, "`")]
                $variant,
            )*
            /// An interned attribute dictionary (leaf).
            Attr(u32),
            /// An interned `nn.constant` value (leaf).
            Const(u32),
            /// A value the pass does not model: a block argument or a result
            /// of an op left in place (leaf).
            Input(u32),
            /// Result `i` of a multi-result operator (`nn.split`).
            Get(u32),
        }

        impl Op {
            /// Every operator that mirrors an `nn` op.
            pub const NN: &'static [Op] = &[$(Op::$variant,)*];

            /// The short name used in rule patterns (`mul`, `layer_norm`).
            pub fn pattern_name(self) -> Option<&'static str> {
                match self {
                    $(Op::$variant => Some($text),)*
                    _ => None,
                }
            }
            /// The `nn` op this operator stands for.
            pub fn ir_name(self) -> Option<&'static str> {
                match self {
                    $(Op::$variant => Some($ir),)*
                    _ => None,
                }
            }
            /// Whether e-nodes of this operator end with an attribute leaf.
            pub fn has_attrs(self) -> bool {
                match self {
                    $(Op::$variant => $attrs,)*
                    _ => false,
                }
            }
            /// The operator of an `nn` op name.
            pub fn from_ir_name(name: &str) -> Option<Op> {
                match name {
                    $($ir => Some(Op::$variant),)*
                    _ => None,
                }
            }
            /// The operator of a pattern name.
            pub fn from_pattern_name(name: &str) -> Option<Op> {
                match name {
                    $($text => Some(Op::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

ops! {
    Add = "add", "nn.add", false;
    Sub = "sub", "nn.sub", false;
    Mul = "mul", "nn.mul", false;
    Div = "div", "nn.div", false;
    Pow = "pow", "nn.pow", false;
    Max = "max", "nn.max", false;
    Min = "min", "nn.min", false;
    Sqrt = "sqrt", "nn.sqrt", false;
    Reciprocal = "reciprocal", "nn.reciprocal", false;
    Exp = "exp", "nn.exp", false;
    Log = "log", "nn.log", false;
    Tanh = "tanh", "nn.tanh", false;
    Erf = "erf", "nn.erf", false;
    Neg = "neg", "nn.neg", false;
    Abs = "abs", "nn.abs", false;
    Relu = "relu", "nn.relu", false;
    Sigmoid = "sigmoid", "nn.sigmoid", false;
    Cast = "cast", "nn.cast", true;
    Identity = "identity", "nn.identity", false;
    Matmul = "matmul", "nn.matmul", false;
    Linear = "linear", "nn.linear", false;
    Reshape = "reshape", "nn.reshape", true;
    Transpose = "transpose", "nn.transpose", true;
    Concat = "concat", "nn.concat", true;
    Split = "split", "nn.split", true;
    Squeeze = "squeeze", "nn.squeeze", true;
    Unsqueeze = "unsqueeze", "nn.unsqueeze", true;
    Expand = "expand", "nn.expand", true;
    ReduceMean = "reduce_mean", "nn.reduce_mean", true;
    ReduceSum = "reduce_sum", "nn.reduce_sum", true;
    ReduceMax = "reduce_max", "nn.reduce_max", true;
    Softmax = "softmax", "nn.softmax", true;
    LayerNorm = "layer_norm", "nn.layer_normalization", true;
    Gelu = "gelu", "nn.gelu", true;
    Attention = "attention", "nn.attention", true;
}

impl Op {
    /// Whether the operator is a leaf (no children).
    pub fn is_leaf(self) -> bool {
        matches!(self, Op::Attr(_) | Op::Const(_) | Op::Input(_))
    }
}

/// An e-node: an operator and its child e-classes (operands, then the
/// attribute leaf for operators with attributes).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Node {
    /// The operator.
    pub op: Op,
    /// Child e-classes.
    pub children: Vec<Id>,
}

impl Node {
    /// A node.
    pub fn new(op: Op, children: Vec<Id>) -> Node {
        Node { op, children }
    }
    /// A leaf.
    pub fn leaf(op: Op) -> Node {
        Node {
            op,
            children: Vec::new(),
        }
    }
    /// The operand children (without the attribute leaf).
    pub fn operands(&self) -> &[Id] {
        if self.op.has_attrs() {
            &self.children[..self.children.len() - 1]
        } else {
            &self.children
        }
    }
    /// The attribute leaf's e-class, for operators with attributes.
    pub fn attr_child(&self) -> Option<Id> {
        self.op
            .has_attrs()
            .then(|| *self.children.last().expect("attribute child"))
    }
}

impl Language for Node {
    type Discriminant = (Op, usize);

    fn discriminant(&self) -> Self::Discriminant {
        (self.op, self.children.len())
    }
    fn matches(&self, other: &Self) -> bool {
        self.op == other.op && self.children.len() == other.children.len()
    }
    fn children(&self) -> &[Id] {
        &self.children
    }
    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.children
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Op::Attr(i) => write!(f, "attr{i}"),
            Op::Const(i) => write!(f, "const{i}"),
            Op::Input(i) => write!(f, "input{i}"),
            Op::Get(i) => write!(f, "get{i}"),
            op => f.write_str(op.pattern_name().expect("nn operator")),
        }
    }
}

/// The error of parsing an operator in a rule pattern.
#[derive(Debug)]
pub struct UnknownOperator(pub String);

impl egg::FromOp for Node {
    type Error = UnknownOperator;

    fn from_op(op: &str, children: Vec<Id>) -> Result<Self, Self::Error> {
        let parsed = if let Some(i) = op.strip_prefix("get") {
            i.parse().ok().map(Op::Get)
        } else {
            Op::from_pattern_name(op)
        };
        parsed
            .map(|o| Node::new(o, children))
            .ok_or_else(|| UnknownOperator(op.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &op in Op::NN {
            let ir = op.ir_name().unwrap();
            assert_eq!(Op::from_ir_name(ir), Some(op));
            assert_eq!(Op::from_pattern_name(op.pattern_name().unwrap()), Some(op));
        }
        assert!(Op::Softmax.has_attrs() && !Op::Mul.has_attrs());
        let p: egg::Pattern<Node> = "(gelu (get1 (split ?x ?a)) ?b)".parse().expect("pattern");
        assert_eq!(p.vars().len(), 3);
        assert!("(frobnicate ?x)".parse::<egg::Pattern<Node>>().is_err());
    }
}
