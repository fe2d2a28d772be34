//! Moving IR between upstream MLIR and ipuc. Text in MLIR's generic form is
//! the interchange for the IR: upstream prints it with locations and ipuc's
//! parser reads it, and the other way round. The weights of a module read
//! from upstream cross as bytes instead (see [`crate::elements`]). Both
//! sides verify, so a model that crosses is valid on each.

use std::borrow::Cow;

use ipuc_frontends::tosa::convert_nn_to_tosa;
use ipuc_ir::{parse_source, print_op, Context, Diagnostic, OpId, PrintOptions};

use crate::elements::Handover;
use crate::Upstream;

/// A module read by [`read_upstream`], with what crossed and how.
#[derive(Clone, Copy, Debug)]
pub struct UpstreamRead {
    /// The `builtin.module` in the ipuc context.
    pub module: OpId,
    /// The weights handed over as bytes.
    pub handover: Handover,
    /// Bytes of upstream's generic printout that ipuc parsed: the IR
    /// without its weights.
    pub printout_bytes: usize,
}

/// Reads an upstream MLIR file (custom or generic syntax, e.g. a TOSA model)
/// into `ctx`: upstream parses and verifies it, its weights go to `ctx`'s
/// resource table as bytes, and its generic printout (the IR without the
/// weights) is parsed into `ctx`, whose unregistered-op permission is
/// turned on (TOSA, `arith` and `tensor` ops stay unregistered until
/// `convert-tosa-to-nn`). Ops keep their `file:line:col` locations.
///
/// An owned `text` is dropped as soon as upstream has parsed it, so the
/// file, upstream's copy of the weights and ipuc's are never all alive at
/// once; upstream's copy goes before ipuc parses.
pub fn read_upstream(
    ctx: &mut Context,
    file: &str,
    text: Cow<'_, str>,
) -> Result<UpstreamRead, Vec<Diagnostic>> {
    let upstream = Upstream::new();
    let mut module = upstream.parse(file, &text)?;
    drop(text);
    module.verify()?;
    let handover = module.hand_over_elements(ctx.resources())?;
    let generic = module.print_generic();
    drop(module);
    drop(upstream);
    ctx.allow_unregistered = true;
    let name = format!("{file} (upstream's generic printout)");
    let parsed = parse_source(ctx, &name, &generic).map_err(|d| vec![d])?;
    tracing::debug!(
        file,
        printout_bytes = generic.len(),
        resources = handover.resources,
        resource_bytes = handover.bytes,
        from_dense = handover.from_dense,
        "read through upstream MLIR"
    );
    Ok(UpstreamRead {
        module: parsed.module,
        handover,
        printout_bytes: generic.len(),
    })
}

/// Rewrites the `nn` ops of `module` into TOSA (in place), has upstream
/// parse and verify the result, and returns it in upstream's custom syntax.
pub fn write_tosa(ctx: &mut Context, module: OpId) -> Result<String, Vec<Diagnostic>> {
    ctx.allow_unregistered = true;
    convert_nn_to_tosa(ctx, module).map_err(|d| vec![d])?;
    let generic = print_op(
        ctx,
        module,
        &PrintOptions {
            generic: true,
            debug_info: true,
            ..Default::default()
        },
    );
    let upstream = Upstream::new();
    let parsed = upstream.parse("<ipuc TOSA output>", &generic)?;
    parsed.verify()?;
    Ok(parsed.print_custom())
}

/// Checks that upstream MLIR parses and verifies `text` (ipuc's printout,
/// best in the generic form) with unregistered dialects allowed, as
/// `mlir-opt --allow-unregistered-dialect` would.
pub fn check_printout(file: &str, text: &str) -> Result<(), Vec<Diagnostic>> {
    let upstream = Upstream::new();
    upstream.set_allow_unregistered(true);
    let module = upstream.parse(file, text)?;
    module.verify()
}
