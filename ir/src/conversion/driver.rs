//! The conversion driver: legalizes every op nested in a root, then checks
//! the result against the target and reports what stayed illegal.

use rustc_hash::FxHashSet;

use super::rewriter::ConversionRewriter;
use super::state::{CastKind, ConversionState};
use super::target::{ConversionTarget, Legality};
use super::type_converter::{InsertPoint, TypeConverter};
use super::ConversionPatternSet;
use crate::context::{Context, OpId, Value, WalkOrder};
use crate::diagnostics::Diagnostic;
use crate::location::Location;
use crate::types::Type;

/// Which ops must be legal when the conversion ends.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ConversionMode {
    /// Ops marked illegal must be converted; ops the target does not know may remain.
    Partial,
    /// Every op must end legal.
    Full,
}

impl ConversionMode {
    fn as_str(self) -> &'static str {
        match self {
            ConversionMode::Partial => "partial",
            ConversionMode::Full => "full",
        }
    }
}

/// Driver limits.
#[derive(Clone, Debug)]
pub struct ConversionConfig {
    /// How many times the ops produced by patterns may be legalized in turn
    /// (guards against patterns that rewrite an op into itself).
    pub max_pattern_depth: u32,
}

impl Default for ConversionConfig {
    fn default() -> Self {
        ConversionConfig {
            max_pattern_depth: 32,
        }
    }
}

/// What a successful conversion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConversionStats {
    /// Successful pattern applications.
    pub rewrites: u64,
    /// Materializations created (source and target).
    pub materializations: u64,
    /// Conversion casts removed at the end (unused or round trips).
    pub casts_removed: u64,
    /// Conversion casts left in the IR at the boundary of converted code.
    pub casts_remaining: u64,
}

/// Converts the ops nested in `root` (not `root` itself) so that no op
/// marked illegal remains; ops without a legality rule may stay.
///
/// On failure the IR is left partially converted (see the module docs).
pub fn apply_partial_conversion(
    ctx: &mut Context,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    type_converter: Option<&TypeConverter>,
) -> Result<ConversionStats, Diagnostic> {
    convert(
        ctx,
        root,
        target,
        patterns,
        type_converter,
        ConversionMode::Partial,
        &ConversionConfig::default(),
    )
}

/// Converts the ops nested in `root` (not `root` itself) so that every op is legal.
///
/// On failure the IR is left partially converted (see the module docs).
pub fn apply_full_conversion(
    ctx: &mut Context,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    type_converter: Option<&TypeConverter>,
) -> Result<ConversionStats, Diagnostic> {
    convert(
        ctx,
        root,
        target,
        patterns,
        type_converter,
        ConversionMode::Full,
        &ConversionConfig::default(),
    )
}

/// The driver behind [`apply_partial_conversion`] and [`apply_full_conversion`],
/// with explicit limits.
pub fn convert(
    ctx: &mut Context,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    type_converter: Option<&TypeConverter>,
    mode: ConversionMode,
    config: &ConversionConfig,
) -> Result<ConversionStats, Diagnostic> {
    let mut state = ConversionState::default();
    let mut stats = ConversionStats::default();
    // Ops whose legalization hit the depth limit, for the report.
    let mut too_deep: FxHashSet<OpId> = FxHashSet::default();
    let mut skip: FxHashSet<OpId> = FxHashSet::default();

    // Pre-order, so producers are converted before their users; the stack
    // pops from the back.
    let mut worklist: Vec<(OpId, u32)> = ctx
        .collect_ops(root, WalkOrder::PreOrder)
        .into_iter()
        .filter(|&o| o != root)
        .map(|o| (o, 0))
        .rev()
        .collect();
    while let Some((op, depth)) = worklist.pop() {
        if !ctx.is_live(op) || skip.contains(&op) || state.cast_set.contains(&op) {
            continue;
        }
        match target.legality(ctx, op) {
            Legality::Legal { recursive } => {
                if recursive {
                    ctx.walk(op, WalkOrder::PreOrder, &mut |_, o| {
                        skip.insert(o);
                    });
                }
                continue;
            }
            Legality::Illegal | Legality::DynamicallyIllegal | Legality::Unknown => {}
        }
        let candidates = patterns.candidates(ctx.name_str(op));
        if candidates.is_empty() {
            continue;
        }
        if depth > config.max_pattern_depth {
            too_deep.insert(op);
            continue;
        }
        let operands = match remap_operands(ctx, op, type_converter, &mut state) {
            Ok(o) => o,
            Err(ty) => {
                let name = ctx.name_str(op).to_string();
                state.unconvertible_operands.entry(name).or_insert(ty);
                continue;
            }
        };
        let op_name = ctx.name_str(op).to_string();
        for p in candidates {
            let mut rw = ConversionRewriter::new(ctx, type_converter, &mut state);
            if p.match_and_rewrite_one_to_n(op, &operands, &mut rw) {
                stats.rewrites += 1;
                tracing::trace!(pattern = p.name(), "conversion pattern applied");
                let ConversionRewriter {
                    created, modified, ..
                } = rw;
                // Legalize what the pattern produced next, in creation order.
                let mut new_ops = Vec::new();
                for o in created {
                    if ctx.is_live(o) {
                        new_ops.extend(ctx.collect_ops(o, WalkOrder::PreOrder));
                    }
                }
                new_ops.extend(modified.into_iter().filter(|&o| ctx.is_live(o)));
                worklist.extend(new_ops.into_iter().rev().map(|o| (o, depth + 1)));
                break;
            }
            if rw.changed {
                tracing::warn!(
                    pattern = p.name(),
                    "conversion pattern changed the IR and then failed; the IR is unspecified"
                );
            }
            if let Some(pattern) = rw.refused_one_to_n.take() {
                state
                    .one_to_n_refusals
                    .entry(op_name.clone())
                    .or_insert(pattern);
            }
        }
    }

    stats.casts_removed = clean_up_casts(ctx, &state);
    if let Some(converter) = type_converter {
        build_materializations(ctx, converter, &mut state);
    }
    stats.casts_remaining = state
        .casts
        .iter()
        .filter(|&&(c, _)| is_conversion_cast(ctx, c))
        .count() as u64;
    stats.materializations = state.materializations;

    if let Some((first, rest)) = state.errors.split_first() {
        let mut d = first.clone();
        for e in rest {
            d = d.with_note(e.loc.clone(), e.message.clone());
        }
        return Err(d);
    }
    let failures = collect_failures(ctx, root, target, patterns, mode, &too_deep, &state);
    if failures.is_empty() {
        return Ok(stats);
    }
    Err(report(&failures, mode))
}

/// The operands of `op` as a pattern should see them: for each operand,
/// the values it converted to (several for 1:N), materialized to the
/// converted types where the producer was not converted. `Err(type)` if an
/// operand type has no conversion.
fn remap_operands(
    ctx: &mut Context,
    op: OpId,
    converter: Option<&TypeConverter>,
    state: &mut ConversionState,
) -> Result<Vec<Vec<Value>>, String> {
    let operands = ctx.operands(op).to_vec();
    let mut out = Vec::with_capacity(operands.len());
    for v in operands {
        let mapped = state.lookup(v);
        let Some(converter) = converter else {
            out.push(mapped);
            continue;
        };
        let original = ctx.value_type(v).clone();
        let Some(desired) = converter.convert_type_to_many(&original) else {
            return Err(original.to_string());
        };
        let types: Vec<Type> = mapped.iter().map(|&m| ctx.value_type(m).clone()).collect();
        if types == desired {
            out.push(mapped);
            continue;
        }
        // The source of the materialization: the one mapped value, or the
        // stand-in that unconverted users read (of the original type).
        let source = match mapped[..] {
            [m] => m,
            _ => v,
        };
        if let Some(values) = state.cached_target(ctx, source, &desired) {
            out.push(values);
            continue;
        }
        // Placed right after the source's definition so that it dominates
        // every later user, and reused for them.
        let loc = ctx.loc(op).clone();
        let at = InsertPoint::after_definition(ctx, source).unwrap_or(InsertPoint::Before(op));
        let values = state.cast(ctx, CastKind::Target, at, &[source], &desired, &loc);
        state.cache_target(source, desired, values.clone());
        out.push(values);
    }
    Ok(out)
}

/// Whether `op` is still the conversion cast it was created as (an erased
/// op's arena slot may since hold another op).
fn is_conversion_cast(ctx: &Context, op: OpId) -> bool {
    ctx.is_live(op) && ctx.name_str(op) == crate::builtin::UNREALIZED_CONVERSION_CAST
}

/// Removes conversion casts that are unused or undo another cast: when a
/// cast's operands are exactly the results of another cast whose operands
/// have this cast's result types (`x -> pieces -> x`, `pieces -> x ->
/// pieces`), its results are the other cast's operands. Returns how many.
fn clean_up_casts(ctx: &mut Context, state: &ConversionState) -> u64 {
    let mut removed = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for &(c, _) in state.casts.iter().rev() {
            if !is_conversion_cast(ctx, c) {
                continue;
            }
            if ctx.results(c).iter().all(|&r| ctx.use_empty(r)) {
                ctx.erase_op(c);
                removed += 1;
                changed = true;
                continue;
            }
            let Some(&first) = ctx.operands(c).first() else {
                continue;
            };
            let Some(inner) = ctx.defining_op(first) else {
                continue;
            };
            if !state.cast_set.contains(&inner) || ctx.operands(c) != ctx.results(inner) {
                continue;
            }
            let sources = ctx.operands(inner).to_vec();
            let results = ctx.results(c).to_vec();
            let same_types = sources.len() == results.len()
                && sources
                    .iter()
                    .zip(&results)
                    .all(|(&x, &r)| ctx.value_type(x) == ctx.value_type(r));
            if same_types {
                for (&r, &x) in results.iter().zip(&sources) {
                    ctx.replace_all_uses(r, x);
                }
                ctx.erase_op(c);
                removed += 1;
                changed = true;
            }
        }
    }
    removed
}

/// Hands the conversion casts still in the IR to the type converter's
/// materialization hooks (in creation order), as MLIR does when a
/// conversion ends: a cast that a hook replaces is erased; one that no hook
/// answers stays. A hook that builds the wrong types fails the conversion.
fn build_materializations(
    ctx: &mut Context,
    converter: &TypeConverter,
    state: &mut ConversionState,
) {
    // Taken before any hook runs: the ops hooks create may reuse the
    // arena slots of the casts erased here.
    let live: Vec<(OpId, CastKind)> = state
        .casts
        .iter()
        .copied()
        .filter(|&(c, _)| is_conversion_cast(ctx, c))
        .collect();
    for (cast, kind) in live {
        let inputs = ctx.operands(cast).to_vec();
        let results = ctx.results(cast).to_vec();
        let types: Vec<Type> = results.iter().map(|&r| ctx.value_type(r).clone()).collect();
        let loc = ctx.loc(cast).clone();
        let at = InsertPoint::Before(cast);
        let built = match kind {
            CastKind::Source => converter
                .materialize_source(ctx, at, &inputs, &types[0], &loc)
                .map(|r| r.map(|v| vec![v])),
            CastKind::Target => converter.materialize_target(ctx, at, inputs[0], &types, &loc),
        };
        match built {
            None => {}
            Some(Ok(values)) => {
                for (&r, &v) in results.iter().zip(&values) {
                    ctx.replace_all_uses(r, v);
                }
                ctx.erase_op(cast);
            }
            Some(Err(d)) => state.errors.push(d),
        }
    }
}

/// One illegal op kind left after the conversion.
struct Failure {
    name: String,
    count: usize,
    first: Location,
    why: &'static str,
    has_patterns: bool,
    too_deep: bool,
    /// A 1:1 pattern that declined because an operand converted to several values.
    refused_by: Option<String>,
    /// An operand type with no conversion (no pattern could be tried).
    unconvertible: Option<String>,
}

fn collect_failures(
    ctx: &Context,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    mode: ConversionMode,
    too_deep: &FxHashSet<OpId>,
    state: &ConversionState,
) -> Vec<Failure> {
    let mut failures: Vec<Failure> = Vec::new();
    let mut stack: Vec<OpId> = Vec::new();
    push_children(ctx, root, &mut stack);
    while let Some(op) = stack.pop() {
        let legality = target.legality(ctx, op);
        let why = match (legality, mode) {
            (Legality::Legal { recursive: true }, _) => continue,
            (Legality::Legal { recursive: false }, _) => None,
            (Legality::Illegal, _) => Some("marked illegal"),
            (Legality::DynamicallyIllegal, _) => Some("rejected by its legality predicate"),
            (Legality::Unknown, ConversionMode::Full) => Some("not marked legal"),
            (Legality::Unknown, ConversionMode::Partial) => None,
        };
        if let Some(why) = why {
            let name = ctx.name_str(op);
            match failures.iter_mut().find(|f| f.name == name && f.why == why) {
                Some(f) => {
                    f.count += 1;
                    f.too_deep |= too_deep.contains(&op);
                }
                None => failures.push(Failure {
                    name: name.to_string(),
                    count: 1,
                    first: ctx.loc(op).clone(),
                    why,
                    has_patterns: !patterns.candidates(name).is_empty(),
                    too_deep: too_deep.contains(&op),
                    refused_by: state.one_to_n_refusals.get(name).cloned(),
                    unconvertible: state.unconvertible_operands.get(name).cloned(),
                }),
            }
        }
        push_children(ctx, op, &mut stack);
    }
    failures
}

/// Pushes the ops directly nested in `op`, so that they pop in program order.
fn push_children(ctx: &Context, op: OpId, stack: &mut Vec<OpId>) {
    let mut children = Vec::new();
    for &r in ctx.regions(op) {
        for &b in ctx.region_blocks(r) {
            children.extend(ctx.block_ops(b));
        }
    }
    stack.extend(children.into_iter().rev());
}

fn report(failures: &[Failure], mode: ConversionMode) -> Diagnostic {
    let total: usize = failures.iter().map(|f| f.count).sum();
    let mut d = Diagnostic::error(
        failures[0].first.clone(),
        format!(
            "failed to legalize {total} operation{} of {} kind{} in {} conversion",
            plural(total),
            failures.len(),
            plural(failures.len()),
            mode.as_str()
        ),
    );
    for f in failures {
        let owned;
        let cause = if f.too_deep {
            "patterns kept producing it (pattern depth limit reached)"
        } else if let Some(ty) = &f.unconvertible {
            owned = format!("an operand of type '{ty}' has no conversion, so no pattern was tried");
            &owned
        } else if let Some(p) = &f.refused_by {
            owned = format!(
                "pattern '{p}' takes only 1:1 operands, but an operand converted to several values or none: give it a 1:N form"
            );
            &owned
        } else if f.has_patterns {
            "no pattern succeeded"
        } else {
            "no pattern converts it"
        };
        d = d.with_note(
            f.first.clone(),
            format!(
                "'{}': {} operation{} {} ({cause}); first here",
                f.name,
                f.count,
                plural(f.count),
                f.why
            ),
        );
    }
    d
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
