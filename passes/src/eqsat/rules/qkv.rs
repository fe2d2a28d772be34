//! Multi-pattern: linears with constant weights that share an input (the
//! Q, K and V projections) become one linear with the weights (and biases)
//! concatenated into a new constant, followed by an `nn.split`; each
//! original linear is merged with its piece of the split.
//!
//! The match is over several unconnected e-nodes, so it is a custom
//! searcher: it groups the linears of the whole e-graph by input. Cycle
//! filtering: a group is fused only if none of its linears is reachable
//! from the shared input (otherwise the split would feed its own input and
//! extraction could pick a cyclic graph). Groups whose members were already
//! fused, and linears whose weights a fusion made, are skipped, so the rule
//! reaches a fixed point.

use std::sync::Arc;

use egg::{Id, PatternAst, Rewrite, SearchMatches, Searcher, Subst, Symbol, Var};
use rustc_hash::FxHashSet;

use ipuc_dialects::nn::elements::dense_data;
use ipuc_ir::attributes::{zeroed_bytes, AttrKind, DenseElements, ResourceBlob};
use ipuc_ir::{Attribute, Type};

use super::{dict, merge_checked};
use crate::eqsat::analysis::{add_attr, add_const, ClassKind, EGraph, NnAnalysis};
use crate::eqsat::language::{Node, Op};

pub(super) const NAMES: &[&str] = &["linear-shared-input"];

/// The most linears fused into one.
const MAX_GROUP: usize = 8;
/// Constants above this many elements are stored as resources.
const INLINE_LIMIT: u64 = 1024;

fn var(name: &str) -> Var {
    name.parse().expect("variable")
}

/// A linear node of class `class` with constant weights: (x, w, b).
fn linear_of(egraph: &EGraph, class: Id) -> Option<(Id, Id, Option<Id>)> {
    let is_const = |c: Id| {
        egraph[c].nodes.iter().find_map(|n| match n.op {
            Op::Const(i) if !egraph.analysis.fused_consts.contains(&i) => Some(i),
            _ => None,
        })
    };
    egraph[class].nodes.iter().find_map(|n| {
        if n.op != Op::Linear {
            return None;
        }
        let x = egraph.find(n.children[0]);
        let w = egraph.find(n.children[1]);
        is_const(w)?;
        let b = match n.children.get(2) {
            Some(&b) => {
                is_const(egraph.find(b))?;
                Some(egraph.find(b))
            }
            None => None,
        };
        Some((x, w, b))
    })
}

/// The constant value of a class.
fn const_value(egraph: &EGraph, c: Id) -> Option<Attribute> {
    egraph[c].nodes.iter().find_map(|n| match n.op {
        Op::Const(i) => Some(egraph.analysis.consts.get(i).clone()),
        _ => None,
    })
}

/// Linears fuse when they agree on (input, has bias, weight element type, K).
type GroupKey = (Id, bool, Type, i64);

struct SharedInputLinears;

impl Searcher<Node, NnAnalysis> for SharedInputLinears {
    fn search_eclass_with_limit(
        &self,
        _: &EGraph,
        _: Id,
        _: usize,
    ) -> Option<SearchMatches<'_, Node>> {
        // Groups span e-classes: see `search_with_limit`.
        None
    }

    fn search_with_limit(&self, egraph: &EGraph, limit: usize) -> Vec<SearchMatches<'_, Node>> {
        let mut ids: Vec<Id> = egraph.classes().map(|c| c.id).collect();
        ids.sort_unstable();
        // (input, has bias, weight element type, K) -> member classes.
        let mut groups: Vec<(GroupKey, Vec<Id>)> = Vec::new();
        for id in ids {
            let Some((x, w, b)) = linear_of(egraph, id) else {
                continue;
            };
            let Some(wt) = egraph[w].data.ty() else {
                continue;
            };
            let (Some(e), Some(&[k, _])) = (wt.element_type(), wt.shape()) else {
                continue;
            };
            let key = (x, b.is_some(), e.clone(), k);
            match groups.iter_mut().find(|(g, _)| *g == key) {
                Some((_, members)) if members.len() < MAX_GROUP => members.push(id),
                Some(_) => {}
                None => groups.push((key, vec![id])),
            }
        }
        let mut out = Vec::new();
        for ((x, ..), members) in groups {
            if members.len() < 2 || out.len() >= limit {
                continue;
            }
            let fused = members
                .iter()
                .any(|&m| egraph[m].nodes.iter().any(|n| matches!(n.op, Op::Get(_))));
            if fused {
                continue;
            }
            let mut subst = Subst::with_capacity(members.len() + 1);
            subst.insert(var("?x"), x);
            for (i, &m) in members.iter().enumerate() {
                subst.insert(var(&format!("?l{i}")), m);
            }
            out.push(SearchMatches {
                eclass: members[0],
                substs: vec![subst],
                ast: None,
            });
        }
        out
    }

    fn vars(&self) -> Vec<Var> {
        std::iter::once(var("?x"))
            .chain((0..MAX_GROUP).map(|i| var(&format!("?l{i}"))))
            .collect()
    }
}

/// Whether any of `targets` is reachable from `from` through e-node children.
fn reaches(egraph: &EGraph, from: Id, targets: &FxHashSet<Id>) -> bool {
    let mut seen = FxHashSet::default();
    let mut stack = vec![egraph.find(from)];
    while let Some(c) = stack.pop() {
        if targets.contains(&c) {
            return true;
        }
        if !seen.insert(c) {
            continue;
        }
        for n in &egraph[c].nodes {
            stack.extend(n.children.iter().map(|&ch| egraph.find(ch)));
        }
    }
    false
}

/// Concatenates 2-D constants along their last axis (1-D ones end to end).
fn concat_constants(egraph: &mut EGraph, parts: &[Attribute], hint: &str) -> Option<Attribute> {
    let data: Vec<DenseElements> = parts.iter().map(dense_data).collect::<Option<_>>()?;
    let elem = data[0].element_type().clone();
    let size = DenseElements::element_size(&elem)?;
    let shapes: Vec<Vec<i64>> = data
        .iter()
        .map(|d| d.ty.shape().map(<[i64]>::to_vec))
        .collect::<Option<_>>()?;
    let rows = if shapes[0].len() == 2 {
        shapes[0][0]
    } else {
        1
    };
    let cols: Vec<i64> = shapes.iter().map(|s| *s.last().unwrap_or(&0)).collect();
    let total: i64 = cols.iter().sum();
    // Written once into the buffer the blob keeps (a model's QKV weights:
    // so400m's 27 of 16 MB), a row of each part at a time.
    let mut bytes = zeroed_bytes((rows * total) as usize * size);
    let out = Arc::get_mut(&mut bytes).expect("a new buffer is unique");
    let mut at = 0;
    for r in 0..rows as usize {
        for (d, &n) in data.iter().zip(&cols) {
            let n = n as usize;
            let row = &mut out[at..at + n * size];
            if d.splat {
                for e in row.chunks_exact_mut(size) {
                    e.copy_from_slice(d.element_bytes(0));
                }
            } else {
                row.copy_from_slice(&d.data[r * n * size..(r + 1) * n * size]);
            }
            at += n * size;
        }
    }
    let shape: Vec<i64> = if shapes[0].len() == 2 {
        vec![rows, total]
    } else {
        vec![total]
    };
    let ty = Type::tensor(&shape, elem);
    if (rows * total) as u64 > INLINE_LIMIT {
        let blob = ResourceBlob {
            alignment: size.max(1) as u32,
            data: bytes,
        };
        let resource = egraph.analysis.resources.insert_unique(hint, blob);
        Some(Attribute::new(AttrKind::DenseResource { resource, ty }))
    } else {
        DenseElements::new(ty, bytes, false)
            .ok()
            .map(|d| Attribute::new(AttrKind::DenseElements(d)))
    }
}

struct FuseLinears;

impl egg::Applier<Node, NnAnalysis> for FuseLinears {
    fn apply_one(
        &self,
        egraph: &mut EGraph,
        _eclass: Id,
        subst: &Subst,
        _: Option<&PatternAst<Node>>,
        _: Symbol,
    ) -> Vec<Id> {
        let x = subst[var("?x")];
        let members: Vec<Id> = (0..MAX_GROUP)
            .map_while(|i| subst.get(var(&format!("?l{i}"))).copied())
            .collect();
        let targets: FxHashSet<Id> = members.iter().map(|&m| egraph.find(m)).collect();
        if reaches(egraph, x, &targets) {
            tracing::debug!("eqsat: skipped fusing linears whose input depends on them");
            return Vec::new();
        }
        let mut weights = Vec::new();
        let mut biases = Vec::new();
        let mut widths = Vec::new();
        for &m in &members {
            let Some((_, w, b)) = linear_of(egraph, m) else {
                return Vec::new();
            };
            let Some(wv) = const_value(egraph, w) else {
                return Vec::new();
            };
            let Some(&n) = wv.ty().and_then(|t| t.shape()).and_then(|s| s.last()) else {
                return Vec::new();
            };
            widths.push(n);
            weights.push(wv);
            if let Some(b) = b {
                let Some(bv) = const_value(egraph, b) else {
                    return Vec::new();
                };
                biases.push(bv);
            }
        }
        let Some(w) = concat_constants(egraph, &weights, "eqsat_fused_weight") else {
            return Vec::new();
        };
        let mut children = vec![x];
        let w = add_const(egraph, w);
        if let Op::Const(i) = egraph[w].nodes[0].op {
            egraph.analysis.fused_consts.insert(i);
        }
        children.push(w);
        if !biases.is_empty() {
            let Some(b) = concat_constants(egraph, &biases, "eqsat_fused_bias") else {
                return Vec::new();
            };
            let b = add_const(egraph, b);
            if let Op::Const(i) = egraph[b].nodes[0].op {
                egraph.analysis.fused_consts.insert(i);
            }
            children.push(b);
        }
        let fused = egraph.add(Node::new(Op::Linear, children));
        let Some(rank) = egraph[fused].data.shape().map(|s| s.len()) else {
            return Vec::new();
        };
        let attrs = dict(&[
            ("axis", Attribute::i64(rank as i64 - 1)),
            ("sizes", Attribute::dense_i64_array(&widths)),
        ]);
        let a = add_attr(egraph, attrs);
        let split = egraph.add(Node::new(Op::Split, vec![fused, a]));
        if !matches!(egraph[split].data.kind, ClassKind::Tuple(_)) {
            return Vec::new();
        }
        let mut changed = Vec::new();
        for (i, &m) in members.iter().enumerate() {
            let piece = egraph.add(Node::new(Op::Get(i as u32), vec![split]));
            changed.extend(merge_checked(egraph, m, piece));
        }
        changed
    }
}

pub(super) fn rules() -> Vec<Rewrite<Node, NnAnalysis>> {
    vec![Rewrite::new(NAMES[0], SharedInputLinears, FuseLinears).expect("rule is well-formed")]
}
