//! Upstream MLIR for the tools (the `mlir` feature): reading upstream files
//! (TOSA models) through upstream's parser and verifier, writing TOSA, and
//! checking printed IR with upstream's parser. Built without the feature,
//! each entry point says how to get it.

use std::borrow::Cow;

use ipuc_ir::{Context, Diagnostic, Location, OpId};

/// Reads an upstream MLIR file (e.g. TOSA) into `ctx` through upstream's
/// parser and verifier; `convert-tosa-to-nn` takes it on to `nn`. Its
/// weights cross as bytes, not text; an owned `text` is dropped once
/// upstream has parsed it.
pub fn read(ctx: &mut Context, file: &str, text: Cow<'_, str>) -> Result<OpId, Vec<Diagnostic>> {
    #[cfg(feature = "mlir")]
    {
        ipuc_mlir_interop::read_upstream(ctx, file, text).map(|read| read.module)
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

#[cfg(all(test, feature = "mlir"))]
mod tests {
    use std::borrow::Cow;
    use std::fmt::Write;

    use ipuc_ir::attributes::AttrKind;
    use ipuc_ir::{Context, WalkOrder};

    /// Weights of `n` f32s, distinct per `seed`, as little-endian bytes.
    fn weights(n: usize, seed: u32) -> Vec<u8> {
        (0..n as u32)
            .flat_map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) as f32 / 4e9).to_le_bytes())
            .collect()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().fold(String::from("0x"), |mut s, b| {
            let _ = write!(s, "{b:02X}");
            s
        })
    }

    /// A TOSA function whose weights are one `dense_resource` (used twice)
    /// and one inline `dense<"0x...">`, each of `n` f32s, plus a small
    /// constant that stays in the printout.
    fn model(n: usize, resource: &[u8], inline: &[u8]) -> String {
        let t = format!("tensor<1x{n}xf32>");
        format!(
            r#"func.func @main(%x: {t}) -> {t} {{
  %w = "tosa.const"() <{{values = dense_resource<w> : {t}}}> : () -> {t}
  %v = "tosa.const"() <{{values = dense<"{inline}"> : {t}}}> : () -> {t}
  %u = "tosa.const"() <{{values = dense_resource<w> : {t}}}> : () -> {t}
  %b = "tosa.const"() <{{values = dense<[[1.0, 2.0]]> : tensor<1x2xf32>}}> : () -> tensor<1x2xf32>
  %0 = tosa.add %x, %w : ({t}, {t}) -> {t}
  %1 = tosa.add %0, %v : ({t}, {t}) -> {t}
  %2 = tosa.add %1, %u : ({t}, {t}) -> {t}
  return %2 : {t}
}}
{{-#
  dialect_resources: {{ builtin: {{ w: "0x04000000{resource}" }} }}
#-}}
"#,
            inline = hex(inline),
            resource = &hex(resource)[2..],
        )
    }

    /// The weights of a model read from upstream reach ipuc as bytes, not
    /// text: upstream's printout that ipuc parses holds the IR alone (a
    /// regression to the text path would put the weights in it twice over,
    /// as hex), and ipuc's resources hold exactly the file's bytes, a
    /// resource used twice shared by both uses.
    #[test]
    fn weights_cross_from_upstream_as_bytes_not_text() {
        let n = 1 << 18; // 1 MiB of f32 per tensor
        let (resource, inline) = (weights(n, 1), weights(n, 2));
        let text = model(n, &resource, &inline);
        let mut ctx = Context::new(crate::registry::dialects());
        let read =
            ipuc_mlir_interop::read_upstream(&mut ctx, "weights.mlir", Cow::Owned(text)).unwrap();

        let weight_bytes = resource.len() + inline.len();
        assert_eq!(read.handover.bytes, weight_bytes);
        assert_eq!((read.handover.resources, read.handover.from_dense), (2, 1));
        assert!(
            read.printout_bytes < 4096,
            "{} bytes of printout for {weight_bytes} bytes of weights: weights went through text",
            read.printout_bytes
        );

        let mut seen = Vec::new();
        for op in ctx.collect_ops(read.module, WalkOrder::PreOrder) {
            if ctx.name_str(op) != "tosa.const" {
                continue;
            }
            match ctx.attr(op, "values").unwrap().kind() {
                AttrKind::DenseResource { resource: r, .. } => {
                    let blob = r.blob().expect("the resource has its bytes");
                    assert_eq!(blob.alignment, 4);
                    seen.push((r.name().to_string(), blob.data.clone()));
                }
                AttrKind::DenseElements(d) => assert_eq!(d.len(), 2, "only the small constant"),
                other => panic!("unexpected constant {other:?}"),
            }
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(&*seen[0].1, &resource[..]);
        assert_eq!(&*seen[1].1, &inline[..]);
        assert_eq!(seen[0].0, seen[2].0);
        assert!(std::sync::Arc::ptr_eq(&seen[0].1, &seen[2].1));
    }
}
