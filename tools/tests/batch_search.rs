//! The batch search behind `ipu-run --batch auto`
//! (`ipuc_backend_ipu::lower::batch`) on siglip-tiny as `ipu-run` compiles
//! it (fused, fp16): the chain planned for `N` images without importing
//! the model again is the chain an import of `N` images matches, and the
//! batch the search returns is the largest that plans, on a chip small
//! enough for the plans to run out of tiles.

mod common;

use ipuc_backend_ipu::lower::batch::{function_batch, largest_batch, rebatched};
use ipuc_backend_ipu::lower::chain::{match_chain, plan_chain, plan_chain_with, ChainMatch};
use ipuc_backend_ipu::lower::stream::Weights;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, OpId};

/// siglip-tiny imported for `batch` images and compiled as `ipu-run` does
/// up to the lowering; the context and its function.
fn tiny(batch: i64) -> Option<(Context, OpId)> {
    common::compiled_fixture("siglip-tiny", Some(batch), "fp16")
}

/// Every block's shape, as the planner reads it.
fn shapes(chain: &ChainMatch) -> Vec<String> {
    chain
        .blocks
        .iter()
        .map(|b| match b {
            ipuc_backend_ipu::lower::chain::ChainBlock::Attention(a) => format!("{:?}", a.shape),
            ipuc_backend_ipu::lower::chain::ChainBlock::Mlp(m) => format!("{:?}", m.shape),
            ipuc_backend_ipu::lower::chain::ChainBlock::Patch(p) => format!("{:?}", p.shape),
            ipuc_backend_ipu::lower::chain::ChainBlock::Pool(p) => format!("{:?}", p.shape),
        })
        .collect()
}

#[test]
fn a_rebatched_chain_is_the_chain_an_import_of_that_batch_matches() {
    let Some((one_ctx, one)) = tiny(1) else {
        return;
    };
    let (three_ctx, three) = tiny(3).expect("the fixture");
    assert_eq!(function_batch(&one_ctx, one), Some(1));
    assert_eq!(function_batch(&three_ctx, three), Some(3));
    let from_one = match_chain(&one_ctx, one).unwrap().expect("a chain");
    let from_three = match_chain(&three_ctx, three).unwrap().expect("a chain");
    assert_eq!(shapes(&rebatched(&from_one, 1, 3)), shapes(&from_three));
    assert_ne!(shapes(&from_one), shapes(&from_three));
    // And back.
    assert_eq!(shapes(&rebatched(&from_three, 3, 1)), shapes(&from_one));
}

#[test]
fn the_search_returns_the_largest_batch_that_plans() {
    let Some((ctx, f)) = tiny(1) else {
        return;
    };
    // 96 tiles: the LayerNorm rows and the attention tiles of a few
    // images fill them.
    let machine = MachineModel {
        tiles: 96,
        ..MachineModel::c600()
    };
    let choice =
        largest_batch(&ctx, f, (&machine, Weights::Resident), 1024).expect("one image plans");
    let chain = match_chain(&ctx, f).unwrap().unwrap();
    let plans = |n: u32| plan_chain(&ctx, &rebatched(&chain, 1, n), &machine).is_ok();
    let n = choice.batch;
    assert!(n > 1 && plans(n) && !plans(n + 1), "{choice:?}");
    assert!(
        choice
            .limit
            .starts_with(&format!("{} images do not plan: ", n + 1)),
        "{}",
        choice.limit
    );
    // Doubling from 1 until a batch fails, then bisecting.
    let tried: Vec<u32> = choice.tried.iter().map(|t| t.0).collect();
    let doubled = tried.iter().take_while(|&&t| t.is_power_of_two()).count();
    assert!(doubled >= 2 && tried[..doubled].windows(2).all(|w| w[1] == 2 * w[0]));
    assert!(
        choice.tried[..doubled - 1].iter().all(|t| t.1),
        "{choice:?}"
    );
    // A bound the batch reaches stops the search there.
    let capped = largest_batch(&ctx, f, (&machine, Weights::Resident), n - 1).unwrap();
    assert_eq!(capped.batch, n - 1);
    assert_eq!(
        capped.limit,
        format!("the search stops at {} images", n - 1)
    );
    // With the weights streamed from the first plan (`ipu-run
    // --stream-weights --batch auto`), the search plans as the lowering
    // then will.
    let streamed = largest_batch(&ctx, f, (&machine, Weights::Streamed), 1024).unwrap();
    let plans_streamed = |n: u32| {
        plan_chain_with(&ctx, &rebatched(&chain, 1, n), &machine, Weights::Streamed).is_ok()
    };
    let n = streamed.batch;
    assert!(plans_streamed(n) && !plans_streamed(n + 1), "{streamed:?}");
}
