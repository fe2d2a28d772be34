//! `If`: with a condition known at import (the usual case once shapes are
//! static) only the taken branch is imported; otherwise both are, and each
//! output is an `nn.where` of the two.
//!
//! `Scan`, unrolled: with static shapes its trip count is the scanned
//! axis's size, so the body graph is imported once per iteration with its
//! inputs bound to the current state values and to the iteration's slices
//! of the scanned inputs; the scan outputs of all iterations are stacked.
//!
//! `Loop`, unrolled the same way while its trip count and its condition
//! are known at import (a constant `M`, a condition that folds to a
//! constant after each iteration): the body is imported once per
//! iteration with the iteration number, the condition and the carried
//! values bound; its scan outputs are stacked along a new first axis.
//! Body nodes go through the same importer as the outer graph (the
//! supported-op check already looked inside subgraphs), and values of the
//! outer scope are visible in the body by name, as ONNX scoping says.

use ipuc_ir::Value;

use super::body::Body;
use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::{Attribute, Graph, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Scan", "If", "Loop"];

/// The graph attribute `name` of `node`.
fn graph_attr<'n>(node: &'n Node, name: &str) -> Result<&'n Graph, ImportError> {
    match node.attribute(name) {
        Some(Attribute::Graph(g)) => Ok(g.as_ref()),
        _ => Err(error(node, format!("needs the `{name}` graph attribute"))),
    }
}

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    if node.op_type == "If" {
        return if_(imp, node);
    }
    if node.op_type == "Loop" {
        return loop_(imp, node);
    }
    let body = graph_attr(node, "body")?;
    scan(imp, node, body)
}

/// Imports the nodes of `graph` (no inputs of its own) and returns its outputs.
fn branch(imp: &mut Importer<'_>, node: &Node, graph: &Graph) -> NodeResult {
    if !graph.initializers.is_empty() {
        return Err(error(node, "a branch with initializers is not supported"));
    }
    import_graph(imp, node, graph, &graph.topological_order()?)
}

/// Imports the nodes of `node`'s subgraph `graph` in `order` (its
/// topological order; a loop's body once per iteration) and returns the
/// values of its outputs.
fn import_graph(imp: &mut Importer<'_>, node: &Node, graph: &Graph, order: &[usize]) -> NodeResult {
    for &i in order {
        imp.import_node(&graph.nodes[i])?;
    }
    graph
        .outputs
        .iter()
        .map(|o| imp.value(&o.name).map_err(|m| error(node, m)))
        .collect()
}

fn if_(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let cond = imp.input(node, 0)?;
    let (then_graph, else_graph) = (
        graph_attr(node, "then_branch")?,
        graph_attr(node, "else_branch")?,
    );
    let known = known_int(imp, cond).map(|v| v != 0);
    match known {
        Some(true) => branch(imp, node, then_graph),
        Some(false) => branch(imp, node, else_graph),
        None => {
            let taken = branch(imp, node, then_graph)?;
            let other = branch(imp, node, else_graph)?;
            let mut b = Body::new(imp, node);
            taken
                .into_iter()
                .zip(other)
                .map(|(t, e)| {
                    if b.imp.ty(t) != b.imp.ty(e) {
                        return Err(b.error(format!(
                            "the branches give '{}' and '{}'; with a condition known only at run time they must agree",
                            b.imp.ty(t),
                            b.imp.ty(e)
                        )));
                    }
                    b.select(cond, t, e)
                })
                .collect()
        }
    }
}

/// An integer-list attribute of `count` entries, default all zeros.
fn per_value(node: &Node, name: &str, count: usize) -> Result<Vec<i64>, ImportError> {
    match node.ints_attr(name)? {
        None => Ok(vec![0; count]),
        Some(v) if v.len() == count => Ok(v.to_vec()),
        Some(v) => Err(error(
            node,
            format!("`{name}` has {} entries for {count} values", v.len()),
        )),
    }
}

fn scan(imp: &mut Importer<'_>, node: &Node, body: &Graph) -> NodeResult {
    if !body.initializers.is_empty() {
        return Err(error(
            node,
            "a Scan body with initializers is not supported",
        ));
    }
    let scans = node.int_attr("num_scan_inputs", 0)? as usize;
    let inputs: Vec<Value> = (0..node.inputs.len())
        .map(|i| imp.input(node, i))
        .collect::<Result<_, _>>()?;
    if scans == 0 || scans > inputs.len() || body.inputs.len() != inputs.len() {
        return Err(error(
            node,
            format!(
                "{} inputs with {scans} scanned do not match the body's {} inputs",
                inputs.len(),
                body.inputs.len()
            ),
        ));
    }
    let states = inputs.len() - scans;
    let outputs_scanned = body
        .outputs
        .len()
        .checked_sub(states)
        .ok_or_else(|| error(node, "the body has fewer outputs than state variables"))?;
    let in_axes = per_value(node, "scan_input_axes", scans)?;
    let in_dirs = per_value(node, "scan_input_directions", scans)?;
    let out_axes = per_value(node, "scan_output_axes", outputs_scanned)?;
    let out_dirs = per_value(node, "scan_output_directions", outputs_scanned)?;
    let mut b = Body::new(imp, node);
    // Normalized axes of the scanned inputs and the trip count.
    let mut axes = Vec::with_capacity(scans);
    let mut trips = None;
    for k in 0..scans {
        let v = inputs[states + k];
        let shape = b.shape(v);
        let a =
            ipuc_dialects::nn::normalize_axis(in_axes[k], shape.len()).map_err(|m| b.error(m))?;
        match trips {
            None => trips = Some(shape[a]),
            Some(t) if t != shape[a] => {
                return Err(b.error(format!(
                    "scanned inputs have different lengths ({t} and {})",
                    shape[a]
                )))
            }
            _ => {}
        }
        axes.push(a);
    }
    let trips = trips.unwrap_or(0);
    let order = body.topological_order()?;
    let mut state: Vec<Value> = inputs[..states].to_vec();
    let mut collected: Vec<Vec<Value>> = vec![Vec::new(); outputs_scanned];
    for step in 0..trips {
        for (k, &v) in state.iter().enumerate() {
            b.imp.values.insert(body.inputs[k].name.clone(), v);
        }
        for k in 0..scans {
            let t = if in_dirs[k] != 0 {
                trips - 1 - step
            } else {
                step
            };
            let v = inputs[states + k];
            let slice = b.slice(v, axes[k] as i64, t, t + 1)?;
            let mut shape = b.shape(slice);
            shape.remove(axes[k]);
            let slice = b.reshape(slice, &shape)?;
            b.imp
                .values
                .insert(body.inputs[states + k].name.clone(), slice);
        }
        let results = import_graph(b.imp, node, body, &order)?;
        state = results[..states].to_vec();
        for (k, &v) in results[states..].iter().enumerate() {
            collected[k].push(v);
        }
    }
    let mut outputs = state;
    for (k, mut per_step) in collected.into_iter().enumerate() {
        if out_dirs[k] != 0 {
            per_step.reverse();
        }
        let Some(&first) = per_step.first() else {
            return Err(b.error("a Scan with no iterations has no scan outputs to stack"));
        };
        let rank = b.shape(first).len() + 1;
        let axis = ipuc_dialects::nn::normalize_axis(out_axes[k], rank).map_err(|m| b.error(m))?;
        let lifted: Vec<Value> = per_step
            .into_iter()
            .map(|v| b.unsqueeze(v, &[axis as i64]))
            .collect::<Result<_, _>>()?;
        outputs.push(b.concat(&lifted, axis as i64)?);
    }
    Ok(outputs)
}

/// The most iterations a `Loop` is unrolled to: a bound on the imported
/// ops, far above what a loop with static shapes computes in practice.
const MAX_LOOP_TRIPS: i64 = 4096;

/// The value of a constant boolean or integer scalar.
fn known_int(imp: &Importer<'_>, v: Value) -> Option<i128> {
    imp.constant_of(v)
        .as_ref()
        .and_then(ipuc_dialects::nn::elements::dense_data)
        .and_then(|d| ipuc_dialects::nn::elements::ints(&d))
        .filter(|v| v.len() == 1)
        .map(|v| v[0])
}

fn loop_(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let body = graph_attr(node, "body")?;
    let carried: Vec<Value> = (2..node.inputs.len())
        .map(|i| imp.input(node, i))
        .collect::<Result<_, _>>()?;
    if body.inputs.len() != carried.len() + 2 || body.outputs.len() < carried.len() + 1 {
        return Err(error(
            node,
            format!(
                "{} carried values do not match the body's {} inputs and {} outputs",
                carried.len(),
                body.inputs.len(),
                body.outputs.len()
            ),
        ));
    }
    let not_known = |what: &str| {
        error(
            node,
            format!(
                "the {what} must be known at import (ipuc unrolls loops over static shapes);                  bind the inputs it depends on, or fix the shapes with --input-shape"
            ),
        )
    };
    let trips = match imp.optional_input(node, 0)? {
        Some(m) => Some(known_int(imp, m).ok_or_else(|| not_known("trip count `M`"))?),
        None => None,
    };
    let mut cond = match imp.optional_input(node, 1)? {
        Some(c) => known_int(imp, c).ok_or_else(|| not_known("initial condition"))? != 0,
        None => true,
    };
    let order = body.topological_order()?;
    let scanned = body.outputs.len() - 1 - carried.len();
    let mut state = carried;
    let mut collected: Vec<Vec<Value>> = vec![Vec::new(); scanned];
    let mut b = Body::new(imp, node);
    let mut step: i64 = 0;
    while cond && trips.is_none_or(|m| i128::from(step) < m) {
        if step >= MAX_LOOP_TRIPS {
            return Err(b.error(format!(
                "the loop runs more than {MAX_LOOP_TRIPS} iterations; ipuc unrolls loops and \
                 stops there"
            )));
        }
        let i = b.constant(&[], &ipuc_ir::Type::i64(), &[step as f64])?;
        let c = b.constant(&[], &ipuc_ir::Type::i1(), &[1.0])?;
        b.imp.values.insert(body.inputs[0].name.clone(), i);
        b.imp.values.insert(body.inputs[1].name.clone(), c);
        for (k, &v) in state.iter().enumerate() {
            b.imp.values.insert(body.inputs[k + 2].name.clone(), v);
        }
        b.imp.define_initializers(node, body)?;
        let results = import_graph(b.imp, node, body, &order)?;
        cond = known_int(b.imp, results[0])
            .ok_or_else(|| not_known("condition after an iteration"))?
            != 0;
        state = results[1..1 + state.len()].to_vec();
        for (k, &v) in results[1 + state.len()..].iter().enumerate() {
            collected[k].push(v);
        }
        step += 1;
    }
    let mut outputs = state;
    for per_step in collected {
        if per_step.is_empty() {
            return Err(
                b.error("the loop runs no iteration, so the shape of its scan outputs is unknown")
            );
        }
        let lifted: Vec<Value> = per_step
            .into_iter()
            .map(|v| b.unsqueeze(v, &[0]))
            .collect::<Result<_, _>>()?;
        outputs.push(b.concat(&lifted, 0)?);
    }
    Ok(outputs)
}
