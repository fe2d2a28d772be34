//! Moving operations between contexts, so that passes on isolated-from-above
//! ops can run in parallel, each on its own context.

use rustc_hash::FxHashMap;

use crate::context::{BlockId, Context, OpId, OperationState, Value};

impl Context {
    /// Deep-copies `op` (which must be isolated from above) from `self` into
    /// `dest`, returning the new detached op. Block and value numbering of the
    /// copy follows the source order, so the copy is deterministic.
    pub fn copy_op_into(&self, op: OpId, dest: &mut Context) -> OpId {
        let mut values: FxHashMap<Value, Value> = FxHashMap::default();
        copy_rec(self, op, dest, &mut values)
    }
}

fn copy_rec(
    src: &Context,
    op: OpId,
    dest: &mut Context,
    values: &mut FxHashMap<Value, Value>,
) -> OpId {
    let mut regions = Vec::new();
    let mut block_map: FxHashMap<BlockId, BlockId> = FxHashMap::default();
    let mut pending_succ: Vec<(OpId, Vec<BlockId>)> = Vec::new();
    for &r in src.regions(op) {
        let nr = dest.create_region();
        for &b in src.region_blocks(r) {
            let nb = dest.create_block(&[]);
            for &a in src.block_args(b) {
                let na = dest.add_block_argument(
                    nb,
                    src.value_type(a).clone(),
                    src.value_loc(a).cloned(),
                );
                values.insert(a, na);
            }
            dest.append_block(nr, nb);
            block_map.insert(b, nb);
        }
        for &b in src.region_blocks(r) {
            let nb = block_map[&b];
            for child in src.block_ops(b) {
                let c = copy_rec(src, child, dest, values);
                if !src.successors(child).is_empty() {
                    pending_succ.push((c, src.successors(child).to_vec()));
                }
                dest.append_op(nb, c);
            }
        }
        regions.push(nr);
    }
    for (c, succ) in pending_succ {
        let mapped: Vec<BlockId> = succ.iter().map(|s| block_map[s]).collect();
        dest.set_successors(c, &mapped);
    }
    let operands: Vec<Value> = src
        .operands(op)
        .iter()
        .map(|v| {
            *values
                .get(v)
                .expect("copied op must be isolated from above: operand defined outside")
        })
        .collect();
    let state = OperationState {
        name: dest.op_name(src.name_str(op)),
        operands,
        result_types: src.result_types(op),
        properties: src.properties(op).cloned(),
        attributes: src.attributes(op).clone(),
        regions,
        successors: Vec::new(),
        loc: src.loc(op).clone(),
    };
    let new = dest.create_op(state);
    for (i, &r) in src.results(op).iter().enumerate() {
        values.insert(r, dest.result(new, i));
    }
    new
}
