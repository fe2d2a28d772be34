//! `extract-block`: cuts one block of a transformer encoder layer (its MLP,
//! its attention, or the whole layer) out of an imported model into a
//! function of its own, so that the block can be compiled, run and debugged
//! alone (`ipu-opt MODEL --extract mlp:3`, `ipu-run MODEL --extract mlp:3`).
//!
//! The blocks are found through the ONNX node scopes the importer keeps as
//! op locations: the legacy PyTorch exporter names every node after its
//! module path, `/model/encoder/layers.3/mlp/fc1/MatMul`, and `eqsat-fuse`
//! gives a fused op the fused locations of all the ops it replaces. A name
//! places an op in layer `N` (the path component `layers.N`) and in the
//! sub-scope that follows it (`mlp`, `self_attn`, `layer_norm2`, ...), or
//! directly in the layer when the op name follows `layers.N` (the residual
//! adds, `/model/encoder/layers.3/Add_1`). Names of `Constant` nodes are
//! ignored: constants carry no computation, and after CSE one constant (and
//! the locations of every op fused with it) may stand for nodes of many
//! layers. Names that are not paths (initializers such as `onnx::MatMul_664`)
//! place nothing.
//!
//! The blocks (pre-norm transformer layers, as SigLIP's and CLIP's):
//! - `mlp:N`: the ops of layer `N`'s `mlp` scope, the LayerNorm feeding
//!   them and the residual add of the layer that adds their result to the
//!   LayerNorm's input: `x + fc2(gelu(fc1(layer_norm(x))))`;
//! - `attention:N`: the same rule around the `self_attn` scope:
//!   `x + out_proj(attention(qkv(layer_norm(x))))`;
//! - `layer:N`: every op of layer `N`;
//! - `head`: what follows the encoder, outside every layer: the ops of the
//!   model's `post_layernorm` and `head` scopes (SigLIP's final LayerNorm
//!   and attention-pooling head, `/model/post_layernorm/...`,
//!   `/model/head/attention/...`): a function of the last layer's output
//!   returning the post-LayerNorm rows and the pooled output.
//!
//! The block's function (`@layerN_mlp`, `@layerN_attention`, `@layerN`)
//! takes the values the block reads from outside (for these blocks, the one
//! activation), returns the values used after it, and replaces the model's
//! function in the module. Constants the block uses (the weights) are cloned
//! into it and keep sharing their resource bytes.

use std::fmt;
use std::str::FromStr;

use rustc_hash::{FxHashMap, FxHashSet};

use ipuc_dialects::func;
use ipuc_dialects::nn;
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::location::LocKind;
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{Context, Diagnostic, Location, OpId, OperationState, Type, Value};

/// Which part of an encoder layer to cut out.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// LayerNorm, fc1, activation, fc2 and the residual add.
    Mlp,
    /// LayerNorm, attention (with its projections) and the residual add.
    Attention,
    /// The whole layer.
    Layer,
    /// The model's tail after the last layer: the post-LayerNorm and the
    /// pooling head (no layer number).
    Head,
}

impl BlockKind {
    /// Every kind, in the order help texts list them.
    pub const ALL: [BlockKind; 4] = [
        BlockKind::Mlp,
        BlockKind::Attention,
        BlockKind::Layer,
        BlockKind::Head,
    ];

    /// The name used in `KIND:N`.
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Mlp => "mlp",
            BlockKind::Attention => "attention",
            BlockKind::Layer => "layer",
            BlockKind::Head => "head",
        }
    }

    /// Whether `KIND:N` names a layer (every kind but `head`).
    pub fn has_layer(self) -> bool {
        self != BlockKind::Head
    }

    /// The layer sub-scope holding the block's core (none: the whole layer).
    fn core_scope(self) -> Option<&'static str> {
        match self {
            BlockKind::Mlp => Some("mlp"),
            BlockKind::Attention => Some("self_attn"),
            BlockKind::Layer | BlockKind::Head => None,
        }
    }
}

/// A block to extract: `KIND:N`, or `head`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockSpec {
    /// What to cut.
    pub kind: BlockKind,
    /// The encoder layer, counted from 0 (0 for `head`, which has none).
    pub layer: usize,
}

impl BlockSpec {
    /// The name of the extracted function.
    pub fn function_name(&self) -> String {
        match self.kind {
            BlockKind::Layer => format!("layer{}", self.layer),
            BlockKind::Head => "head".to_string(),
            k => format!("layer{}_{}", self.layer, k.name()),
        }
    }
}

impl fmt::Display for BlockSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind.has_layer() {
            true => write!(f, "{}:{}", self.kind.name(), self.layer),
            false => f.write_str(self.kind.name()),
        }
    }
}

impl FromStr for BlockSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<BlockSpec, String> {
        let kinds = || {
            BlockKind::ALL
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if s == BlockKind::Head.name() {
            return Ok(BlockSpec {
                kind: BlockKind::Head,
                layer: 0,
            });
        }
        let Some((kind, layer)) = s.split_once(':') else {
            return Err(format!(
                "block '{s}' must be KIND:LAYER, e.g. mlp:3, or head (kinds: {})",
                kinds()
            ));
        };
        let kind = BlockKind::ALL
            .into_iter()
            .find(|k| k.name() == kind)
            .ok_or_else(|| format!("unknown block kind '{kind}' in '{s}' (kinds: {})", kinds()))?;
        if !kind.has_layer() {
            return Err(format!(
                "block '{s}': {} takes no layer (it follows the last one); write {}",
                kind.name(),
                kind.name()
            ));
        }
        let layer = layer.parse().map_err(|_| {
            format!("layer '{layer}' in '{s}' must be a non-negative integer (layers count from 0)")
        })?;
        Ok(BlockSpec { kind, layer })
    }
}

/// Where one op sits in the encoder, from its location's names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Placement {
    /// `(layer, sub-scope)` pairs; the sub-scope is `None` for ops directly
    /// in the layer.
    scopes: Vec<(usize, Option<String>)>,
    /// Whether a name places the op in the model's tail (see
    /// [`in_tail`]).
    tail: bool,
}

impl Placement {
    fn of(loc: &Location) -> Placement {
        let mut p = Placement::default();
        p.collect(loc);
        p
    }

    fn collect(&mut self, loc: &Location) {
        match loc.kind() {
            LocKind::Name { name, child } => {
                if let Some(scope) = layer_scope(name) {
                    if !self.scopes.contains(&scope) {
                        self.scopes.push(scope);
                    }
                }
                self.tail |= in_tail(name);
                if let Some(c) = child {
                    self.collect(c);
                }
            }
            LocKind::CallSite { callee, .. } => self.collect(callee),
            LocKind::Fused { locations, .. } => locations.iter().for_each(|l| self.collect(l)),
            _ => {}
        }
    }

    /// The layers this op is in.
    fn layers(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.scopes.iter().map(|s| s.0).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// `(N, sub-scope)` of a node name `/.../layers.N/SUB/.../Op` (sub-scope
/// `None` for `/.../layers.N/Op`); `None` for names that are not module
/// paths and for `Constant` nodes.
fn layer_scope(name: &str) -> Option<(usize, Option<String>)> {
    if !name.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
    let op = parts.last()?;
    if *op == "Constant" || op.starts_with("Constant_") {
        return None;
    }
    let (i, layer) = parts
        .iter()
        .enumerate()
        .find_map(|(i, p)| Some((i, p.strip_prefix("layers.")?.parse::<usize>().ok()?)))?;
    // The last component is the op itself, not a scope.
    let sub = (i + 2 < parts.len()).then(|| parts[i + 1].to_string());
    Some((layer, sub))
}

/// The scopes of the model's tail, after the encoder layers: SigLIP's
/// final LayerNorm and its attention-pooling head.
const TAIL_SCOPES: [&str; 2] = ["post_layernorm", "head"];

/// Whether node name `name` is a path through one of [`TAIL_SCOPES`]
/// outside every layer (`/model/head/attention/MatMul`), not a `Constant`
/// node.
fn in_tail(name: &str) -> bool {
    if !name.starts_with('/') {
        return false;
    }
    let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
    let Some((op, scopes)) = parts.split_last() else {
        return false;
    };
    if *op == "Constant" || op.starts_with("Constant_") {
        return false;
    }
    !scopes.iter().any(|p| p.starts_with("layers."))
        && scopes.iter().any(|p| TAIL_SCOPES.contains(p))
}

/// The model function: the first `func.func` with a body whose ops name
/// encoder layers. Also returns the number of layers named.
fn model_function(ctx: &Context, module: OpId) -> Option<(OpId, usize)> {
    let funcs = ctx
        .regions(module)
        .iter()
        .flat_map(|&r| ctx.region_blocks(r).to_vec())
        .flat_map(|b| ctx.block_ops_vec(b))
        .filter(|&op| ctx.name_str(op) == func::FUNC);
    for f in funcs {
        let Some(entry) = func::entry_block(ctx, f) else {
            continue;
        };
        let layers = ctx
            .block_ops(entry)
            .flat_map(|op| Placement::of(ctx.loc(op)).layers())
            .max();
        if let Some(max) = layers {
            return Some((f, max + 1));
        }
    }
    None
}

fn is_constant(ctx: &Context, op: OpId) -> bool {
    ctx.name_str(op) == nn::CONSTANT
}

/// Extracts `spec` from the model function of `module`, replacing that
/// function with the block's; returns the new function.
pub fn extract_block(ctx: &mut Context, module: OpId, spec: BlockSpec) -> Result<OpId, Diagnostic> {
    let (source, num_layers) = model_function(ctx, module).ok_or_else(|| {
        Diagnostic::error(
            ctx.loc(module).clone(),
            format!(
                "cannot extract {spec}: no op location names an encoder layer (a node scope such \
                 as '/model/encoder/layers.0/mlp/fc1/MatMul'); extraction needs the ONNX node \
                 names that the importer keeps as locations, which exporters without module \
                 scopes (e.g. the dynamo exporter's 'node_MatMul_8') do not give"
            ),
        )
    })?;
    if spec.kind == BlockKind::Head {
        return extract_tail(ctx, spec, source);
    }
    if spec.layer >= num_layers {
        return Err(Diagnostic::error(
            ctx.loc(source).clone(),
            format!(
                "cannot extract {spec}: layer {} is out of range, the model has {num_layers} \
                 encoder layer{} (0..={})",
                spec.layer,
                if num_layers == 1 { "" } else { "s" },
                num_layers - 1
            ),
        ));
    }
    let entry = func::entry_block(ctx, source).expect("model_function has a body");
    let ops: Vec<OpId> = ctx.block_ops_vec(entry);
    let placements: Vec<Placement> = ops.iter().map(|&op| Placement::of(ctx.loc(op))).collect();
    // Every computing op of the layer, checked for ops that straddle layers.
    let mut in_layer: Vec<usize> = Vec::new();
    for (i, p) in placements.iter().enumerate() {
        if is_constant(ctx, ops[i]) || !p.layers().contains(&spec.layer) {
            continue;
        }
        if p.layers().len() > 1 {
            let layers: Vec<String> = p.layers().iter().map(|l| l.to_string()).collect();
            return Err(Diagnostic::op_error(
                ctx,
                ops[i],
                format!(
                    "cannot extract {spec}: this op belongs to layers {} at once (its location \
                     fuses nodes of several layers), so no block boundary separates them",
                    layers.join(" and ")
                ),
            ));
        }
        in_layer.push(i);
    }
    let members: FxHashSet<OpId> = match spec.kind.core_scope() {
        None => in_layer.iter().map(|&i| ops[i]).collect(),
        Some(scope) => residual_block(ctx, spec, scope, &ops, &placements, &in_layer, source)?,
    };
    build_block_function(ctx, spec, source, &ops, &members)
}

/// `head`: every computing op whose location places it in the model's
/// tail, none of them in a layer too.
fn extract_tail(ctx: &mut Context, spec: BlockSpec, source: OpId) -> Result<OpId, Diagnostic> {
    let entry = func::entry_block(ctx, source).expect("model_function has a body");
    let ops: Vec<OpId> = ctx.block_ops_vec(entry);
    let mut members: FxHashSet<OpId> = FxHashSet::default();
    for &op in &ops {
        let p = Placement::of(ctx.loc(op));
        if is_constant(ctx, op) || !p.tail {
            continue;
        }
        if let Some(&layer) = p.layers().first() {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "cannot extract {spec}: this op belongs to layer {layer} and to the model's \
                     tail at once (its location fuses nodes of both), so no boundary separates them"
                ),
            ));
        }
        members.insert(op);
    }
    if members.is_empty() {
        return Err(Diagnostic::error(
            ctx.loc(source).clone(),
            format!(
                "cannot extract {spec}: no op location names a '{}' scope outside the encoder \
                 layers (e.g. '/model/head/attention/MatMul'); the model has no tail after its \
                 layers that extraction can find",
                TAIL_SCOPES.join("' or '")
            ),
        ));
    }
    build_block_function(ctx, spec, source, &ops, &members)
}

/// The ops of a residual sub-block: the core scope, the LayerNorm feeding
/// it, and the layer's add of the core's result and the LayerNorm's input.
fn residual_block(
    ctx: &Context,
    spec: BlockSpec,
    scope: &str,
    ops: &[OpId],
    placements: &[Placement],
    in_layer: &[usize],
    source: OpId,
) -> Result<FxHashSet<OpId>, Diagnostic> {
    let has_scope = |i: usize, s: Option<&str>| {
        placements[i]
            .scopes
            .iter()
            .any(|(l, sub)| *l == spec.layer && sub.as_deref() == s)
    };
    let mut members: FxHashSet<OpId> = in_layer
        .iter()
        .filter(|&&i| has_scope(i, Some(scope)))
        .map(|&i| ops[i])
        .collect();
    let error = |msg: String| {
        Diagnostic::error(
            ctx.loc(source).clone(),
            format!("cannot extract {spec}: {msg}"),
        )
    };
    if members.is_empty() {
        let subs: Vec<String> = in_layer
            .iter()
            .flat_map(|&i| placements[i].scopes.iter())
            .filter_map(|(_, s)| s.clone())
            .fold(Vec::new(), |mut v, s| {
                if !v.contains(&s) {
                    v.push(s);
                }
                v
            });
        return Err(error(format!(
            "layer {} has no op in a '{scope}' scope (its scopes: {})",
            spec.layer,
            subs.join(", ")
        )));
    }
    let [core_input] = external_inputs(ctx, ops, &members)[..] else {
        return Err(error(format!(
            "the '{scope}' scope of layer {} reads {} activations from outside; a residual block \
             reads exactly one",
            spec.layer,
            external_inputs(ctx, ops, &members).len()
        )));
    };
    let norm = ctx.defining_op(core_input).filter(|&op| {
        ctx.name_str(op) == nn::LAYER_NORMALIZATION && members_layer(ctx, op, spec.layer)
    });
    let Some(norm) = norm else {
        return Err(error(format!(
            "the '{scope}' scope of layer {} is not fed by a LayerNormalization of that layer",
            spec.layer
        )));
    };
    members.insert(norm);
    let x = ctx.operand(norm, 0);
    let outputs = external_outputs(ctx, ops, &members);
    let residual = outputs.iter().find_map(|&out| {
        ctx.uses(out).iter().map(|u| u.op).find(|&user| {
            ctx.name_str(user) == nn::BinaryKind::Add.name()
                && members_layer(ctx, user, spec.layer)
                && {
                    let o = ctx.operands(user);
                    (o[0] == x && o[1] == out) || (o[0] == out && o[1] == x)
                }
        })
    });
    let Some(residual) = residual else {
        return Err(error(format!(
            "no add in layer {} takes the '{scope}' result and the LayerNorm's input (the \
             residual connection of a pre-norm layer)",
            spec.layer
        )));
    };
    members.insert(residual);
    Ok(members)
}

/// Whether `op`'s location places it in `layer` (and only there).
fn members_layer(ctx: &Context, op: OpId, layer: usize) -> bool {
    Placement::of(ctx.loc(op)).layers() == [layer]
}

/// Values the members read that neither a member nor a constant defines, in
/// order of first use.
fn external_inputs(ctx: &Context, ops: &[OpId], members: &FxHashSet<OpId>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for &op in ops.iter().filter(|op| members.contains(op)) {
        for &v in ctx.operands(op) {
            let inside = ctx
                .defining_op(v)
                .is_some_and(|d| members.contains(&d) || is_constant(ctx, d));
            if !inside && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// Results of members used by an op that is not a member, in op order.
fn external_outputs(ctx: &Context, ops: &[OpId], members: &FxHashSet<OpId>) -> Vec<Value> {
    ops.iter()
        .filter(|op| members.contains(op))
        .flat_map(|&op| ctx.results(op).to_vec())
        .filter(|&r| ctx.uses(r).iter().any(|u| !members.contains(&u.op)))
        .collect()
}

/// Builds the block's function from `members` (cloned in their order, with
/// the constants they use) and puts it in place of `source`.
fn build_block_function(
    ctx: &mut Context,
    spec: BlockSpec,
    source: OpId,
    ops: &[OpId],
    members: &FxHashSet<OpId>,
) -> Result<OpId, Diagnostic> {
    let inputs = external_inputs(ctx, ops, members);
    let outputs = external_outputs(ctx, ops, members);
    if outputs.is_empty() {
        return Err(Diagnostic::error(
            ctx.loc(source).clone(),
            format!("cannot extract {spec}: nothing after the block uses its result"),
        ));
    }
    let input_types: Vec<Type> = inputs.iter().map(|&v| ctx.value_type(v).clone()).collect();
    let output_types: Vec<Type> = outputs.iter().map(|&v| ctx.value_type(v).clone()).collect();
    let first = ops.iter().copied().find(|op| members.contains(op));
    let loc = first.map_or_else(|| ctx.loc(source).clone(), |op| ctx.loc(op).clone());
    let f = func::build_func(
        ctx,
        &spec.function_name(),
        &input_types,
        &output_types,
        loc.clone(),
    );
    let body = func::entry_block(ctx, f).expect("build_func makes an entry block");
    let mut mapping: FxHashMap<Value, Value> = inputs
        .iter()
        .copied()
        .zip(ctx.block_args(body).to_vec())
        .collect();
    for &op in ops.iter().filter(|op| members.contains(op)) {
        for v in ctx.operands(op).to_vec() {
            if mapping.contains_key(&v) {
                continue;
            }
            if let Some(c) = ctx.defining_op(v).filter(|&d| is_constant(ctx, d)) {
                let copy = ctx.clone_op(c, &mut mapping);
                ctx.append_op(body, copy);
            }
        }
        let copy = ctx.clone_op(op, &mut mapping);
        ctx.append_op(body, copy);
    }
    let returned: Vec<Value> = outputs.iter().map(|v| mapping[v]).collect();
    let ret = OperationState::new(ctx.op_name(func::RETURN), loc).operands(&returned);
    let ret = ctx.create_op(ret);
    ctx.append_op(body, ret);
    ctx.insert_op_before(source, f);
    ctx.erase_op(source);
    tracing::debug!(
        "extract-block: {spec} is {} ops with {} input(s) and {} output(s)",
        members.len(),
        inputs.len(),
        outputs.len()
    );
    Ok(f)
}

/// The pipeline of the tools' `--extract BLOCK`: fuse (so the block's ops
/// are the fused ones the backend lowers), fold each LayerNorm's scale
/// and shift into its products (`fold-layernorm-affine`, as the whole
/// model's compile does), then cut `block` out.
pub fn extract_pipeline(block: &str) -> String {
    format!(
        "builtin.module(func.func(eqsat-fuse,canonicalize,fold-layernorm-affine),extract-block{{block={block}}})"
    )
}

/// The pass.
#[derive(Clone)]
pub struct ExtractBlock {
    spec: BlockSpec,
}

ipuc_ir::declare_pass! {
    ExtractBlock => "extract-block" {
        summary: "Replace the model function by one block of an encoder layer (mlp:N, attention:N, layer:N) or its tail (head), found through the ONNX node scopes in op locations",
        options ExtractBlockOptions {
            /// The block: mlp:N (LayerNorm, MLP, residual add), attention:N (LayerNorm, attention, residual add), layer:N, or head (the post-LayerNorm and pooling head after the last layer); layers count from 0
            block: String = String::new() => "block",
        }
        statistics ExtractBlockStatistics {
            /// Ops in the extracted block (constants not counted)
            ops: u64 => "num-block-ops",
        }
    }
}

impl DeclaredPass for ExtractBlock {
    fn create(o: &ExtractBlockOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        if o.block.is_empty() {
            return Err(PassCreateError::Refused(
                "extract-block needs a block, e.g. extract-block{block=mlp:3}".into(),
            ));
        }
        Ok(ExtractBlock {
            spec: o.block.parse().map_err(PassCreateError::Refused)?,
        })
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut ExtractBlockStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let f = extract_block(ctx, op, self.spec)?;
        let body = func::entry_block(ctx, f).expect("a block function has a body");
        stats.ops += ctx
            .block_ops(body)
            .filter(|&o| !is_constant(ctx, o) && ctx.name_str(o) != func::RETURN)
            .count() as u64;
        Ok(PreservedAnalyses::none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_block_specs() {
        assert_eq!(
            "mlp:3".parse::<BlockSpec>().unwrap(),
            BlockSpec {
                kind: BlockKind::Mlp,
                layer: 3
            }
        );
        assert_eq!(
            "layer:0".parse::<BlockSpec>().unwrap().function_name(),
            "layer0"
        );
        let e = "ffn:1".parse::<BlockSpec>().unwrap_err();
        assert!(
            e.contains("unknown block kind 'ffn'") && e.contains("mlp, attention, layer"),
            "{e}"
        );
        assert!("mlp"
            .parse::<BlockSpec>()
            .unwrap_err()
            .contains("KIND:LAYER"));
        assert!("mlp:-1"
            .parse::<BlockSpec>()
            .unwrap_err()
            .contains("non-negative"));
        // The tail has no layer number, and prints as it is written.
        let head: BlockSpec = "head".parse().unwrap();
        assert_eq!(head.kind, BlockKind::Head);
        assert_eq!(
            (head.to_string().as_str(), head.function_name().as_str()),
            ("head", "head")
        );
        assert!("head:3"
            .parse::<BlockSpec>()
            .unwrap_err()
            .contains("head takes no layer"));
        assert_eq!("mlp:2".parse::<BlockSpec>().unwrap().to_string(), "mlp:2");
    }

    #[test]
    fn reads_tail_scopes_from_node_names() {
        assert!(in_tail("/model/post_layernorm/LayerNormalization"));
        assert!(in_tail("/model/head/attention/MatMul_1"));
        assert!(in_tail("/vision_model/head/mlp/fc1/MatMul"));
        // A layer's own 'head'-named scope is not the model's tail.
        assert!(!in_tail("/model/encoder/layers.3/head/MatMul"));
        // Constants are shared after CSE; names that are not paths place nothing.
        assert!(!in_tail("/model/head/attention/Constant_4"));
        assert!(!in_tail("model.head.attention.in_proj_weight"));
        assert!(!in_tail("/model/embeddings/patch_embedding/Conv"));
        assert!(!in_tail("/model/head"));
    }

    #[test]
    fn reads_layer_scopes_from_node_names() {
        assert_eq!(
            layer_scope("/model/encoder/layers.3/mlp/fc1/MatMul"),
            Some((3, Some("mlp".into())))
        );
        assert_eq!(
            layer_scope("/vision_model/encoder/layers.12/Add_1"),
            Some((12, None))
        );
        // Constants are shared across layers after CSE; initializers are not paths.
        assert_eq!(
            layer_scope("/model/encoder/layers.0/self_attn/Constant_9"),
            None
        );
        assert_eq!(layer_scope("model.encoder.layers.1.mlp.fc1.bias"), None);
        assert_eq!(layer_scope("/model/embeddings/patch_embedding/Conv"), None);
    }
}
