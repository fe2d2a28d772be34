//! Upstream MLIR for the tools (the `mlir` feature): reading upstream files
//! (TOSA models) through upstream's parser and verifier, writing TOSA, and
//! checking printed IR with upstream's parser. Built without the feature,
//! each entry point says how to get it.

use ipuc_ir::{Context, Diagnostic, Location, OpId};

/// Reads an upstream MLIR file (e.g. TOSA) into `ctx` through upstream's
/// parser and verifier; `convert-tosa-to-nn` takes it on to `nn`.
pub fn read(ctx: &mut Context, file: &str, text: &str) -> Result<OpId, Vec<Diagnostic>> {
    #[cfg(feature = "mlir")]
    {
        ipuc_mlir_interop::read_upstream(ctx, file, text)
    }
    #[cfg(not(feature = "mlir"))]
    {
        let _ = (ctx, file, text);
        Err(vec![missing("--upstream")])
    }
}

/// Rewrites `module`'s `nn` ops into TOSA, verified by upstream; returns
/// upstream's printout.
pub fn write_tosa(ctx: &mut Context, module: OpId) -> Result<String, Vec<Diagnostic>> {
    #[cfg(feature = "mlir")]
    {
        ipuc_mlir_interop::write_tosa(ctx, module)
    }
    #[cfg(not(feature = "mlir"))]
    {
        let _ = (ctx, module);
        Err(vec![missing("--emit=tosa")])
    }
}

/// The environment variable that makes `ipu-opt` have upstream MLIR parse
/// the generic form of every IR it writes (the lit harness sets it in
/// builds with the `mlir` feature).
pub const CHECK_ENV: &str = "IPUC_UPSTREAM_CHECK";

/// Whether [`CHECK_ENV`] asks for the upstream check.
pub fn check_requested() -> bool {
    std::env::var_os(CHECK_ENV).is_some_and(|v| v == "1")
}

/// Has upstream MLIR parse and verify `ctx`'s `module` printed in the
/// generic form, unregistered dialects allowed.
pub fn check_printout(ctx: &Context, module: OpId, file: &str) -> Result<(), Vec<Diagnostic>> {
    #[cfg(feature = "mlir")]
    {
        let text = ipuc_ir::print_op(
            ctx,
            module,
            &ipuc_ir::PrintOptions {
                generic: true,
                debug_info: true,
                ..Default::default()
            },
        );
        ipuc_mlir_interop::check_printout(file, &text).map_err(|mut d| {
            d.insert(
                0,
                Diagnostic::error(
                    Location::unknown(),
                    format!("{CHECK_ENV}=1: upstream MLIR rejects the generic printout of {file}"),
                ),
            );
            d
        })
    }
    #[cfg(not(feature = "mlir"))]
    {
        let _ = (ctx, module, file);
        Err(vec![missing(CHECK_ENV)])
    }
}

#[cfg(not(feature = "mlir"))]
fn missing(what: &str) -> Diagnostic {
    Diagnostic::error(
        Location::unknown(),
        format!(
            "{what} needs upstream MLIR: rebuild the tools with `--features mlir` \
             (LLVM/MLIR 22 installed; see the README)"
        ),
    )
}
