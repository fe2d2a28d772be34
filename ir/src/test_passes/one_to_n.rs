//! `test-one-to-n-conversion`: 1:N dialect conversion, driven from lit tests.
//!
//! A rank-2 tensor `tensor<T x N x E>` (its leading dimension the tiles it
//! is spread over) converts into `T` per-tile pieces `tensor<N x E>`;
//! `tensor<0 x N x E>` into none (1:0); one with a dynamic leading
//! dimension, or more than `max-pieces` of them, has no conversion. Other
//! types stay as they are. Patterns (ops not in the `test` dialect's table
//! are unregistered `test.*` ops):
//!
//! | op | conversion |
//! |---|---|
//! | `test.map` | one `test.map` per piece, on the pieces of its split operands (an unsplit operand goes to every piece); all split operands and results must have the same number of pieces |
//! | `test.copy` | its result is its operand's pieces (no op) |
//! | `test.terminator`, `test.br` | the same op on the operands' pieces, flattened |
//! | `test.region`, `test.isolated` | block arguments of every block converted in place |
//! | `test.whole` | renamed `test.whole_done`, by a 1:1-only pattern (it declines split operands) |
//!
//! `test.source`, `test.sink`, `test.split` and `test.concat` are legal:
//! unconverted code around the converted ops. The materializations build
//! `test.split` (a whole tensor to its pieces) and `test.concat` (pieces
//! back to the whole), or stay `builtin.unrealized_conversion_cast` with
//! `{casts}`. `{full}` runs a full conversion (every op must end legal).

use std::sync::Arc;

use crate::analysis::{AnalysisManager, PreservedAnalyses};
use crate::context::{Context, OpId, OperationState, Value};
use crate::conversion::{
    convert, ConversionConfig, ConversionMode, ConversionPatternSet, ConversionRewriter,
    ConversionTarget, FnConversionPattern, TypeConversion, TypeConverter,
};
use crate::diagnostics::Diagnostic;
use crate::pass::{DeclaredPass, PassCreateError, PassHooks};
use crate::types::{Type, TypeKind, DYNAMIC};

/// The pass.
#[derive(Clone)]
pub struct TestOneToNConversion {
    options: TestOneToNConversionOptions,
    converter: Arc<TypeConverter>,
}

crate::declare_pass! {
    TestOneToNConversion => "test-one-to-n-conversion" {
        summary: "Test 1:N dialect conversion: rank-2 tensors into per-tile pieces (test dialect only)",
        options TestOneToNConversionOptions {
            /// Keep materializations as builtin.unrealized_conversion_cast instead of test.split and test.concat
            casts: bool = false => "casts",
            /// Run a full conversion (every op must end legal) instead of a partial one
            full: bool = false => "full",
            /// Tensors with a larger leading dimension have no conversion
            max_pieces: u32 = 64 => "max-pieces",
        }
        statistics TestOneToNConversionStatistics {
            /// Pattern applications
            rewrites: u64 => "num-rewrites",
            /// Conversion casts that cancelled out or went unused
            casts_removed: u64 => "num-casts-removed",
            /// Conversion casts left in the IR
            casts_remaining: u64 => "num-casts-remaining",
        }
    }
}

/// The per-tile pieces of `t`: `None` when `t` is not split, `Some(Err)`
/// when it cannot be.
fn pieces(t: &Type, max: u32) -> Option<Result<Vec<Type>, ()>> {
    let TypeKind::RankedTensor { shape, element, .. } = t.kind() else {
        return None;
    };
    let [tiles, rest] = shape[..] else {
        return None;
    };
    if tiles == DYNAMIC || tiles > i64::from(max) {
        return Some(Err(()));
    }
    let piece = Type::tensor(&[rest], element.clone());
    Some(Ok(vec![piece; tiles as usize]))
}

fn type_converter(options: &TestOneToNConversionOptions) -> TypeConverter {
    let max = options.max_pieces;
    let mut tc = TypeConverter::new();
    tc.add_identity_conversion().add_conversion(move |t| {
        pieces(t, max).map(|p| match p {
            Ok(ts) => TypeConversion::Multiple(ts),
            Err(()) => TypeConversion::Illegal,
        })
    });
    if !options.casts {
        tc.add_target_materialization(Box::new(|ctx, at, input, to, loc| {
            Some(at.build_op(ctx, "test.split", &[input], to, loc))
        }));
        tc.add_source_materialization(Box::new(|ctx, at, inputs, to, loc| {
            Some(at.build_op(ctx, "test.concat", inputs, std::slice::from_ref(to), loc)[0])
        }));
    }
    tc
}

/// `test.map` applied piece by piece.
fn map_per_piece(op: OpId, operands: &[Vec<Value>], rw: &mut ConversionRewriter<'_>) -> bool {
    let ctx = rw.ctx();
    let loc = ctx.loc(op).clone();
    // An operand is split when its type converts to something other than itself.
    let split: Vec<bool> = ctx
        .operands(op)
        .iter()
        .zip(operands)
        .map(|(&v, vs)| vs.len() != 1 || ctx.value_type(vs[0]) != ctx.value_type(v))
        .collect();
    let mut result_pieces = Vec::new();
    for &r in ctx.results(op) {
        let Some(ts) = rw.convert_type_to_many(rw.ctx().value_type(r)) else {
            return false;
        };
        result_pieces.push(ts);
    }
    let counts: Vec<usize> = operands
        .iter()
        .zip(&split)
        .filter(|(_, &s)| s)
        .map(|(vs, _)| vs.len())
        .chain(result_pieces.iter().map(Vec::len))
        .collect();
    let Some(&n) = counts.first() else {
        return false;
    };
    if counts.iter().any(|&c| c != n) {
        rw.fail(Diagnostic::error(
            loc,
            format!("'test.map' operands and results split into different numbers of pieces ({counts:?})"),
        ));
        return false;
    }
    let mut replacements = vec![Vec::new(); result_pieces.len()];
    for i in 0..n {
        let inputs: Vec<Value> = operands
            .iter()
            .zip(&split)
            .map(|(vs, &s)| if s { vs[i] } else { vs[0] })
            .collect();
        let types: Vec<Type> = result_pieces.iter().map(|ts| ts[i].clone()).collect();
        let state = OperationState::new(rw.ctx().op_name("test.map"), loc.clone())
            .operands(&inputs)
            .results(&types);
        let piece_op = rw.create_before(op, state);
        for (k, &v) in rw.ctx().results(piece_op).to_vec().iter().enumerate() {
            replacements[k].push(v);
        }
    }
    rw.replace_op_with_multiple(op, &replacements);
    true
}

/// The same op (name, attributes, successors) on the flattened operands.
fn flatten_operands(op: OpId, operands: &[Vec<Value>], rw: &mut ConversionRewriter<'_>) -> bool {
    let ctx = rw.ctx();
    let flat: Vec<Value> = operands.iter().flatten().copied().collect();
    let mut state = OperationState::new(ctx.name(op).clone(), ctx.loc(op).clone())
        .operands(&flat)
        .results(&ctx.result_types(op));
    state.attributes = ctx.attributes(op).clone();
    for &s in ctx.successors(op) {
        state = state.successor(s);
    }
    rw.replace_op_with_new(op, state);
    true
}

fn patterns() -> ConversionPatternSet {
    let mut set = ConversionPatternSet::new();
    set.add(FnConversionPattern::one_to_n(
        "map-per-piece",
        Some("test.map"),
        1,
        map_per_piece,
    ));
    set.add(FnConversionPattern::one_to_n(
        "copy-forwards-pieces",
        Some("test.copy"),
        1,
        |op, operands, rw| {
            rw.replace_op_with_multiple(op, &[operands[0].clone()]);
            true
        },
    ));
    for name in ["test.terminator", "test.br"] {
        set.add(FnConversionPattern::one_to_n(
            "flatten-operands",
            Some(name),
            1,
            flatten_operands,
        ));
    }
    for name in ["test.region", "test.isolated"] {
        set.add(FnConversionPattern::one_to_n(
            "convert-block-arguments",
            Some(name),
            1,
            |op, _, rw| {
                for r in rw.ctx().regions(op).to_vec() {
                    if let Err(d) = rw.convert_region_types(r) {
                        rw.fail(d);
                        return false;
                    }
                }
                rw.notify_modified(op);
                true
            },
        ));
    }
    set.add(FnConversionPattern::new(
        "whole-1to1",
        Some("test.whole"),
        1,
        |op, operands, rw| {
            let ctx = rw.ctx();
            let state = OperationState::new(ctx.op_name("test.whole_done"), ctx.loc(op).clone())
                .operands(operands)
                .results(&ctx.result_types(op));
            rw.replace_op_with_new(op, state);
            true
        },
    ));
    set
}

fn target(converter: Arc<TypeConverter>) -> ConversionTarget {
    let mut target = ConversionTarget::new();
    for name in [
        "test.map",
        "test.copy",
        "test.terminator",
        "test.br",
        "test.region",
        "test.isolated",
        "test.whole",
    ] {
        let c = converter.clone();
        target.add_dynamically_legal_op(name, move |ctx, op| c.is_legal_op(ctx, op));
    }
    for name in [
        "test.source",
        "test.sink",
        "test.split",
        "test.concat",
        "test.whole_done",
        "builtin.unrealized_conversion_cast",
    ] {
        target.add_legal_op(name);
    }
    target
}

impl DeclaredPass for TestOneToNConversion {
    fn create(
        options: &TestOneToNConversionOptions,
        _hooks: &PassHooks,
    ) -> Result<Self, PassCreateError> {
        Ok(TestOneToNConversion {
            options: options.clone(),
            converter: Arc::new(type_converter(options)),
        })
    }

    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut TestOneToNConversionStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let mode = if self.options.full {
            ConversionMode::Full
        } else {
            ConversionMode::Partial
        };
        let done = convert(
            ctx,
            op,
            &target(self.converter.clone()),
            &patterns(),
            Some(&self.converter),
            mode,
            &ConversionConfig::default(),
        )?;
        stats.rewrites += done.rewrites;
        stats.casts_removed += done.casts_removed;
        stats.casts_remaining += done.casts_remaining;
        Ok(PreservedAnalyses::all_unless(done.rewrites != 0))
    }
}
