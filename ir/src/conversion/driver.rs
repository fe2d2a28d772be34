//! The conversion driver: legalizes every op nested in a root, then checks
//! the result against the target and reports what stayed illegal.

use rustc_hash::FxHashSet;

use super::target::{ConversionTarget, Legality};
use super::type_converter::{InsertPoint, TypeConverter};
use super::{ConversionPatternSet, ConversionRewriter, ConversionState};
use crate::context::{Context, OpId, Value, WalkOrder};
use crate::diagnostics::Diagnostic;
use crate::location::Location;

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
        let Some(operands) = remap_operands(ctx, op, type_converter, &mut state) else {
            continue;
        };
        for p in candidates {
            let mut rw = ConversionRewriter::new(ctx, type_converter, &mut state);
            if p.match_and_rewrite(op, &operands, &mut rw) {
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
        }
    }

    stats.casts_removed = clean_up_casts(ctx, &state);
    stats.casts_remaining = state.casts.iter().filter(|&&c| ctx.is_live(c)).count() as u64;
    stats.materializations = state.materializations;

    let failures = collect_failures(ctx, root, target, patterns, mode, &too_deep);
    if failures.is_empty() {
        return Ok(stats);
    }
    Err(report(&failures, mode))
}

/// The operands of `op` as a pattern should see them: replaced producers
/// mapped to their converted values, other values cast to their converted
/// type. `None` if an operand type has no conversion.
fn remap_operands(
    ctx: &mut Context,
    op: OpId,
    converter: Option<&TypeConverter>,
    state: &mut ConversionState,
) -> Option<Vec<Value>> {
    let operands = ctx.operands(op).to_vec();
    let mut out = Vec::with_capacity(operands.len());
    for v in operands {
        let mapped = state.lookup(v);
        let Some(converter) = converter else {
            out.push(mapped);
            continue;
        };
        let original = ctx.value_type(v).clone();
        let Some(desired) = converter.convert_type(&original) else {
            tracing::debug!(op = ctx.name_str(op), ty = %original, "operand type has no conversion");
            return None;
        };
        if *ctx.value_type(mapped) == desired {
            out.push(mapped);
            continue;
        }
        // One materialization per (value, type), placed right after the
        // value's definition so that it dominates every later user.
        if let Some(&m) = state.target_casts.get(&(mapped, desired.clone())) {
            if ctx.value_is_live(m) && *ctx.value_type(m) == desired {
                out.push(m);
                continue;
            }
        }
        let loc = ctx.loc(op).clone();
        let at = InsertPoint::after_definition(ctx, mapped).unwrap_or(InsertPoint::Before(op));
        let m = converter.materialize_target(ctx, at, mapped, &desired, &loc);
        state.note_materialization(ctx, m);
        state.target_casts.insert((mapped, desired), m);
        out.push(m);
    }
    Some(out)
}

/// Removes conversion casts that are unused or undo another cast
/// (`cast(cast(x : A to B) : B to A)` is `x`); returns how many.
fn clean_up_casts(ctx: &mut Context, state: &ConversionState) -> u64 {
    let mut removed = 0;
    let mut changed = true;
    while changed {
        changed = false;
        for &c in state.casts.iter().rev() {
            if !ctx.is_live(c) {
                continue;
            }
            if ctx.results(c).iter().all(|&r| ctx.use_empty(r)) {
                ctx.erase_op(c);
                removed += 1;
                changed = true;
                continue;
            }
            if ctx.operands(c).len() != 1 || ctx.results(c).len() != 1 {
                continue;
            }
            let Some(inner) = ctx.defining_op(ctx.operand(c, 0)) else {
                continue;
            };
            if !state.cast_set.contains(&inner) || ctx.operands(inner).len() != 1 {
                continue;
            }
            let x = ctx.operand(inner, 0);
            let r = ctx.result(c, 0);
            if ctx.value_type(x) == ctx.value_type(r) {
                ctx.replace_all_uses(r, x);
                ctx.erase_op(c);
                removed += 1;
                changed = true;
            }
        }
    }
    removed
}

/// One illegal op kind left after the conversion.
struct Failure {
    name: String,
    count: usize,
    first: Location,
    why: &'static str,
    has_patterns: bool,
    too_deep: bool,
}

fn collect_failures(
    ctx: &Context,
    root: OpId,
    target: &ConversionTarget,
    patterns: &ConversionPatternSet,
    mode: ConversionMode,
    too_deep: &FxHashSet<OpId>,
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
        let cause = if f.too_deep {
            "patterns kept producing it (pattern depth limit reached)"
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
