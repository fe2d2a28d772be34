//! The recurrent layers `RNN`, `GRU` and `LSTM`, unrolled over their static
//! sequence length into `nn` ops as the ONNX equations state them: the
//! input projections of every step are one `nn.matmul` per gate, and each
//! step adds the recurrent projection of the previous hidden state and
//! applies the gate activations. Both directions and both layouts are
//! supported; `sequence_lens` must be constant and equal to the sequence
//! length (shorter sequences would need per-batch masking, not built).

use ipuc_dialects::nn::{BinaryKind, UnaryKind};
use ipuc_ir::Value;

use super::body::{Body, Built};
use super::{ImportError, NodeResult};
use crate::onnx::{Attribute, Node};

/// The ops of this family.
pub(super) const OPS: &[&str] = &["RNN", "GRU", "LSTM"];

/// A gate activation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Activation {
    Sigmoid,
    Tanh,
    Relu,
}

/// Which layer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Cell {
    Rnn,
    Gru { linear_before_reset: bool },
    Lstm,
}

impl Cell {
    /// The number of gates stacked in `W` and `R`.
    fn gates(self) -> i64 {
        match self {
            Cell::Rnn => 1,
            Cell::Gru { .. } => 3,
            Cell::Lstm => 4,
        }
    }
}

pub(super) fn import(imp: &mut super::Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    recurrent(&mut b)
}

/// The activations of one direction (`activations` lists them per direction).
fn activations(
    b: &Body<'_, '_, '_>,
    cell: Cell,
    dirs: usize,
) -> Result<Vec<Vec<Activation>>, ImportError> {
    let defaults: &[Activation] = match cell {
        Cell::Rnn => &[Activation::Tanh],
        Cell::Gru { .. } => &[Activation::Sigmoid, Activation::Tanh],
        Cell::Lstm => &[Activation::Sigmoid, Activation::Tanh, Activation::Tanh],
    };
    let names: Vec<String> = match b.node.attribute("activations") {
        None => return Ok(vec![defaults.to_vec(); dirs]),
        Some(Attribute::Strings(s)) => s.clone(),
        Some(_) => return Err(b.error("`activations` must be a list of strings")),
    };
    if names.len() != defaults.len() * dirs {
        return Err(b.error(format!(
            "`activations` has {} entries, {} needed",
            names.len(),
            defaults.len() * dirs
        )));
    }
    let parsed = names
        .iter()
        .map(|n| match n.to_ascii_lowercase().as_str() {
            "sigmoid" => Ok(Activation::Sigmoid),
            "tanh" => Ok(Activation::Tanh),
            "relu" => Ok(Activation::Relu),
            other => Err(b.error(format!(
                "activation \"{other}\" is not supported (Sigmoid, Tanh, Relu)"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(parsed.chunks(defaults.len()).map(<[_]>::to_vec).collect())
}

fn activate(b: &mut Body<'_, '_, '_>, f: Activation, x: Value) -> Built {
    b.unary(
        match f {
            Activation::Sigmoid => UnaryKind::Sigmoid,
            Activation::Tanh => UnaryKind::Tanh,
            Activation::Relu => UnaryKind::Relu,
        },
        x,
    )
}

/// Rows `[d, g*h, (g+1)*h)` of a `[dirs, G*H, ...]` weight, as `[..., H]`
/// (transposed for a right-hand matmul operand).
fn gate_weight(b: &mut Body<'_, '_, '_>, w: Value, d: i64, g: i64, h: i64) -> Built {
    let dir = b.slice(w, 0, d, d + 1)?;
    let rows = b.slice(dir, 1, g * h, (g + 1) * h)?;
    let cols = b.shape(rows)[2];
    let m = b.reshape(rows, &[h, cols])?;
    b.transpose(m, &[1, 0])
}

/// Entries `[d, offset + g*h, offset + (g+1)*h)` of a `[dirs, n]` vector.
fn gate_vector(b: &mut Body<'_, '_, '_>, v: Value, d: i64, start: i64, h: i64) -> Built {
    let dir = b.slice(v, 0, d, d + 1)?;
    let part = b.slice(dir, 1, start, start + h)?;
    b.reshape(part, &[h])
}

fn recurrent(b: &mut Body<'_, '_, '_>) -> NodeResult {
    let cell = match b.node.op_type.as_str() {
        "RNN" => Cell::Rnn,
        "GRU" => Cell::Gru {
            linear_before_reset: b.node.int_attr("linear_before_reset", 0)? != 0,
        },
        _ => Cell::Lstm,
    };
    if b.node.attribute("clip").is_some() {
        return Err(b.error("`clip` is not supported"));
    }
    if b.node.int_attr("input_forget", 0)? != 0 {
        return Err(b.error("`input_forget` (coupled gates) is not supported"));
    }
    let (x, w, r) = (b.input(0)?, b.input(1)?, b.input(2)?);
    let bias = b.optional_input(3)?;
    let h = b.node.int_attr("hidden_size", 0)?;
    let layout = b.node.int_attr("layout", 0)?;
    let x = if layout == 1 {
        b.transpose(x, &[1, 0, 2])?
    } else {
        x
    };
    let xs = b.shape(x);
    let (seq, batch) = (xs[0], xs[1]);
    if let Some(lens) = b.imp.optional_const_ints(b.node, 4, "sequence lengths")? {
        if lens.iter().any(|&l| l != seq) {
            return Err(b.error(format!(
                "sequence lengths {lens:?} differ from the sequence length {seq}; only full sequences are supported"
            )));
        }
    }
    let dirs: Vec<(i64, bool)> = match b.node.string_attr("direction", "forward")? {
        "forward" => vec![(0, false)],
        "reverse" => vec![(0, true)],
        "bidirectional" => vec![(0, false), (1, true)],
        other => return Err(b.error(format!("`direction` \"{other}\" is not supported"))),
    };
    let acts = activations(b, cell, dirs.len())?;
    let gates = cell.gates();
    let elem = b.element(x)?;
    let initial = |b: &mut Body<'_, '_, '_>, i: usize, d: i64| -> Built {
        match b.optional_input(i)? {
            Some(v) => {
                let v = if layout == 1 {
                    b.transpose(v, &[1, 0, 2])?
                } else {
                    v
                };
                let one = b.slice(v, 0, d, d + 1)?;
                b.reshape(one, &[batch, h])
            }
            None => b.constant(&[batch, h], &elem, &vec![0.0; (batch * h) as usize]),
        }
    };
    let (mut ys, mut yhs, mut ycs) = (Vec::new(), Vec::new(), Vec::new());
    for (k, &(d, reverse)) in dirs.iter().enumerate() {
        let act = &acts[k];
        // Per gate: the input projection of every step with both biases,
        // the recurrent weight, and the recurrent bias on its own (GRU's
        // linear_before_reset needs it inside the reset product).
        let mut xw = Vec::new();
        let mut rw = Vec::new();
        let mut rb = Vec::new();
        for g in 0..gates {
            let wt = gate_weight(b, w, d, g, h)?;
            let mut proj = b.matmul(x, wt)?;
            rw.push(gate_weight(b, r, d, g, h)?);
            match bias {
                Some(bv) => {
                    let wb = gate_vector(b, bv, d, g * h, h)?;
                    proj = b.binary(BinaryKind::Add, proj, wb)?;
                    rb.push(Some(gate_vector(b, bv, d, (gates + g) * h, h)?));
                }
                None => rb.push(None),
            }
            xw.push(proj);
        }
        let peep = match (cell, b.optional_input(7)?) {
            (Cell::Lstm, Some(p)) => Some(
                (0..3)
                    .map(|g| gate_vector(b, p, d, g * h, h))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => None,
        };
        let mut hidden = initial(b, 5, d)?;
        let mut state = if cell == Cell::Lstm {
            Some(initial(b, 6, d)?)
        } else {
            None
        };
        let mut outputs: Vec<Option<Value>> = vec![None; seq as usize];
        for step in 0..seq {
            let t = if reverse { seq - 1 - step } else { step };
            let mut pre = Vec::new();
            for &proj in &xw {
                let xt = b.slice(proj, 0, t, t + 1)?;
                pre.push(b.reshape(xt, &[batch, h])?);
            }
            // hidden · R_g (+ Rb_g)
            let recur = |b: &mut Body<'_, '_, '_>, g: usize, from: Value| -> Built {
                let v = b.matmul(from, rw[g])?;
                match rb[g] {
                    Some(bias) => b.binary(BinaryKind::Add, v, bias),
                    None => Ok(v),
                }
            };
            hidden = match cell {
                Cell::Rnn => {
                    let hr = recur(b, 0, hidden)?;
                    let s = b.binary(BinaryKind::Add, pre[0], hr)?;
                    activate(b, act[0], s)?
                }
                Cell::Gru {
                    linear_before_reset,
                } => {
                    let zr = recur(b, 0, hidden)?;
                    let z = b.binary(BinaryKind::Add, pre[0], zr)?;
                    let z = activate(b, act[0], z)?;
                    let rr = recur(b, 1, hidden)?;
                    let rg = b.binary(BinaryKind::Add, pre[1], rr)?;
                    let rg = activate(b, act[0], rg)?;
                    let hh = if linear_before_reset {
                        let hr = recur(b, 2, hidden)?;
                        b.binary(BinaryKind::Mul, rg, hr)?
                    } else {
                        let reset = b.binary(BinaryKind::Mul, rg, hidden)?;
                        recur(b, 2, reset)?
                    };
                    let cand = b.binary(BinaryKind::Add, pre[2], hh)?;
                    let cand = activate(b, act[1], cand)?;
                    // (1 - z) * cand + z * hidden = cand + z * (hidden - cand)
                    let one = b.scalar_like(z, 1.0)?;
                    let keep = b.binary(BinaryKind::Sub, one, z)?;
                    let a = b.binary(BinaryKind::Mul, keep, cand)?;
                    let c = b.binary(BinaryKind::Mul, z, hidden)?;
                    b.binary(BinaryKind::Add, a, c)?
                }
                Cell::Lstm => {
                    let c_prev = state.expect("an LSTM has a cell state");
                    let gate = |b: &mut Body<'_, '_, '_>,
                                g: usize,
                                peephole: Option<(usize, Value)>|
                     -> Built {
                        let hr = recur(b, g, hidden)?;
                        let mut s = b.binary(BinaryKind::Add, pre[g], hr)?;
                        if let (Some((p, c)), Some(ps)) = (peephole, &peep) {
                            let pc = b.binary(BinaryKind::Mul, ps[p], c)?;
                            s = b.binary(BinaryKind::Add, s, pc)?;
                        }
                        Ok(s)
                    };
                    // W order i, o, f, c; P order i, o, f.
                    let i = gate(b, 0, Some((0, c_prev)))?;
                    let i = activate(b, act[0], i)?;
                    let f = gate(b, 2, Some((2, c_prev)))?;
                    let f = activate(b, act[0], f)?;
                    let c = gate(b, 3, None)?;
                    let c = activate(b, act[1], c)?;
                    let fc = b.binary(BinaryKind::Mul, f, c_prev)?;
                    let ic = b.binary(BinaryKind::Mul, i, c)?;
                    let c_new = b.binary(BinaryKind::Add, fc, ic)?;
                    let o = gate(b, 1, Some((1, c_new)))?;
                    let o = activate(b, act[0], o)?;
                    let hc = activate(b, act[2], c_new)?;
                    state = Some(c_new);
                    b.binary(BinaryKind::Mul, o, hc)?
                }
            };
            outputs[t as usize] = Some(b.unsqueeze(hidden, &[0])?);
        }
        let steps: Vec<Value> = outputs.into_iter().flatten().collect();
        ys.push(b.concat(&steps, 0)?);
        yhs.push(b.unsqueeze(hidden, &[0])?);
        if let Some(c) = state {
            ycs.push(b.unsqueeze(c, &[0])?);
        }
    }
    // Y [seq, dirs, batch, H]; Y_h, Y_c [dirs, batch, H] (layout 1: batch first).
    let per_dir: Vec<Value> = ys
        .into_iter()
        .map(|y| b.unsqueeze(y, &[1]))
        .collect::<Result<_, _>>()?;
    let mut y = b.concat(&per_dir, 1)?;
    let mut y_h = b.concat(&yhs, 0)?;
    let mut y_c = if ycs.is_empty() {
        None
    } else {
        Some(b.concat(&ycs, 0)?)
    };
    if layout == 1 {
        y = b.transpose(y, &[2, 0, 1, 3])?;
        y_h = b.transpose(y_h, &[1, 0, 2])?;
        y_c = y_c.map(|c| b.transpose(c, &[1, 0, 2])).transpose()?;
    }
    let mut results = vec![y, y_h];
    results.extend(y_c);
    Ok(results)
}
