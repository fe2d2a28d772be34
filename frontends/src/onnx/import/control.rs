//! `If`: with a condition known at import (the usual case once shapes are
//! static) only the taken branch is imported; otherwise both are, and each
//! output is an `nn.where` of the two.
//!
//! `Scan`, unrolled: with static shapes its trip count is the scanned
//! axis's size, so the body graph is imported once per iteration with its
//! inputs bound to the current state values and to the iteration's slices
//! of the scanned inputs; the scan outputs of all iterations are stacked.
//! Body nodes go through the same importer as the outer graph (the
//! supported-op check already looked inside subgraphs), and values of the
//! outer scope are visible in the body by name, as ONNX scoping says.

use ipuc_ir::Value;

use super::body::Body;
use super::{error, ImportError, Importer, NodeResult};
use crate::onnx::{Attribute, Graph, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Scan", "If"];

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
    let body = graph_attr(node, "body")?;
    scan(imp, node, body)
}

/// Imports the nodes of `graph` (no inputs of its own) and returns its outputs.
fn branch(imp: &mut Importer<'_>, node: &Node, graph: &Graph) -> NodeResult {
    if !graph.initializers.is_empty() {
        return Err(error(node, "a branch with initializers is not supported"));
    }
    for i in graph.topological_order()? {
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
    let known = imp
        .constant_of(cond)
        .as_ref()
        .and_then(ipuc_dialects::nn::elements::dense_data)
        .and_then(|d| ipuc_dialects::nn::elements::ints(&d))
        .filter(|v| v.len() == 1)
        .map(|v| v[0] != 0);
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
        for &i in &order {
            b.imp.import_node(&body.nodes[i])?;
        }
        let results: Vec<Value> = body
            .outputs
            .iter()
            .map(|o| b.imp.value(&o.name).map_err(|m| b.error(m)))
            .collect::<Result<_, _>>()?;
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
