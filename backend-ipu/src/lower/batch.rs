//! `--batch auto`: the largest batch of images whose chain of blocks
//! plans on the chip.
//!
//! A batch of `N` images runs as one program: the products take every
//! image's tokens as rows (`N x tokens`), the attention runs per image and
//! head, the patch embedding and the pooling head per image
//! ([`super::attention_block`], [`super::patch_embed`],
//! [`super::pool_head`]). The weights are kept once whatever `N`; the
//! activations, the products' buffers and the LayerNorm tiles grow with
//! it, and past some `N` a block's buffers no longer fit a tile, or its
//! LayerNorm rows and attention tiles outnumber the tiles: the plan says
//! so. [`largest_batch`] plans the function's chain again for more
//! images, without importing the model again (the blocks' shapes are all
//! the planner reads), and returns the largest batch that plans and why
//! the next one does not.
//!
//! The search assumes what fits for `N` images fits for fewer (every
//! block's memory and tiles grow with the images): it doubles the batch
//! until a plan fails, then bisects between the last that planned and
//! the first that did not.
//!
//! ```no_run
//! # use ipuc_backend_ipu::lower::batch::largest_batch;
//! # fn demo(ctx: &ipuc_ir::Context, f: ipuc_ir::OpId) -> Result<(), ipuc_ir::Diagnostic> {
//! let machine = ipuc_ipu_arch::MachineModel::c600();
//! let weights = ipuc_backend_ipu::lower::stream::Weights::Resident;
//! let choice = largest_batch(ctx, f, (&machine, weights), 64)?;
//! println!("batch {} ({})", choice.batch, choice.limit);
//! # Ok(())
//! # }
//! ```

use ipuc_dialects::func;
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::{Context, Diagnostic, OpId};

use super::chain::{match_chain, plan_chain_with, ChainBlock, ChainMatch};
use super::stream::Weights;

/// What [`largest_batch`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchChoice {
    /// The largest batch that plans.
    pub batch: u32,
    /// Why the next batch does not (the planner's error), or that the
    /// search stopped at its bound.
    pub limit: String,
    /// Every batch planned, in order, and whether it planned.
    pub tried: Vec<(u32, bool)>,
}

/// The function's batch: its first argument's leading dimension (an
/// image batch `[N, C, H, W]` or tokens `[N, tokens, hidden]`).
pub fn function_batch(ctx: &Context, f: OpId) -> Option<u32> {
    let body = func::entry_block(ctx, f)?;
    let arg = *ctx.block_args(body).first()?;
    let dims = ctx.value_type(arg).shape()?;
    (dims.len() >= 3)
        .then(|| u32::try_from(dims[0]).ok())
        .flatten()
        .filter(|&n| n >= 1)
}

/// `chain` (matched for `from` images) for `to` images: the attention
/// blocks, patch embedding and pooling head take `to` images, an MLP
/// block's rows `to / from` times as many.
pub fn rebatched(chain: &ChainMatch, from: u32, to: u32) -> ChainMatch {
    let blocks = chain
        .blocks
        .iter()
        .map(|b| match b {
            ChainBlock::Attention(a) => {
                let mut a = a.clone();
                a.shape.images = to;
                ChainBlock::Attention(a)
            }
            ChainBlock::Mlp(m) => {
                let mut m = m.clone();
                m.shape.m = m.shape.m / from * to;
                ChainBlock::Mlp(m)
            }
            ChainBlock::Patch(p) => {
                let mut p = p.clone();
                p.shape.images = to;
                ChainBlock::Patch(p)
            }
            ChainBlock::Pool(p) => {
                let mut p = p.clone();
                p.shape.images = to;
                ChainBlock::Pool(p)
            }
        })
        .collect();
    ChainMatch {
        blocks,
        ..chain.clone()
    }
}

/// The largest batch, at most `most`, for which function `f`'s chain of
/// blocks plans on `machine`, planned from `weights` as the lowering will
/// ([`super::chain::plan_chain_with`]; see the module doc). An error where `f` is
/// not a chain of blocks, has no batch dimension, or does not plan even
/// for one image.
pub fn largest_batch(
    ctx: &Context,
    f: OpId,
    (machine, weights): (&MachineModel, Weights),
    most: u32,
) -> Result<BatchChoice, Diagnostic> {
    let refuse = |msg: &str| Diagnostic::op_error(ctx, f, msg.to_string());
    let chain = match_chain(ctx, f)?.ok_or_else(|| {
        refuse("--batch auto needs a chain of blocks the lowering takes (a patch embedding, encoder layers, a pooling head)")
    })?;
    let from = function_batch(ctx, f).ok_or_else(|| {
        refuse("--batch auto needs the function's first argument to have a leading batch dimension")
    })?;
    if chain
        .blocks
        .iter()
        .any(|b| matches!(b, ChainBlock::Mlp(m) if m.shape.m % from != 0))
    {
        return Err(refuse(
            "--batch auto: an MLP block's rows are not the batch's images times their tokens",
        ));
    }
    let mut tried = Vec::new();
    let mut plans = |n: u32| -> Result<(), String> {
        let r = plan_chain_with(ctx, &rebatched(&chain, from, n), machine, weights)
            .map(|_| ())
            .map_err(|d| d.message);
        tracing::debug!(target: "ipu-lower", images = n, fits = r.is_ok(), "batch search");
        tried.push((n, r.is_ok()));
        r
    };
    let most = most.max(1);
    plans(1).map_err(|e| refuse(&format!("not even one image plans: {e}")))?;
    // Double while it plans, then bisect (ok, refused).
    let (mut ok, mut refused) = (1u32, None::<(u32, String)>);
    while refused.is_none() && ok < most {
        let n = (ok * 2).min(most);
        match plans(n) {
            Ok(()) => ok = n,
            Err(e) => refused = Some((n, e)),
        }
    }
    while let Some((bad, why)) = refused.take() {
        if bad - ok <= 1 {
            refused = Some((bad, why));
            break;
        }
        let n = ok + (bad - ok) / 2;
        match plans(n) {
            Ok(()) => {
                ok = n;
                refused = Some((bad, why));
            }
            Err(e) => refused = Some((n, e)),
        }
    }
    let limit = match refused {
        Some((n, why)) => format!("{n} images do not plan: {why}"),
        None => format!("the search stops at {most} images"),
    };
    Ok(BatchChoice {
        batch: ok,
        limit,
        tried,
    })
}
