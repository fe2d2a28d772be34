//! Dialects and operation definitions.
//!
//! An operation is declared once, as an [`OpDefinition`]: its name, operand,
//! result and attribute constraints, traits, verifier, folder,
//! canonicalization patterns and optional custom assembly format. Dialects
//! group definitions and are registered in a [`DialectRegistry`] that every
//! [`Context`] shares.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::asm::{CustomParser, OpPrinter};
use crate::assembly_format::{AssemblyFormat, FormatError};
use crate::attributes::Attribute;
use crate::context::{Context, OpId, OperationState};
use crate::diagnostics::Diagnostic;
use crate::dialect_symbols::{AttrDef, SymbolDef, TypeDef};
use crate::interfaces::{InterfaceSet, OpInterface};
use crate::location::Location;
use crate::rewrite::RewritePatternSet;
use crate::types::Type;

/// Operation traits, as a bit set.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Traits(u32);

impl Traits {
    /// No traits.
    pub const NONE: Traits = Traits(0);
    /// No side effects: may be removed when unused, hoisted and CSE'd.
    pub const PURE: Traits = Traits(1);
    /// Operands may be reordered.
    pub const COMMUTATIVE: Traits = Traits(1 << 1);
    /// Must be the last operation of its block.
    pub const TERMINATOR: Traits = Traits(1 << 2);
    /// Regions may not use values defined above the operation.
    pub const ISOLATED_FROM_ABOVE: Traits = Traits(1 << 3);
    /// All operands and results have the same type.
    pub const SAME_OPERANDS_AND_RESULT_TYPE: Traits = Traits(1 << 4);
    /// Defines a symbol (has `sym_name`).
    pub const SYMBOL: Traits = Traits(1 << 5);
    /// Its region holds a symbol table.
    pub const SYMBOL_TABLE: Traits = Traits(1 << 6);
    /// Regions are graph regions (no dominance, no terminator required).
    pub const GRAPH_REGION: Traits = Traits(1 << 7);
    /// Each region has at most one block.
    pub const SINGLE_BLOCK: Traits = Traits(1 << 8);
    /// Regions need no terminator.
    pub const NO_TERMINATOR: Traits = Traits(1 << 9);
    /// Produces a constant value (used by folding and CSE).
    pub const CONSTANT_LIKE: Traits = Traits(1 << 10);
    /// A terminator that returns control to the parent operation.
    pub const RETURN_LIKE: Traits = Traits(1 << 11);
    /// Applying twice is the identity (`f(f(x)) = x`).
    pub const INVOLUTION: Traits = Traits(1 << 12);
    /// Applying twice equals applying once (`f(f(x)) = f(x)`).
    pub const IDEMPOTENT: Traits = Traits(1 << 13);

    /// Whether every trait in `other` is set.
    pub const fn contains(self, other: Traits) -> bool {
        self.0 & other.0 == other.0
    }
    /// The names of the set traits, for `--list-passes`-style documentation.
    pub fn names(self) -> Vec<&'static str> {
        const NAMES: [&str; 14] = [
            "Pure",
            "Commutative",
            "Terminator",
            "IsolatedFromAbove",
            "SameOperandsAndResultType",
            "Symbol",
            "SymbolTable",
            "GraphRegion",
            "SingleBlock",
            "NoTerminator",
            "ConstantLike",
            "ReturnLike",
            "Involution",
            "Idempotent",
        ];
        (0..14)
            .filter(|i| self.0 & (1 << i) != 0)
            .map(|i| NAMES[i])
            .collect()
    }
}

impl std::ops::BitOr for Traits {
    type Output = Traits;
    fn bitor(self, rhs: Traits) -> Traits {
        Traits(self.0 | rhs.0)
    }
}

/// A constraint on the type of an operand or result.
#[derive(Copy, Clone)]
pub struct TypeConstraint {
    /// What the constraint accepts, for messages (e.g. "tensor of floats").
    pub description: &'static str,
    /// The predicate.
    pub check: fn(&Type) -> bool,
}

impl TypeConstraint {
    /// Any type.
    pub const ANY: TypeConstraint = TypeConstraint {
        description: "any type",
        check: |_| true,
    };
    /// Any tensor type.
    pub const TENSOR: TypeConstraint = TypeConstraint {
        description: "tensor",
        check: |t| t.is_tensor(),
    };
    /// Any ranked tensor type.
    pub const RANKED_TENSOR: TypeConstraint = TypeConstraint {
        description: "ranked tensor",
        check: |t| matches!(t.kind(), crate::types::TypeKind::RankedTensor { .. }),
    };
    /// Signless integer or index.
    pub const INT_OR_INDEX: TypeConstraint = TypeConstraint {
        description: "integer or index",
        check: |t| t.is_integer() || t.is_index(),
    };
    /// Any float.
    pub const FLOAT: TypeConstraint = TypeConstraint {
        description: "floating-point",
        check: |t| t.is_float(),
    };
}

/// Operand or result declaration: a name, a type constraint and whether it is variadic/optional.
#[derive(Copy, Clone)]
pub struct ValueDecl {
    /// Name used in messages and typed accessors.
    pub name: &'static str,
    /// Type constraint.
    pub constraint: TypeConstraint,
    /// How many values this declaration takes.
    pub arity: Arity,
}

/// How many values a [`ValueDecl`] takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Arity {
    /// Exactly one.
    One,
    /// Zero or one.
    Optional,
    /// Any number.
    Variadic,
}

/// An attribute declaration.
#[derive(Copy, Clone)]
pub struct AttrDecl {
    /// The attribute name.
    pub name: &'static str,
    /// What kind of attribute is expected, for messages.
    pub description: &'static str,
    /// The predicate on the attribute value.
    pub check: fn(&Attribute) -> bool,
    /// Whether the attribute may be absent.
    pub optional: bool,
}

/// A verifier hook.
pub type VerifyFn = fn(&Context, OpId) -> Result<(), Diagnostic>;
/// A folder hook: given the op and the constant values of its operands
/// (where known), returns replacement values for every result, or `None`.
pub type FoldFn = fn(&Context, OpId, &[Option<Attribute>]) -> Option<Vec<FoldResult>>;
/// Adds canonicalization patterns for an op.
pub type CanonicalizeFn = fn(&mut RewritePatternSet);
/// Prints an op in its custom form.
pub type PrintFn = fn(&mut OpPrinter<'_, '_>, OpId) -> std::fmt::Result;
/// Parses an op's custom form into a state.
pub type ParseFn = fn(&mut CustomParser<'_, '_>, &mut OperationState) -> Result<(), Diagnostic>;
/// Builds a constant op for a folded attribute.
pub type MaterializeFn = fn(&mut Context, &Attribute, &Type, Location) -> Option<OpId>;

/// The result of folding one result.
#[derive(Clone, Debug)]
pub enum FoldResult {
    /// The result is this constant.
    Constant(Attribute),
    /// The result is this existing value.
    Value(crate::context::Value),
}

/// The definition of an operation.
pub struct OpDefinition {
    /// Full name, `dialect.op`.
    pub name: &'static str,
    /// One-line summary.
    pub summary: &'static str,
    /// Traits.
    pub traits: Traits,
    /// Operand declarations (`None`: not checked).
    pub operands: Option<Vec<ValueDecl>>,
    /// Result declarations (`None`: not checked).
    pub results: Option<Vec<ValueDecl>>,
    /// Inherent attributes (stored as properties).
    pub attributes: Vec<AttrDecl>,
    /// Number of regions, if fixed.
    pub num_regions: Option<usize>,
    /// Number of successors, if fixed.
    pub num_successors: Option<usize>,
    /// Extra verification.
    pub verify: Option<VerifyFn>,
    /// Constant folding.
    pub fold: Option<FoldFn>,
    /// Canonicalization patterns.
    pub canonicalize: Option<CanonicalizeFn>,
    /// Custom assembly format: printer.
    pub print: Option<PrintFn>,
    /// Custom assembly format: parser.
    pub parse: Option<ParseFn>,
    /// Declarative assembly format text (see [`crate::assembly_format`]),
    /// compiled into [`OpDefinition::assembly_format`] at registration.
    pub format_source: Option<&'static str>,
    /// The compiled declarative format; `print`/`parse` then run it.
    pub assembly_format: Option<Arc<AssemblyFormat>>,
    /// The attribute of a hand-written custom form `attr-dict $name` (see
    /// [`OpDefinition::attr_dict_value_form`]).
    pub value_form: Option<&'static str>,
    /// Names of the regions, in order (for `$name` in a declarative format).
    pub region_names: Vec<&'static str>,
    /// Names of the successors, in order (for `$name` in a declarative format).
    pub successor_names: Vec<&'static str>,
    /// Dialect whose ops may drop their prefix inside this op's regions
    /// (`return` inside `func.func`).
    pub default_dialect: Option<&'static str>,
    /// The interfaces the op implements (see [`crate::interfaces`]).
    pub interfaces: InterfaceSet,
}

impl OpDefinition {
    /// A definition with the given name and nothing else declared.
    pub fn new(name: &'static str) -> OpDefinition {
        OpDefinition {
            name,
            summary: "",
            traits: Traits::NONE,
            operands: None,
            results: None,
            attributes: Vec::new(),
            num_regions: Some(0),
            num_successors: Some(0),
            verify: None,
            fold: None,
            canonicalize: None,
            print: None,
            parse: None,
            format_source: None,
            assembly_format: None,
            value_form: None,
            region_names: Vec::new(),
            successor_names: Vec::new(),
            default_dialect: None,
            interfaces: InterfaceSet::default(),
        }
    }
    /// Sets the default dialect of nested regions.
    pub fn default_dialect(mut self, d: &'static str) -> Self {
        self.default_dialect = Some(d);
        self
    }
    /// Sets the summary.
    pub fn summary(mut self, s: &'static str) -> Self {
        self.summary = s;
        self
    }
    /// Adds traits.
    pub fn traits(mut self, t: Traits) -> Self {
        self.traits = self.traits | t;
        self
    }
    /// Declares operands.
    pub fn operands(mut self, decls: &[ValueDecl]) -> Self {
        self.operands = Some(decls.to_vec());
        self
    }
    /// Declares results.
    pub fn results(mut self, decls: &[ValueDecl]) -> Self {
        self.results = Some(decls.to_vec());
        self
    }
    /// Declares an inherent attribute.
    pub fn attribute(mut self, decl: AttrDecl) -> Self {
        self.attributes.push(decl);
        self
    }
    /// Sets the region count (`None`: any).
    pub fn regions(mut self, n: Option<usize>) -> Self {
        self.num_regions = n;
        self
    }
    /// Sets the successor count (`None`: any).
    pub fn successors(mut self, n: Option<usize>) -> Self {
        self.num_successors = n;
        self
    }
    /// Implements interface `I` with `model`
    /// (`.implement::<dyn Contraction>(Box::new(MatmulContraction))`).
    pub fn implement<I>(mut self, model: Box<I>) -> Self
    where
        I: ?Sized + OpInterface,
        Box<I>: Send + Sync,
    {
        self.interfaces.insert(model);
        self
    }
    /// The op's model of interface `I`, if it implements it.
    pub fn interface<I: ?Sized + OpInterface>(&self) -> Option<&I> {
        self.interfaces.get::<I>()
    }
    /// Sets the verifier.
    pub fn verifier(mut self, f: VerifyFn) -> Self {
        self.verify = Some(f);
        self
    }
    /// Sets the folder.
    pub fn folder(mut self, f: FoldFn) -> Self {
        self.fold = Some(f);
        self
    }
    /// Sets the canonicalization pattern provider.
    pub fn canonicalizer(mut self, f: CanonicalizeFn) -> Self {
        self.canonicalize = Some(f);
        self
    }
    /// Sets a hand-written custom assembly format (MLIR's
    /// `hasCustomAssemblyFormat`): the op's printer and parser. Not to be
    /// confused with IPU assembly text, which the `ipu` dialect prints.
    pub fn custom_assembly_format(mut self, print: PrintFn, parse: ParseFn) -> Self {
        self.print = Some(print);
        self.parse = Some(parse);
        self
    }
    /// Declares that the hand-written custom form (set with
    /// [`OpDefinition::custom_assembly_format`]) is `attr-dict $name`, as
    /// upstream's `arith.constant`: an optional dictionary of discardable
    /// attributes, then the declared attribute `name`, kept as a property,
    /// whose type is the op's single result type; no operands. The
    /// parser's hand-written reader (`parser/fast.rs`) then reads the
    /// common case of that form itself (constants are a tenth of a
    /// model's ops), building what the op's parse hook builds; the hook
    /// stays the grammar of record. So the hook must accept exactly such
    /// a value when the declaration's `check` does, and keep the other
    /// attributes as they are.
    pub fn attr_dict_value_form(mut self, name: &'static str) -> Self {
        self.value_form = Some(name);
        self
    }
    /// Sets a declarative assembly format (syntax in
    /// [`crate::assembly_format`]). It is validated against the rest of the
    /// definition when the dialect is registered, whatever the builder order.
    pub fn assembly_format(mut self, format: &'static str) -> Self {
        self.format_source = Some(format);
        self
    }
    /// Names the regions (fixing their number), for `$name` in a format.
    pub fn region_names(mut self, names: &[&'static str]) -> Self {
        self.region_names = names.to_vec();
        self.num_regions = Some(names.len());
        self
    }
    /// Names the successors (fixing their number), for `$name` in a format.
    pub fn successor_names(mut self, names: &[&'static str]) -> Self {
        self.successor_names = names.to_vec();
        self.num_successors = Some(names.len());
        self
    }
    /// Compiles `format_source` and installs the format's printer and
    /// parser as this op's hooks.
    fn compile_format(&mut self) -> Result<(), FormatError> {
        let Some(source) = self.format_source else {
            return Ok(());
        };
        if self.print.is_some() || self.parse.is_some() {
            return Err(FormatError {
                op: self.name,
                source,
                offset: 0,
                message: "the op has both print/parse hooks (`custom_assembly_format`) and a declarative format; keep one".into(),
            });
        }
        self.assembly_format = Some(Arc::new(AssemblyFormat::compile(self, source)?));
        self.print = Some(crate::assembly_format::print_op);
        self.parse = Some(crate::assembly_format::parse_op);
        Ok(())
    }
}

/// An operation name: the text plus its definition when registered.
///
/// One pointer (every op holds one: a lowered so400m holds ten million
/// ops), shared by every op of the name: the registry interns each name
/// once.
#[derive(Clone)]
pub struct OperationName(Arc<NameData>);

/// What an [`OperationName`] points to.
struct NameData {
    name: Box<str>,
    def: Option<OpDefinition>,
}

impl OperationName {
    fn new(name: &str, def: Option<OpDefinition>) -> Self {
        OperationName(Arc::new(NameData {
            name: name.into(),
            def,
        }))
    }
    /// The full name.
    #[inline]
    pub fn as_str(&self) -> &str {
        &self.0.name
    }
    /// The dialect prefix (text before the first dot).
    pub fn dialect(&self) -> &str {
        self.as_str().split_once('.').map_or("", |(d, _)| d)
    }
    /// The definition, if registered.
    #[inline]
    pub fn def(&self) -> Option<&OpDefinition> {
        self.0.def.as_ref()
    }
    /// Whether the op is registered.
    pub fn is_registered(&self) -> bool {
        self.0.def.is_some()
    }
    /// Whether the op has trait `t` (unregistered ops have none).
    #[inline]
    pub fn has_trait(&self, t: Traits) -> bool {
        self.def().is_some_and(|d| d.traits.contains(t))
    }
    /// The op's model of interface `I` (`None` if the op does not implement
    /// it or is unregistered): how passes ask an op what it does.
    #[inline]
    pub fn interface<I: ?Sized + OpInterface>(&self) -> Option<&I> {
        self.def().and_then(|d| d.interface::<I>())
    }
    /// Whether `attr` is declared inherent (stored as a property).
    pub fn is_inherent_attr(&self, attr: &str) -> bool {
        self.def()
            .is_some_and(|d| d.attributes.iter().any(|a| a.name == attr))
    }
}

impl PartialEq for OperationName {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.as_str() == other.as_str()
    }
}
impl Eq for OperationName {}
impl std::hash::Hash for OperationName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}
impl std::fmt::Debug for OperationName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A dialect: a namespace of operations plus hooks.
pub struct Dialect {
    /// The namespace (`func`, `nn`, ...).
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Operation definitions.
    pub ops: Vec<OpDefinition>,
    /// Builds constant operations for folded values.
    pub materialize_constant: Option<MaterializeFn>,
    /// Types this dialect defines (`!dialect.mnemonic<...>`), see
    /// [`crate::dialect_symbols`].
    pub types: Vec<SymbolDef>,
    /// Attributes this dialect defines (`#dialect.mnemonic<...>`).
    pub attributes: Vec<SymbolDef>,
    /// Whether ops of this namespace that it does not define are accepted
    /// (unregistered, as with `--allow-unregistered-dialect`), as upstream's
    /// `allowUnknownOperations`.
    pub allow_unknown_operations: bool,
}

impl Dialect {
    /// A dialect with no operations yet.
    pub fn new(name: &'static str, description: &'static str) -> Dialect {
        Dialect {
            name,
            description,
            ops: Vec::new(),
            materialize_constant: None,
            types: Vec::new(),
            attributes: Vec::new(),
            allow_unknown_operations: false,
        }
    }
    /// Adds a type definition (`!dialect.mnemonic<...>`).
    pub fn type_def<T: TypeDef>(mut self) -> Self {
        assert_eq!(
            T::DIALECT,
            self.name,
            "type {} not in dialect {}",
            T::MNEMONIC,
            self.name
        );
        self.types.push(SymbolDef::of_type::<T>());
        self
    }
    /// Adds an attribute definition (`#dialect.mnemonic<...>`).
    pub fn attr_def<A: AttrDef>(mut self) -> Self {
        assert_eq!(
            A::DIALECT,
            self.name,
            "attribute {} not in dialect {}",
            A::MNEMONIC,
            self.name
        );
        self.attributes.push(SymbolDef::of_attr::<A>());
        self
    }
    /// Adds an operation definition.
    pub fn op(mut self, def: OpDefinition) -> Self {
        assert!(
            def.name.starts_with(self.name) && def.name[self.name.len()..].starts_with('.'),
            "op {} not in dialect {}",
            def.name,
            self.name
        );
        self.ops.push(def);
        self
    }
}

/// Information kept per registered dialect.
pub struct DialectInfo {
    /// The namespace.
    pub name: &'static str,
    /// Description.
    pub description: &'static str,
    /// Constant materializer.
    pub materialize_constant: Option<MaterializeFn>,
    /// Types the dialect defines.
    pub types: Vec<SymbolDef>,
    /// Attributes the dialect defines.
    pub attributes: Vec<SymbolDef>,
    /// Whether undefined ops of this namespace are accepted.
    pub allow_unknown_operations: bool,
}

/// All known dialects and operations. Built once, then shared (read-only).
pub struct DialectRegistry {
    dialects: FxHashMap<&'static str, DialectInfo>,
    ops: FxHashMap<&'static str, OperationName>,
    /// Interned names of unregistered ops, so repeated names share storage.
    unregistered: std::sync::Mutex<FxHashMap<Box<str>, OperationName>>,
}

impl Default for DialectRegistry {
    fn default() -> Self {
        let mut r = DialectRegistry {
            dialects: FxHashMap::default(),
            ops: FxHashMap::default(),
            unregistered: std::sync::Mutex::new(FxHashMap::default()),
        };
        r.register(crate::builtin::dialect());
        r
    }
}

impl DialectRegistry {
    /// A registry holding only the `builtin` dialect.
    pub fn new() -> DialectRegistry {
        DialectRegistry::default()
    }
    /// Registers a dialect (re-registering replaces it).
    ///
    /// # Panics
    ///
    /// If an op's declarative assembly format is invalid (see
    /// [`DialectRegistry::try_register`]): a format is part of the
    /// dialect's source, so this is a bug in it, reported by the first
    /// test that builds a registry, with the op, the element and why.
    pub fn register(&mut self, dialect: Dialect) {
        if let Err(e) = self.try_register(dialect) {
            panic!("{e}");
        }
    }
    /// Registers a dialect, compiling its ops' declarative assembly
    /// formats; on an invalid format nothing is registered.
    pub fn try_register(&mut self, mut dialect: Dialect) -> Result<(), FormatError> {
        for op in &mut dialect.ops {
            op.compile_format()?;
        }
        for op in dialect.ops {
            self.ops
                .insert(op.name, OperationName::new(op.name, Some(op)));
        }
        self.dialects.insert(
            dialect.name,
            DialectInfo {
                name: dialect.name,
                description: dialect.description,
                materialize_constant: dialect.materialize_constant,
                types: dialect.types,
                attributes: dialect.attributes,
                allow_unknown_operations: dialect.allow_unknown_operations,
            },
        );
        Ok(())
    }
    /// The definition of a registered op.
    pub fn op_def(&self, name: &str) -> Option<&OpDefinition> {
        self.ops.get(name).and_then(|n| n.def())
    }
    /// A registered dialect.
    pub fn dialect(&self, name: &str) -> Option<&DialectInfo> {
        self.dialects.get(name)
    }
    /// Whether a dialect namespace is registered.
    pub fn has_dialect(&self, name: &str) -> bool {
        self.dialects.contains_key(name)
    }
    /// Registered dialect names, sorted.
    pub fn dialect_names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self.dialects.keys().copied().collect();
        v.sort_unstable();
        v
    }
    /// Registered ops, sorted by name.
    pub fn op_defs(&self) -> Vec<&OpDefinition> {
        let mut v: Vec<_> = self.ops.values().filter_map(|n| n.def()).collect();
        v.sort_by_key(|d| d.name);
        v
    }
    /// The operation name for `name`, registered or not.
    pub fn op_name(&self, name: &str) -> OperationName {
        if let Some(n) = self.ops.get(name) {
            return n.clone();
        }
        let mut map = self.unregistered.lock().expect("op name table poisoned");
        if let Some(n) = map.get(name) {
            return n.clone();
        }
        let n = OperationName::new(name, None);
        map.insert(name.into(), n.clone());
        n
    }
}
