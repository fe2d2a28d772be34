//! Moving IR between upstream MLIR and ipuc. Text in MLIR's generic form is
//! the interchange: upstream prints it with locations and ipuc's parser
//! reads it (weights travel as `dense_resource` blobs), and the other way
//! round. Both sides verify, so a model that crosses is valid on each.

use ipuc_frontends::tosa::convert_nn_to_tosa;
use ipuc_ir::{parse_source, print_op, Context, Diagnostic, OpId, PrintOptions};

use crate::Upstream;

/// Reads an upstream MLIR file (custom or generic syntax, e.g. a TOSA model)
/// into `ctx`: upstream parses and verifies it, and its generic printout is
/// parsed into `ctx`, whose unregistered-op permission is turned on (TOSA,
/// `arith` and `tensor` ops stay unregistered until `convert-tosa-to-nn`).
/// Returns the `builtin.module`; ops keep their `file:line:col` locations.
pub fn read_upstream(ctx: &mut Context, file: &str, text: &str) -> Result<OpId, Vec<Diagnostic>> {
    let upstream = Upstream::new();
    let module = upstream.parse(file, text)?;
    module.verify()?;
    let generic = module.print_generic();
    ctx.allow_unregistered = true;
    let name = format!("{file} (upstream's generic printout)");
    let parsed = parse_source(ctx, &name, &generic).map_err(|d| vec![d])?;
    tracing::debug!(file, bytes = generic.len(), "read through upstream MLIR");
    Ok(parsed.module)
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
