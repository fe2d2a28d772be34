//! Symbol tables: ops with `sym_name` inside an op with the SymbolTable trait.

use rustc_hash::FxHashMap;

use crate::attributes::{AttrKind, Attribute};
use crate::context::{Context, OpId, WalkOrder};
use crate::dialect::Traits;

/// Symbol visibility.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Visibility {
    /// Visible outside the symbol table (default).
    Public,
    /// Visible only inside the symbol table.
    Private,
    /// Visible to the parent symbol table.
    Nested,
}

/// The `sym_name` of an op, if it defines a symbol.
pub fn symbol_name(ctx: &Context, op: OpId) -> Option<&str> {
    ctx.attr(op, "sym_name").and_then(Attribute::as_str)
}

/// The visibility of a symbol op.
pub fn visibility(ctx: &Context, op: OpId) -> Visibility {
    match ctx.attr(op, "sym_visibility").and_then(Attribute::as_str) {
        Some("private") => Visibility::Private,
        Some("nested") => Visibility::Nested,
        _ => Visibility::Public,
    }
}

/// A name -> op index of one symbol-table op.
pub struct SymbolTable {
    op: OpId,
    symbols: FxHashMap<String, OpId>,
}

impl SymbolTable {
    /// Builds the table of `op` (which should have the SymbolTable trait).
    pub fn new(ctx: &Context, op: OpId) -> SymbolTable {
        let mut symbols = FxHashMap::default();
        for &r in ctx.regions(op) {
            for &b in ctx.region_blocks(r) {
                for child in ctx.block_ops(b) {
                    if let Some(n) = symbol_name(ctx, child) {
                        symbols.entry(n.to_string()).or_insert(child);
                    }
                }
            }
        }
        SymbolTable { op, symbols }
    }
    /// The table's op.
    pub fn op(&self) -> OpId {
        self.op
    }
    /// Looks up a symbol.
    pub fn lookup(&self, name: &str) -> Option<OpId> {
        self.symbols.get(name).copied()
    }
    /// A name not yet used, derived from `base`.
    pub fn unique_name(&self, base: &str) -> String {
        if !self.symbols.contains_key(base) {
            return base.to_string();
        }
        (0..)
            .map(|i| format!("{base}_{i}"))
            .find(|n| !self.symbols.contains_key(n))
            .expect("infinite names")
    }
    /// Symbols in name order.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.symbols.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }
}

/// The nearest enclosing op (including `op`) with the SymbolTable trait.
pub fn nearest_symbol_table(ctx: &Context, mut op: OpId) -> Option<OpId> {
    loop {
        if ctx.name(op).has_trait(Traits::SYMBOL_TABLE) {
            return Some(op);
        }
        op = ctx.parent_op(op)?;
    }
}

/// Resolves a (possibly nested) symbol reference from the table enclosing `from`.
pub fn lookup_symbol(ctx: &Context, from: OpId, reference: &Attribute) -> Option<OpId> {
    let AttrKind::SymbolRef { root, nested } = reference.kind() else {
        return None;
    };
    let mut table = nearest_symbol_table(ctx, from)?;
    let mut found = SymbolTable::new(ctx, table).lookup(root)?;
    for n in nested {
        table = found;
        found = SymbolTable::new(ctx, table).lookup(n)?;
    }
    Some(found)
}

/// Every symbol reference attribute used by ops nested in `root` (root names only).
pub fn collect_symbol_uses(ctx: &Context, root: OpId) -> Vec<(OpId, String)> {
    fn visit(a: &Attribute, out: &mut Vec<String>) {
        match a.kind() {
            AttrKind::SymbolRef { root, .. } => out.push(root.to_string()),
            AttrKind::Array(items) => items.iter().for_each(|i| visit(i, out)),
            AttrKind::Dictionary(d) => d.iter().for_each(|(_, v)| visit(v, out)),
            _ => {}
        }
    }
    let mut uses = Vec::new();
    ctx.walk(root, WalkOrder::PreOrder, &mut |ctx, op| {
        let mut names = Vec::new();
        for (_, a) in ctx.attributes(op).iter() {
            visit(a, &mut names);
        }
        if let Some(p) = ctx.properties(op) {
            for (_, a) in p.iter() {
                visit(a, &mut names);
            }
        }
        uses.extend(names.into_iter().map(|n| (op, n)));
    });
    uses
}
