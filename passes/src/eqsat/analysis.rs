//! The e-class analysis: the tensor type of every e-class (inferred with
//! the `nn` dialect's own inference functions), and the value of e-classes
//! that are known to be a splat constant (every element equal), which
//! drives constant folding and the constant conditions of the rules
//! (GELU's 0.044715, LayerNorm's epsilon, ...).
//!
//! The analysis also owns the tables the leaves point into: interned
//! attribute dictionaries, constant values and the types of opaque inputs.

use std::sync::Arc;

use egg::{DidMerge, Id};
use rustc_hash::FxHashMap;

use ipuc_dialects::nn::{self, elements};
use ipuc_ir::attributes::{AttrKind, DenseElements, ResourceTable};
use ipuc_ir::{float_format, Attribute, DialectRegistry, Dictionary, Type};

use super::language::{Node, Op};

/// The e-graph of this pass.
pub type EGraph = egg::EGraph<Node, NnAnalysis>;

/// What an e-class computes.
#[derive(Clone, Debug, PartialEq)]
pub enum ClassKind {
    /// A tensor of this type.
    Tensor(Type),
    /// The results of a multi-result op, read with `get`.
    Tuple(Vec<Type>),
    /// An attribute dictionary leaf.
    Attr(u32),
    /// Type inference failed: the e-class holds an ill-formed node that a
    /// rule built; it is never unioned with real values nor extracted.
    Invalid,
}

/// The analysis data of an e-class.
#[derive(Clone, Debug)]
pub struct ClassData {
    /// What the class computes.
    pub kind: ClassKind,
    /// The element value, if the class is a float splat constant.
    pub splat: Option<f64>,
}

impl ClassData {
    /// The tensor type, if the class is a tensor.
    pub fn ty(&self) -> Option<&Type> {
        match &self.kind {
            ClassKind::Tensor(t) => Some(t),
            _ => None,
        }
    }
    /// The static shape, if the class is a tensor.
    pub fn shape(&self) -> Option<&[i64]> {
        self.ty().and_then(|t| t.shape())
    }
}

/// A table of distinct values with stable, insertion-ordered indices.
#[derive(Debug)]
pub struct Interner<T: std::hash::Hash + Eq + Clone> {
    items: Vec<T>,
    index: FxHashMap<T, u32>,
}

impl<T: std::hash::Hash + Eq + Clone> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            items: Vec::new(),
            index: FxHashMap::default(),
        }
    }
}

impl<T: std::hash::Hash + Eq + Clone> Interner<T> {
    /// The index of `item`, added if new.
    pub fn intern(&mut self, item: T) -> u32 {
        if let Some(&i) = self.index.get(&item) {
            return i;
        }
        let i = self.items.len() as u32;
        self.items.push(item.clone());
        self.index.insert(item, i);
        i
    }
    /// The item at `i`.
    pub fn get(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}

/// The analysis and its leaf tables.
pub struct NnAnalysis {
    /// Attribute dictionaries of [`Op::Attr`] leaves.
    pub attrs: Interner<Dictionary>,
    /// Values of [`Op::Const`] leaves.
    pub consts: Interner<Attribute>,
    /// Types of [`Op::Input`] leaves.
    pub inputs: Vec<Type>,
    /// Where rules put new large constants (the module's resource table).
    pub resources: Arc<ResourceTable>,
    /// Whether splat-constant folding adds constant nodes.
    pub fold_constants: bool,
    /// Constants that rules made by fusing others (not fused again).
    pub fused_consts: rustc_hash::FxHashSet<u32>,
    /// The dialects of the function's context: extraction asks the op
    /// definitions of the nodes for their interfaces.
    pub registry: Arc<DialectRegistry>,
}

impl std::fmt::Debug for NnAnalysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NnAnalysis")
            .field("attrs", &self.attrs.items.len())
            .field("consts", &self.consts.items.len())
            .field("inputs", &self.inputs.len())
            .finish()
    }
}

impl NnAnalysis {
    /// An empty analysis whose new resources go to `resources`; its
    /// registry is the builtin one until [`super::convert::FunctionGraph::build`]
    /// sets the function's.
    pub fn new(resources: Arc<ResourceTable>) -> NnAnalysis {
        NnAnalysis {
            attrs: Interner::default(),
            consts: Interner::default(),
            inputs: Vec::new(),
            resources,
            fold_constants: true,
            fused_consts: Default::default(),
            registry: Arc::new(DialectRegistry::new()),
        }
    }
}

/// Adds an attribute leaf for `dict`.
pub fn add_attr(egraph: &mut EGraph, dict: Dictionary) -> Id {
    let i = egraph.analysis.attrs.intern(dict);
    egraph.add(Node::leaf(Op::Attr(i)))
}

/// Adds a constant leaf holding `value`.
pub fn add_const(egraph: &mut EGraph, value: Attribute) -> Id {
    let i = egraph.analysis.consts.intern(value);
    egraph.add(Node::leaf(Op::Const(i)))
}

/// A splat constant of type `ty` (float element type) with every element `v`.
pub fn splat_attribute(ty: &Type, v: f64) -> Option<Attribute> {
    let kind = ty.element_type()?.float_kind()?;
    let n = ty.num_elements()?;
    let mut bytes = Vec::new();
    float_format::push_bytes(kind, v, &mut bytes);
    DenseElements::new(ty.clone(), bytes.into(), n != 1)
        .ok()
        .map(|d| Attribute::new(AttrKind::DenseElements(d)))
}

/// The dictionary of an attribute leaf e-class.
pub fn attrs_of(egraph: &EGraph, id: Id) -> Option<&Dictionary> {
    match egraph[id].data.kind {
        ClassKind::Attr(i) => Some(egraph.analysis.attrs.get(i)),
        _ => None,
    }
}

/// The splat value of a constant attribute with a float element type.
fn const_splat(value: &Attribute) -> Option<f64> {
    let d = elements::dense_data(value)?;
    d.element_type().float_kind()?;
    if d.splat || d.len() == 1 {
        return Some(d.float_at(0));
    }
    // Small constants whose elements are all equal count as splats too.
    if d.len() > 64 {
        return None;
    }
    let first = d.float_at(0);
    (1..d.len())
        .all(|i| d.float_at(i).to_bits() == first.to_bits())
        .then_some(first)
}

fn i64_attr(d: &Dictionary, name: &str, default: i64) -> i64 {
    d.get(name)
        .and_then(|a| a.as_int())
        .map_or(default, |v| v as i64)
}

fn i64_list(d: &Dictionary, name: &str) -> Option<Vec<i64>> {
    d.get(name).and_then(|a| a.as_i64_list())
}

/// Infers the result types of `op` on operands of types `t` with attributes `attrs`.
pub fn infer(op: Op, t: &[&Type], attrs: &Dictionary) -> Option<Vec<Type>> {
    use nn::{BinaryKind as B, UnaryKind as U};
    let binary = |k: B| (t.len() == 2).then(|| nn::infer_binary(k, t[0], t[1]).ok())?;
    let unary = |k: U| (t.len() == 1).then(|| nn::infer_unary(k, t[0]).ok())?;
    let one = |n: usize| t.len() == n;
    let ty = match op {
        Op::Add => binary(B::Add)?,
        Op::Sub => binary(B::Sub)?,
        Op::Mul => binary(B::Mul)?,
        Op::Div => binary(B::Div)?,
        Op::Pow => binary(B::Pow)?,
        Op::Max => binary(B::Max)?,
        Op::Min => binary(B::Min)?,
        Op::Sqrt => unary(U::Sqrt)?,
        Op::Reciprocal => unary(U::Reciprocal)?,
        Op::Exp => unary(U::Exp)?,
        Op::Log => unary(U::Log)?,
        Op::Tanh => unary(U::Tanh)?,
        Op::Erf => unary(U::Erf)?,
        Op::Neg => unary(U::Neg)?,
        Op::Abs => unary(U::Abs)?,
        Op::Relu => unary(U::Relu)?,
        Op::Sigmoid => unary(U::Sigmoid)?,
        Op::Identity if one(1) => t[0].clone(),
        Op::Cast if one(1) => nn::infer_cast(t[0], attrs.get("to")?.as_type()?).ok()?,
        Op::Matmul if one(2) => nn::infer_matmul(t[0], t[1]).ok()?,
        Op::Linear if t.len() == 2 || t.len() == 3 => {
            nn::infer_linear(t[0], t[1], t.get(2).copied()).ok()?
        }
        Op::Reshape if one(1) => nn::infer_reshape(t[0], &i64_list(attrs, "shape")?).ok()?,
        Op::Transpose if one(1) => {
            nn::infer_transpose(t[0], i64_list(attrs, "perm").as_deref()).ok()?
        }
        Op::Concat if !t.is_empty() => nn::infer_concat(t, i64_attr(attrs, "axis", 0)).ok()?,
        Op::Split if one(1) => {
            let sizes = i64_list(attrs, "sizes")?;
            return nn::infer_split(t[0], i64_attr(attrs, "axis", 0), &sizes).ok();
        }
        Op::Squeeze if one(1) => {
            nn::infer_squeeze(t[0], i64_list(attrs, "axes").as_deref()).ok()?
        }
        Op::Unsqueeze if one(1) => nn::infer_unsqueeze(t[0], &i64_list(attrs, "axes")?).ok()?,
        Op::Expand if one(1) => nn::infer_expand(t[0], &i64_list(attrs, "shape")?).ok()?,
        Op::ReduceMean | Op::ReduceSum | Op::ReduceMax if one(1) => nn::infer_reduce(
            t[0],
            i64_list(attrs, "axes").as_deref(),
            i64_attr(attrs, "keepdims", 1) != 0,
        )
        .ok()?,
        Op::Softmax if one(1) => nn::infer_softmax(t[0], i64_attr(attrs, "axis", -1)).ok()?,
        Op::LayerNorm if t.len() == 2 || t.len() == 3 => nn::infer_layer_normalization(
            t[0],
            t[1],
            t.get(2).copied(),
            i64_attr(attrs, "axis", -1),
        )
        .ok()?,
        Op::Gelu if one(1) => {
            let approx = attrs
                .get("approximate")
                .and_then(|a| a.as_str())
                .unwrap_or("none");
            nn::GeluApproximation::parse(approx).ok()?;
            nn::infer_gelu(t[0]).ok()?
        }
        Op::Attention if t.len() == 3 || t.len() == 4 => nn::infer_attention(
            t[0],
            t[1],
            t[2],
            t.get(3).copied(),
            i64_attr(attrs, "heads", 0),
        )
        .ok()?,
        _ => return None,
    };
    Some(vec![ty])
}

/// The splat value of `op` applied to splat operands, rounded to `ty`.
fn fold_splat(op: Op, args: &[Option<f64>], ty: &Type) -> Option<f64> {
    use nn::{BinaryKind as B, UnaryKind as U};
    let kind = ty.element_type()?.float_kind()?;
    let a = args.first().copied().flatten()?;
    let b = || args.get(1).copied().flatten();
    let v = match op {
        Op::Add => B::Add.apply_f64(a, b()?, false),
        Op::Sub => B::Sub.apply_f64(a, b()?, false),
        Op::Mul => B::Mul.apply_f64(a, b()?, false),
        Op::Div => B::Div.apply_f64(a, b()?, false),
        Op::Pow => B::Pow.apply_f64(a, b()?, false),
        Op::Max => B::Max.apply_f64(a, b()?, false),
        Op::Min => B::Min.apply_f64(a, b()?, false),
        Op::Sqrt => U::Sqrt.apply_f64(a),
        Op::Reciprocal => U::Reciprocal.apply_f64(a),
        Op::Exp => U::Exp.apply_f64(a),
        Op::Log => U::Log.apply_f64(a),
        Op::Tanh => U::Tanh.apply_f64(a),
        Op::Erf => U::Erf.apply_f64(a),
        Op::Neg => U::Neg.apply_f64(a),
        Op::Abs => U::Abs.apply_f64(a),
        Op::Relu => U::Relu.apply_f64(a),
        Op::Sigmoid => U::Sigmoid.apply_f64(a),
        Op::Identity
        | Op::Cast
        | Op::Reshape
        | Op::Transpose
        | Op::Squeeze
        | Op::Unsqueeze
        | Op::Expand => a,
        _ => return None,
    };
    let v = float_format::round_to(kind, v);
    v.is_finite().then_some(v)
}

impl egg::Analysis<Node> for NnAnalysis {
    type Data = ClassData;

    fn make(egraph: &mut EGraph, enode: &Node, _id: Id) -> ClassData {
        let a = &egraph.analysis;
        match enode.op {
            Op::Attr(i) => {
                return ClassData {
                    kind: ClassKind::Attr(i),
                    splat: None,
                }
            }
            Op::Const(i) => {
                let value = a.consts.get(i);
                return ClassData {
                    kind: value
                        .ty()
                        .cloned()
                        .map_or(ClassKind::Invalid, ClassKind::Tensor),
                    splat: const_splat(value),
                };
            }
            Op::Input(i) => {
                return ClassData {
                    kind: ClassKind::Tensor(a.inputs[i as usize].clone()),
                    splat: None,
                }
            }
            Op::Get(i) => {
                let kind = match &egraph[enode.children[0]].data.kind {
                    ClassKind::Tuple(ts) => ts
                        .get(i as usize)
                        .cloned()
                        .map_or(ClassKind::Invalid, ClassKind::Tensor),
                    _ => ClassKind::Invalid,
                };
                return ClassData { kind, splat: None };
            }
            _ => {}
        }
        let empty = Dictionary::new();
        let attrs = match enode.attr_child() {
            Some(c) => match attrs_of(egraph, c) {
                Some(d) => d,
                None => return invalid(),
            },
            None => &empty,
        };
        let mut types = Vec::with_capacity(enode.operands().len());
        for &c in enode.operands() {
            match egraph[c].data.ty() {
                Some(t) => types.push(t),
                None => return invalid(),
            }
        }
        let Some(mut results) = infer(enode.op, &types, attrs) else {
            return invalid();
        };
        if enode.op == Op::Split {
            return ClassData {
                kind: ClassKind::Tuple(results),
                splat: None,
            };
        }
        let ty = results.pop().expect("one result");
        let args: Vec<Option<f64>> = enode
            .operands()
            .iter()
            .map(|&c| egraph[c].data.splat)
            .collect();
        let splat = fold_splat(enode.op, &args, &ty);
        ClassData {
            kind: ClassKind::Tensor(ty),
            splat,
        }
    }

    fn merge(&mut self, a: &mut ClassData, b: ClassData) -> DidMerge {
        let mut changed_a = false;
        if a.kind == ClassKind::Invalid && b.kind != ClassKind::Invalid {
            a.kind = b.kind.clone();
            changed_a = true;
        }
        if a.splat.is_none() && b.splat.is_some() {
            a.splat = b.splat;
            changed_a = true;
        }
        let changed_b = a.kind != b.kind || (a.splat.is_some() && b.splat.is_none());
        DidMerge(changed_a, changed_b)
    }

    fn modify(egraph: &mut EGraph, id: Id) {
        if !egraph.analysis.fold_constants {
            return;
        }
        let data = &egraph[id].data;
        let (Some(v), Some(ty)) = (data.splat, data.ty().cloned()) else {
            return;
        };
        if egraph[id]
            .nodes
            .iter()
            .any(|n| matches!(n.op, Op::Const(_)))
        {
            return;
        }
        if let Some(attr) = splat_attribute(&ty, v) {
            let c = add_const(egraph, attr);
            egraph.union(id, c);
        }
    }
}

fn invalid() -> ClassData {
    ClassData {
        kind: ClassKind::Invalid,
        splat: None,
    }
}
