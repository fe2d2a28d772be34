//! `Einsum`, built of `nn` ops: each operand's repeated labels become
//! diagonals (a select against the identity pattern, then a sum that adds
//! only zeros), labels no one else needs are summed out, operands are
//! combined pairwise by one batched `nn.matmul` (batch labels, then the
//! left's own, the contracted, the right's own, each group flattened), and
//! the result is transposed to the output's label order.

use std::collections::BTreeMap;

use ipuc_dialects::nn::ReduceKind;
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::{ImportError, Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["Einsum"];

/// A subscript label: a letter, or the position of an ellipsis dimension
/// counted from the right (`ELLIPSIS + k`).
type Label = u32;
const ELLIPSIS: Label = 1 << 16;

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    einsum(&mut b).map(|v| vec![v])
}

/// One term's labels for an operand of `rank` axes.
fn term_labels(b: &Body<'_, '_, '_>, term: &str, rank: usize) -> Result<Vec<Label>, ImportError> {
    let letters = term.replace("...", "");
    if letters.chars().any(|c| !c.is_ascii_alphabetic()) {
        return Err(b.error(format!("subscripts \"{term}\" must be letters and \"...\"")));
    }
    let explicit = letters.len();
    let Some((before, after)) = term.split_once("...") else {
        if explicit != rank {
            return Err(b.error(format!(
                "subscripts \"{term}\" name {explicit} axes of an operand of rank {rank}"
            )));
        }
        return Ok(term.chars().map(|c| c as Label).collect());
    };
    let dots = rank.checked_sub(explicit).ok_or_else(|| {
        b.error(format!(
            "subscripts \"{term}\" name more axes than the rank {rank}"
        ))
    })?;
    let mut labels: Vec<Label> = before.chars().map(|c| c as Label).collect();
    labels.extend((0..dots).rev().map(|k| ELLIPSIS + k as Label));
    labels.extend(after.chars().map(|c| c as Label));
    Ok(labels)
}

fn einsum(b: &mut Body<'_, '_, '_>) -> Built {
    let equation: String = b
        .node
        .string_attr("equation", "")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (equation.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    let mut operands = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let v = b.input(i)?;
        let labels = term_labels(b, term, b.shape(v).len())?;
        operands.push((v, labels));
    }
    if operands.len() != b.node.inputs.len() {
        return Err(b.error(format!(
            "the equation has {} terms for {} inputs",
            operands.len(),
            b.node.inputs.len()
        )));
    }
    let max_dots = operands
        .iter()
        .map(|(_, l)| l.iter().filter(|&&x| x >= ELLIPSIS).count())
        .max()
        .unwrap_or(0);
    let output: Vec<Label> = match rhs {
        Some(r) => {
            let rank = r.replace("...", "").len() + if r.contains("...") { max_dots } else { 0 };
            term_labels(b, &r, rank)?
        }
        None => {
            // Implicit: the ellipsis, then the labels used once, in order.
            let mut counts: BTreeMap<Label, usize> = BTreeMap::new();
            for (_, l) in &operands {
                for &x in l.iter().filter(|&&x| x < ELLIPSIS) {
                    *counts.entry(x).or_default() += 1;
                }
            }
            let mut out: Vec<Label> = (0..max_dots).rev().map(|k| ELLIPSIS + k as Label).collect();
            out.extend(counts.into_iter().filter(|&(_, n)| n == 1).map(|(x, _)| x));
            out
        }
    };
    let mut pending: Vec<(Value, Vec<Label>)> = Vec::new();
    for (v, labels) in operands {
        pending.push(diagonals(b, v, labels)?);
    }
    // Sum out what only one operand has and the output does not want.
    for k in 0..pending.len() {
        let (v, labels) = pending[k].clone();
        let needed = |x: Label| {
            output.contains(&x)
                || pending
                    .iter()
                    .enumerate()
                    .any(|(j, (_, l))| j != k && l.contains(&x))
        };
        pending[k] = sum_out(b, v, labels, needed)?;
    }
    let mut acc = pending.remove(0);
    while !pending.is_empty() {
        let next = pending.remove(0);
        let later: Vec<Label> = pending
            .iter()
            .flat_map(|(_, l)| l.iter().copied())
            .chain(output.iter().copied())
            .collect();
        acc = contract(b, acc, next, &later)?;
        let (v, labels) = acc;
        acc = sum_out(b, v, labels, |x| later.contains(&x))?;
    }
    let (v, labels) = acc;
    if labels.len() != output.len() || output.iter().any(|x| !labels.contains(x)) {
        return Err(b.error(format!(
            "cannot produce the output subscripts of \"{equation}\""
        )));
    }
    let perm: Vec<i64> = output
        .iter()
        .map(|x| labels.iter().position(|y| y == x).unwrap_or(0) as i64)
        .collect();
    if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
        return Ok(v);
    }
    b.transpose(v, &perm)
}

/// Takes the diagonal of every label repeated within one operand.
fn diagonals(
    b: &mut Body<'_, '_, '_>,
    mut v: Value,
    mut labels: Vec<Label>,
) -> Result<(Value, Vec<Label>), ImportError> {
    while let Some((i, j)) = (0..labels.len())
        .flat_map(|i| (i + 1..labels.len()).map(move |j| (i, j)))
        .find(|&(i, j)| labels[i] == labels[j])
    {
        let shape = b.shape(v);
        let n = shape[i];
        if shape[j] != n {
            return Err(b.error(format!(
                "a repeated subscript spans axes of sizes {n} and {}",
                shape[j]
            )));
        }
        // The identity pattern over axes i and j, broadcast over the rest.
        let mut mask_shape = vec![1i64; shape.len() - i];
        mask_shape[0] = n;
        mask_shape[j - i] = n;
        let inner: usize = mask_shape[1..].iter().product::<i64>() as usize;
        let stride_j: usize = mask_shape[j - i + 1..].iter().product::<i64>() as usize;
        let eye: Vec<f64> = (0..n as usize * inner)
            .map(|k| f64::from(u8::from(k / inner == k % inner / stride_j % n as usize)))
            .collect();
        let mask = b.constant(&mask_shape, &Type::i1(), &eye)?;
        let zero = b.scalar_like(v, 0.0)?;
        let kept = b.select(mask, v, zero)?;
        v = b.reduce(ReduceKind::Sum, kept, Some(&[j as i64]), false)?;
        labels.remove(j);
    }
    Ok((v, labels))
}

/// Sums the axes whose labels `needed` rejects.
fn sum_out(
    b: &mut Body<'_, '_, '_>,
    v: Value,
    labels: Vec<Label>,
    needed: impl Fn(Label) -> bool,
) -> Result<(Value, Vec<Label>), ImportError> {
    let axes: Vec<i64> = (0..labels.len() as i64)
        .filter(|&a| !needed(labels[a as usize]))
        .collect();
    if axes.is_empty() {
        return Ok((v, labels));
    }
    let v = b.reduce(ReduceKind::Sum, v, Some(&axes), false)?;
    let labels = labels.into_iter().filter(|&x| needed(x)).collect();
    Ok((v, labels))
}

/// Multiplies two operands, contracting the shared labels that `later`
/// (the remaining operands and the output) does not need.
fn contract(
    b: &mut Body<'_, '_, '_>,
    (x, lx): (Value, Vec<Label>),
    (y, ly): (Value, Vec<Label>),
    later: &[Label],
) -> Result<(Value, Vec<Label>), ImportError> {
    let (sx, sy) = (b.shape(x), b.shape(y));
    let size = |labels: &[Label], shape: &[i64], l: Label| {
        shape[labels.iter().position(|&m| m == l).unwrap_or(0)]
    };
    let batch: Vec<Label> = lx
        .iter()
        .copied()
        .filter(|l| ly.contains(l) && later.contains(l))
        .collect();
    let summed: Vec<Label> = lx
        .iter()
        .copied()
        .filter(|l| ly.contains(l) && !later.contains(l))
        .collect();
    let only_x: Vec<Label> = lx.iter().copied().filter(|l| !ly.contains(l)).collect();
    let only_y: Vec<Label> = ly.iter().copied().filter(|l| !lx.contains(l)).collect();
    // Shared labels of size 1 on one side broadcast to the other's size.
    let batch_sizes: Vec<i64> = batch
        .iter()
        .map(|&l| size(&lx, &sx, l).max(size(&ly, &sy, l)))
        .collect();
    let arrange = |b: &mut Body<'_, '_, '_>,
                   v: Value,
                   labels: &[Label],
                   shape: &[i64],
                   order: &[&[Label]]|
     -> Built {
        let wanted: Vec<Label> = order.iter().flat_map(|g| g.iter().copied()).collect();
        let perm: Vec<i64> = wanted
            .iter()
            .map(|l| labels.iter().position(|m| m == l).unwrap_or(0) as i64)
            .collect();
        let mut v = b.transpose(v, &perm)?;
        let mut dims: Vec<i64> = perm.iter().map(|&p| shape[p as usize]).collect();
        for (k, &s) in batch_sizes.iter().enumerate() {
            dims[k] = s;
        }
        if dims != b.shape(v) {
            v = b.expand(v, &dims)?;
        }
        let mut flat = Vec::new();
        let mut at = 0;
        for g in order {
            flat.push(dims[at..at + g.len()].iter().product::<i64>());
            at += g.len();
        }
        b.reshape(v, &flat)
    };
    let xm = arrange(b, x, &lx, &sx, &[&batch, &only_x, &summed])?;
    let ym = arrange(b, y, &ly, &sy, &[&batch, &summed, &only_y])?;
    let product = b.matmul(xm, ym)?;
    let mut dims = batch_sizes.clone();
    dims.extend(only_x.iter().map(|&l| size(&lx, &sx, l)));
    dims.extend(only_y.iter().map(|&l| size(&ly, &sy, l)));
    let v = b.reshape(product, &dims)?;
    let mut labels = batch;
    labels.extend(only_x);
    labels.extend(only_y);
    Ok((v, labels))
}
