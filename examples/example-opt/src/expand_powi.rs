//! `example-expand-powi`: rewrites `example.powi %x {exponent = n}` into
//! `nn.mul`s by repeated squaring (`x^5 = x * (x^2)^2`: three
//! multiplications instead of four), for exponents up to `max-exponent`.

use ipuc_dialects::nn::{BinaryKind, BinaryOp};
use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks};
use ipuc_ir::{Context, Diagnostic, OpId, Value, WalkOrder};

use crate::dialect::{exponent, POWI};

/// The pass.
#[derive(Clone)]
pub struct ExpandPowi {
    max_exponent: u32,
}

ipuc_ir::declare_pass! {
    ExpandPowi => "example-expand-powi" {
        summary: "Expand example.powi into nn.mul by repeated squaring",
        anchor: "func.func",
        options ExpandPowiOptions {
            /// Expand only exponents up to this (larger ones stay example.powi)
            max_exponent: u32 = 16 => "max-exponent",
        }
        statistics ExpandPowiStatistics {
            /// Number of example.powi expanded
            expanded: u64 => "num-expanded",
            /// Number of nn.mul created
            multiplies: u64 => "num-multiplies",
        }
    }
}

impl ExpandPowi {
    /// `base^n` as multiplications inserted before `at`; counts them.
    fn power(
        ctx: &mut Context,
        at: OpId,
        base: Value,
        mut n: u32,
        multiplies: &mut u64,
    ) -> Result<Value, Diagnostic> {
        let mut mul = |ctx: &mut Context, a: Value, b: Value| -> Result<Value, Diagnostic> {
            let state = BinaryOp::build(ctx, BinaryKind::Mul, a, b, ctx.loc(at).clone())?;
            let op = ctx.create_op(state);
            ctx.insert_op_before(at, op);
            *multiplies += 1;
            Ok(ctx.result(op, 0))
        };
        let mut square = base;
        let mut result: Option<Value> = None;
        loop {
            if n & 1 == 1 {
                result = Some(match result {
                    None => square,
                    Some(r) => mul(ctx, r, square)?,
                });
            }
            n >>= 1;
            if n == 0 {
                return Ok(result.expect("n >= 1 has a set bit"));
            }
            square = mul(ctx, square, square)?;
        }
    }
}

impl DeclaredPass for ExpandPowi {
    fn create(options: &ExpandPowiOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(ExpandPowi {
            max_exponent: options.max_exponent,
        })
    }

    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut ExpandPowiStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let before = stats.expanded;
        for powi in ctx.collect_ops(op, WalkOrder::PreOrder) {
            if ctx.name_str(powi) != POWI {
                continue;
            }
            // The verifier guarantees an exponent of at least 1.
            let Some(n) = exponent(ctx, powi)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| n >= 1 && n <= self.max_exponent)
            else {
                continue;
            };
            let x = ctx.operand(powi, 0);
            let y = Self::power(ctx, powi, x, n, &mut stats.multiplies)?;
            ctx.replace_op_uses(powi, &[y]);
            ctx.erase_op(powi);
            stats.expanded += 1;
        }
        Ok(PreservedAnalyses::all_unless(stats.expanded != before))
    }
}
