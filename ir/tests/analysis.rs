//! Dominance, liveness and the analysis manager's caching.

use std::sync::Arc;

use ipuc_ir::analysis::{AnalysisManager, DominanceInfo, Liveness, PreservedAnalyses};
use ipuc_ir::{parse_source, Context, DialectRegistry, OpId};

const DIAMOND: &str = r#"
"test.func"() ({
^bb0(%a: i32):
  "test.cond_br"(%a)[^bb1, ^bb2] : (i32) -> ()
^bb1:
  %x = "test.def"() : () -> i32
  "test.br"()[^bb3] : () -> ()
^bb2:
  "test.br"()[^bb3] : () -> ()
^bb3:
  "test.use"(%a) : (i32) -> ()
}) : () -> ()
"#;

fn parse(src: &str) -> (Context, OpId) {
    let mut ctx = Context::new(Arc::new(DialectRegistry::new()));
    ctx.allow_unregistered = true;
    let p = parse_source(&mut ctx, "t.mlir", src).unwrap();
    let func = ctx
        .block_ops(ctx.region_blocks(ctx.regions(p.module)[0])[0])
        .next()
        .unwrap();
    (ctx, func)
}

#[test]
fn diamond_dominance() {
    let (ctx, func) = parse(DIAMOND);
    let blocks = ctx.region_blocks(ctx.regions(func)[0]).to_vec();
    let dom = DominanceInfo::compute(&ctx, func);
    let (b0, b1, b2, b3) = (blocks[0], blocks[1], blocks[2], blocks[3]);
    assert!(dom.block_dominates(b0, b3));
    assert!(!dom.block_dominates(b1, b3));
    assert!(!dom.block_dominates(b2, b3));
    assert_eq!(dom.immediate_dominator(b3), Some(b0));
    assert_eq!(dom.immediate_dominator(b1), Some(b0));
    assert_eq!(dom.immediate_dominator(b0), None);
}

#[test]
fn liveness_across_blocks() {
    let (ctx, func) = parse(DIAMOND);
    let blocks = ctx.region_blocks(ctx.regions(func)[0]).to_vec();
    let a = ctx.block_args(blocks[0])[0];
    let live = Liveness::compute(&ctx, func);
    assert!(live.is_live_out(a, blocks[0]));
    assert!(live.is_live_out(a, blocks[1]));
    assert!(live.live_in(blocks[3]).any(|v| v == a));
    assert!(!live.is_live_out(a, blocks[3]));
}

#[test]
fn manager_caches_and_invalidates() {
    let (ctx, func) = parse(DIAMOND);
    let mut am = AnalysisManager::new();
    am.get::<DominanceInfo>(&ctx, func);
    am.get::<DominanceInfo>(&ctx, func);
    assert_eq!(am.computations, 1);
    let mut keep = PreservedAnalyses::none();
    keep.preserve::<DominanceInfo>();
    am.get::<Liveness>(&ctx, func);
    am.invalidate(&keep);
    assert!(am.cached::<DominanceInfo>(func).is_some());
    assert!(am.cached::<Liveness>(func).is_none());
    am.invalidate(&PreservedAnalyses::none());
    assert!(am.cached::<DominanceInfo>(func).is_none());
    am.get::<DominanceInfo>(&ctx, func);
    assert_eq!(am.computations, 3);
}

/// A pass that changed nothing keeps every analysis; one that changed the
/// IR keeps none.
#[test]
fn all_unless_changed_keeps_everything_or_nothing() {
    assert!(PreservedAnalyses::all_unless(false).is_all());
    let changed = PreservedAnalyses::all_unless(true);
    assert!(!changed.is_all());
    assert!(!changed.is_preserved::<DominanceInfo>());
}

#[test]
fn a_false_preservation_claim_is_found_by_recomputing() {
    let (mut ctx, func) = parse(DIAMOND);
    let mut am = AnalysisManager::new();
    am.get::<DominanceInfo>(&ctx, func);
    am.get::<Liveness>(&ctx, func);
    let mut both = PreservedAnalyses::none();
    both.preserve::<DominanceInfo>().preserve::<Liveness>();
    assert!(am.stale_preserved(&ctx, &both).is_empty());
    // `%a` is no longer used in ^bb3, so it stops being live across blocks;
    // the blocks (and so dominance) stay as they were.
    let blocks = ctx.region_blocks(ctx.regions(func)[0]).to_vec();
    let user = ctx.first_op(blocks[3]).unwrap();
    ctx.erase_op(user);
    assert_eq!(am.stale_preserved(&ctx, &both), ["Liveness"]);
    assert_eq!(
        am.stale_preserved(&ctx, &PreservedAnalyses::all()),
        ["Liveness"]
    );
    assert!(am
        .stale_preserved(&ctx, &PreservedAnalyses::none())
        .is_empty());
}
