//! Between IR and e-graph: [`FunctionGraph::build`] turns the pure `nn`
//! dataflow of one block into an e-graph; [`FunctionGraph::rebuild`] puts the
//! extracted terms back in place of the original ops.
//!
//! Ops the language models (pure `nn` ops whose inferred types match their
//! IR types) become e-nodes; every other value (block arguments, results of
//! other ops) is an opaque [`Op::Input`] leaf. A value defined by a converted
//! op and used by anything else is a root. Rebuilding materializes each
//! root's best term right before its first user, checks that the chosen
//! terms form an acyclic graph whose inputs are defined before they are
//! used, and only then changes the IR: on any failure the block is left
//! untouched.

use egg::Id;
use rustc_hash::{FxHashMap, FxHashSet};

use ipuc_ir::interfaces::all_attributes;
use ipuc_ir::{BlockId, Context, Location, OpId, OperationState, Traits, Value};

use super::analysis::{add_attr, add_const, infer, ClassKind, EGraph};
use super::language::{Node, Op};

/// An op turned into an e-node.
struct Converted {
    op: OpId,
    /// The class of the op (the tuple class for multi-result ops).
    class: Id,
    /// The classes of its operands.
    operand_classes: Vec<Id>,
}

/// The e-graph of one block and what is needed to put it back.
pub struct FunctionGraph {
    /// The e-graph.
    pub egraph: EGraph,
    block: BlockId,
    converted: Vec<Converted>,
    /// Values of [`Op::Input`] leaves.
    inputs: Vec<Value>,
    /// Roots: values of converted ops used elsewhere, with their classes.
    roots: Vec<(Value, Id)>,
}

/// Why a block was left as it was.
#[derive(Debug, PartialEq, Eq)]
pub enum RebuildError {
    /// The chosen terms form a cycle.
    Cycle,
    /// A chosen term reads a value defined after the place it is needed.
    InputNotDominating,
}

impl FunctionGraph {
    /// Converts the ops of `block` into `egraph`.
    pub fn build(ctx: &Context, block: BlockId, mut egraph: EGraph) -> FunctionGraph {
        egraph.analysis.registry = ctx.registry().clone();
        let mut value_class: FxHashMap<Value, Id> = FxHashMap::default();
        let mut inputs: Vec<Value> = Vec::new();
        let mut converted: Vec<Converted> = Vec::new();
        let class_of = |egraph: &mut EGraph,
                        value_class: &mut FxHashMap<Value, Id>,
                        inputs: &mut Vec<Value>,
                        v: Value|
         -> Id {
            if let Some(&c) = value_class.get(&v) {
                return c;
            }
            let i = inputs.len() as u32;
            inputs.push(v);
            egraph.analysis.inputs.push(ctx.value_type(v).clone());
            let c = egraph.add(Node::leaf(Op::Input(i)));
            value_class.insert(v, c);
            c
        };
        for op in ctx.block_ops(block) {
            let name = ctx.name(op);
            let pure = name.has_trait(Traits::PURE) && ctx.regions(op).is_empty();
            if pure && name.as_str() == ipuc_dialects::nn::CONSTANT {
                if let Some(value) = ctx.attr(op, "value").cloned() {
                    let c = add_const(&mut egraph, value);
                    value_class.insert(ctx.result(op, 0), c);
                    converted.push(Converted {
                        op,
                        class: c,
                        operand_classes: Vec::new(),
                    });
                    continue;
                }
            }
            let Some(kind) = Op::from_ir_name(name.as_str()).filter(|_| pure) else {
                continue;
            };
            let operand_classes: Vec<Id> = ctx
                .operands(op)
                .iter()
                .map(|&v| class_of(&mut egraph, &mut value_class, &mut inputs, v))
                .collect();
            let attrs = all_attributes(ctx, op);
            let operand_types: Option<Vec<_>> = operand_classes
                .iter()
                .map(|&c| egraph[c].data.ty().cloned())
                .collect();
            let Some(operand_types) = operand_types else {
                continue;
            };
            let refs: Vec<_> = operand_types.iter().collect();
            let ir_types = ctx.result_types(op);
            if infer(kind, &refs, &attrs).as_ref() != Some(&ir_types) {
                // The op is not in the form the language models (e.g. types
                // refined beyond what inference gives): leave it in place.
                continue;
            }
            let mut children = operand_classes.clone();
            if kind.has_attrs() {
                children.push(add_attr(&mut egraph, attrs));
            }
            let class = egraph.add(Node::new(kind, children));
            if kind == Op::Split {
                for (i, &r) in ctx.results(op).iter().enumerate() {
                    let g = egraph.add(Node::new(Op::Get(i as u32), vec![class]));
                    value_class.insert(r, g);
                }
            } else {
                value_class.insert(ctx.result(op, 0), class);
            }
            converted.push(Converted {
                op,
                class,
                operand_classes,
            });
        }
        let converted_ops: FxHashSet<OpId> = converted.iter().map(|c| c.op).collect();
        let mut roots = Vec::new();
        for c in &converted {
            for &r in ctx.results(c.op) {
                if ctx.uses(r).iter().any(|u| !converted_ops.contains(&u.op)) {
                    roots.push((r, value_class[&r]));
                }
            }
        }
        egraph.rebuild();
        FunctionGraph {
            egraph,
            block,
            converted,
            inputs,
            roots,
        }
    }

    /// The number of ops turned into e-nodes.
    pub fn num_converted(&self) -> usize {
        self.converted.len()
    }

    /// Replaces the converted ops by the terms `best` chooses for the roots.
    /// Returns the number of ops created.
    pub fn rebuild(
        &self,
        ctx: &mut Context,
        best: &dyn Fn(Id) -> Node,
    ) -> Result<usize, RebuildError> {
        let eg = &self.egraph;
        let block_ops = ctx.block_ops_vec(self.block);
        let position: FxHashMap<OpId, usize> =
            block_ops.iter().enumerate().map(|(i, &o)| (o, i)).collect();
        let converted_ops: FxHashSet<OpId> = self.converted.iter().map(|c| c.op).collect();

        // Where each root is first needed: the first op of this block (not
        // converted) that uses it, directly or inside its regions.
        let terminator_pos = ctx
            .terminator(self.block)
            .and_then(|t| position.get(&t).copied())
            .unwrap_or(block_ops.len());
        let mut anchored: Vec<(usize, Value, Id)> = Vec::new();
        for &(v, class) in &self.roots {
            let mut first = terminator_pos;
            for u in ctx.uses(v) {
                let mut user = u.op;
                while ctx.parent_block(user) != Some(self.block) {
                    match ctx.parent_op(user) {
                        Some(p) => user = p,
                        None => break,
                    }
                }
                if let Some(&p) = position.get(&user) {
                    if !converted_ops.contains(&user) {
                        first = first.min(p);
                    }
                }
            }
            anchored.push((first, v, eg.find(class)));
        }
        anchored.sort_by_key(|&(p, _, _)| p);

        // Plan: the classes to materialize, in creation order, each with
        // the position it is created before.
        let mut planned: FxHashMap<Id, usize> = FxHashMap::default();
        let mut order: Vec<(Id, usize)> = Vec::new();
        for &(anchor, _, root) in &anchored {
            if planned.contains_key(&root) {
                continue;
            }
            // Iterative DFS with cycle detection.
            let mut on_stack: FxHashSet<Id> = FxHashSet::default();
            let mut stack: Vec<(Id, bool)> = vec![(root, false)];
            while let Some((c, expanded)) = stack.pop() {
                if planned.contains_key(&c) {
                    continue;
                }
                let node = best(c);
                if expanded {
                    on_stack.remove(&c);
                    planned.insert(c, anchor);
                    order.push((c, anchor));
                    continue;
                }
                if let Op::Input(i) = node.op {
                    let v = self.inputs[i as usize];
                    if let Some(def) = ctx.defining_op(v) {
                        if let Some(&p) = position.get(&def) {
                            if p >= anchor {
                                return Err(RebuildError::InputNotDominating);
                            }
                        }
                    }
                }
                if !on_stack.insert(c) {
                    return Err(RebuildError::Cycle);
                }
                stack.push((c, true));
                for &child in node.children.iter().rev() {
                    let child = eg.find(child);
                    if planned.contains_key(&child) {
                        continue;
                    }
                    if on_stack.contains(&child) {
                        return Err(RebuildError::Cycle);
                    }
                    stack.push((child, false));
                }
            }
        }

        let locs = self.locations(ctx, &order, best);

        // Execute.
        let mut values: FxHashMap<Id, Vec<Value>> = FxHashMap::default();
        let mut created = 0;
        for &(c, anchor) in &order {
            let node = best(c);
            let loc = locs.get(&c).cloned().unwrap_or_else(Location::unknown);
            let result: Vec<Value> = match node.op {
                Op::Attr(_) => Vec::new(),
                Op::Input(i) => vec![self.inputs[i as usize]],
                Op::Get(i) => {
                    let t = eg.find(node.children[0]);
                    vec![values[&t][i as usize]]
                }
                Op::Const(i) => {
                    let value = eg.analysis.consts.get(i).clone();
                    let ty = value.ty().expect("tensor constant").clone();
                    let state = OperationState::new(ctx.op_name(ipuc_dialects::nn::CONSTANT), loc)
                        .results(&[ty])
                        .attr("value", value);
                    let op = self.insert(ctx, state, anchor, &block_ops);
                    created += 1;
                    ctx.results(op).to_vec()
                }
                op => {
                    let name = op.ir_name().expect("nn operator");
                    let operands: Vec<Value> = node
                        .operands()
                        .iter()
                        .map(|&ch| values[&eg.find(ch)][0])
                        .collect();
                    let results = match &eg[c].data.kind {
                        ClassKind::Tensor(t) => vec![t.clone()],
                        ClassKind::Tuple(ts) => ts.clone(),
                        _ => unreachable!("extracted classes are well-typed"),
                    };
                    let mut state = OperationState::new(ctx.op_name(name), loc)
                        .operands(&operands)
                        .results(&results);
                    if let Some(a) = node.attr_child() {
                        let dict = super::analysis::attrs_of(eg, a).expect("attribute leaf");
                        for (k, v) in dict.iter() {
                            state = state.attr(k, v.clone());
                        }
                    }
                    let new = self.insert(ctx, state, anchor, &block_ops);
                    created += 1;
                    ctx.results(new).to_vec()
                }
            };
            values.insert(c, result);
        }

        // Redirect the users that stay, then erase the converted ops.
        for &(_, v, class) in &anchored {
            let new = values[&class][0];
            ctx.replace_uses_if(v, new, |_, u| !converted_ops.contains(&u.op));
        }
        for c in self.converted.iter().rev() {
            ctx.erase_op(c.op);
        }
        Ok(created)
    }

    fn insert(
        &self,
        ctx: &mut Context,
        state: OperationState,
        anchor: usize,
        block_ops: &[OpId],
    ) -> OpId {
        let op = ctx.create_op(state);
        match block_ops.get(anchor) {
            Some(&a) => ctx.insert_op_before(a, op),
            None => ctx.append_op(self.block, op),
        }
        op
    }

    /// The location of each materialized class: the fused locations of the
    /// original ops it replaces (those in its class, first, and in the
    /// classes below it that are not materialized themselves). Classes that no
    /// original op was in (built by rules) take their users' locations.
    fn locations(
        &self,
        ctx: &Context,
        order: &[(Id, usize)],
        best: &dyn Fn(Id) -> Node,
    ) -> FxHashMap<Id, Location> {
        let eg = &self.egraph;
        let materialized: FxHashSet<Id> = order.iter().map(|&(c, _)| c).collect();
        let mut by_class: FxHashMap<Id, Vec<usize>> = FxHashMap::default();
        for (i, c) in self.converted.iter().enumerate() {
            by_class.entry(eg.find(c.class)).or_default().push(i);
        }
        let mut locs: FxHashMap<Id, Location> = FxHashMap::default();
        for &(c, _) in order {
            let mut seen: FxHashSet<Id> = FxHashSet::default();
            let mut found: Vec<usize> = Vec::new();
            let mut stack = vec![c];
            while let Some(k) = stack.pop() {
                if !seen.insert(k) {
                    continue;
                }
                for &i in by_class.get(&k).map(Vec::as_slice).unwrap_or(&[]) {
                    found.push(i);
                    for &d in &self.converted[i].operand_classes {
                        let d = eg.find(d);
                        if !materialized.contains(&d) {
                            stack.push(d);
                        }
                    }
                }
            }
            found.sort_unstable();
            found.dedup();
            // The ops of the class itself (the op the class's value came
            // from) first, then those below it in program order: a
            // location's first part names the op a diagnostic or profile
            // shows, and the leaves below (constants hash-consed across
            // layers) would name another layer's op.
            found.sort_by_key(|&i| eg.find(self.converted[i].class) != c);
            let loc = Location::fused(found.iter().map(|&i| ctx.loc(self.converted[i].op).clone()));
            if !loc.is_unknown() {
                locs.insert(c, loc);
            }
        }
        // Users come after their operands in `order`: walk it backwards so
        // that a class built by a rule inherits from all of its users.
        let mut inherited: FxHashMap<Id, Vec<Location>> = FxHashMap::default();
        for &(c, _) in order.iter().rev() {
            if let std::collections::hash_map::Entry::Vacant(slot) = locs.entry(c) {
                if let Some(l) = inherited.get(&c) {
                    let loc = Location::fused(l.iter().cloned());
                    if !loc.is_unknown() {
                        slot.insert(loc);
                    }
                }
            }
            if let Some(loc) = locs.get(&c).cloned() {
                for &ch in &best(c).children {
                    inherited.entry(eg.find(ch)).or_default().push(loc.clone());
                }
            }
        }
        locs
    }
}
