//! Which TOSA ops each direction handles: the single list the converters
//! consult and the README's coverage table is printed from
//! ([`markdown_table`]; a test keeps the README in step).

/// Op-name prefixes `convert-tosa-to-nn` owns: every op of these dialects
/// must convert, or the pass reports it.
pub const READ_SOURCES: &[&str] = &["tosa.", "arith.", "tensor."];

/// One TOSA op and how ipuc handles it.
#[derive(Copy, Clone, Debug)]
pub struct TosaOp {
    /// The op name.
    pub name: &'static str,
    /// What `convert-tosa-to-nn` makes of it (`None`: not read).
    pub read_as: Option<&'static str>,
    /// The `nn` ops `--emit=tosa` writes with it (`None`: never written).
    pub written_from: Option<&'static str>,
}

const fn op(
    name: &'static str,
    read_as: Option<&'static str>,
    written_from: Option<&'static str>,
) -> TosaOp {
    TosaOp {
        name,
        read_as,
        written_from,
    }
}

/// The TOSA ops of transformer and convolutional encoders (and their
/// neighbours), in the order of the coverage table.
pub const TOSA_OPS: &[TosaOp] = &[
    op(
        "tosa.const",
        Some("nn.constant"),
        Some("nn.constant; constants of decompositions"),
    ),
    op(
        "tosa.const_shape",
        Some("attributes of the ops using it"),
        Some("every shape, slice, pad and tile operand"),
    ),
    op(
        "tosa.matmul",
        Some("nn.matmul (zero points 0)"),
        Some(
            "nn.matmul, nn.gemm, nn.linear (batch folded into the rows for a weight without batch dimensions, else broadcast by tosa.tile)",
        ),
    ),
    op(
        "tosa.conv2d",
        Some("nn.conv2d between NHWC/NCHW transposes"),
        Some("nn.conv2d (groups = 1)"),
    ),
    op(
        "tosa.depthwise_conv2d",
        Some("nn.conv2d with groups = C"),
        Some("nn.conv2d (groups = C)"),
    ),
    op(
        "tosa.add",
        Some("nn.add"),
        Some("nn.add; layernorm, GELU, gemm/linear bias"),
    ),
    op(
        "tosa.sub",
        Some("nn.sub"),
        Some("nn.sub; softmax, layernorm"),
    ),
    op(
        "tosa.mul",
        Some("nn.mul (shift 0)"),
        Some("nn.mul, nn.div (floats); decompositions"),
    ),
    op("tosa.intdiv", Some("nn.div"), Some("nn.div (i32)")),
    op(
        "tosa.negate",
        Some("nn.neg (zero points 0)"),
        Some("nn.neg"),
    ),
    op(
        "tosa.reciprocal",
        Some("nn.reciprocal"),
        Some("nn.reciprocal, nn.div, nn.sqrt; softmax"),
    ),
    op(
        "tosa.rsqrt",
        Some("nn.reciprocal(nn.sqrt)"),
        Some("nn.sqrt; layernorm"),
    ),
    op("tosa.exp", Some("nn.exp"), Some("nn.exp; softmax")),
    op("tosa.log", Some("nn.log"), Some("nn.log")),
    op("tosa.tanh", Some("nn.tanh"), Some("nn.tanh; GELU (tanh)")),
    op("tosa.sigmoid", Some("nn.sigmoid"), Some("nn.sigmoid")),
    op("tosa.erf", Some("nn.erf"), Some("nn.erf; GELU (exact)")),
    op("tosa.pow", Some("nn.pow"), Some("nn.pow")),
    op("tosa.abs", Some("nn.abs"), Some("nn.abs")),
    op("tosa.maximum", Some("nn.max"), Some("nn.max")),
    op("tosa.minimum", Some("nn.min"), Some("nn.min")),
    op("tosa.clamp", Some("nn.min + nn.max"), Some("nn.relu")),
    op("tosa.equal", Some("nn.equal"), Some("nn.equal")),
    op(
        "tosa.greater",
        Some("nn.greater"),
        Some("nn.greater, nn.less; gather index wrap"),
    ),
    op(
        "tosa.reduce_sum",
        Some("nn.reduce_sum (keepdims)"),
        Some("nn.reduce_sum, nn.reduce_mean; softmax, layernorm"),
    ),
    op(
        "tosa.reduce_max",
        Some("nn.reduce_max (keepdims)"),
        Some("nn.reduce_max; softmax"),
    ),
    op(
        "tosa.argmax",
        Some("nn.argmax (then nn.cast for i32 positions)"),
        Some("nn.argmax (first largest)"),
    ),
    op(
        "tosa.reshape",
        Some("nn.reshape"),
        Some("nn.reshape, nn.squeeze, nn.unsqueeze, nn.flatten; rank alignment"),
    ),
    op(
        "tosa.transpose",
        Some("nn.transpose"),
        Some("nn.transpose, nn.gemm transA/B; convolution layouts"),
    ),
    op(
        "tosa.slice",
        Some("nn.slice"),
        Some("nn.slice (steps 1), nn.split"),
    ),
    op("tosa.concat", Some("nn.concat"), Some("nn.concat")),
    op("tosa.pad", Some("nn.pad (constant)"), Some("nn.pad")),
    op(
        "tosa.gather",
        Some("nn.gather on flattened values"),
        Some("nn.gather"),
    ),
    op(
        "tosa.tile",
        Some("nn.tile"),
        Some("nn.tile, nn.expand; matmul batch broadcast"),
    ),
    op(
        "tosa.cast",
        Some("nn.cast (not float to int: TOSA rounds)"),
        Some("nn.cast (not float to int)"),
    ),
    op(
        "tosa.select",
        Some("nn.where"),
        Some("nn.where; gather index wrap"),
    ),
    op("tosa.identity", Some("its operand"), None),
    op(
        "tosa.avg_pool2d",
        Some("nn.average_pool between NHWC/NCHW transposes (zero points 0)"),
        Some("nn.average_pool (2-D, no dilation; counted padding as a tosa.pad of zeros)"),
    ),
    op(
        "tosa.max_pool2d",
        Some("nn.max_pool between NHWC/NCHW transposes"),
        Some("nn.max_pool (2-D, no dilation)"),
    ),
    op(
        "tosa.rescale",
        Some("i64 nn.mul (+ rounding nn.add/mod/sub/div), clamp, nn.cast: one multiplier and shift, zero points 0, signed"),
        None,
    ),
];

/// The non-TOSA ops `convert-tosa-to-nn` reads (they come with TOSA models).
pub const OTHER_READ_OPS: &[(&str, &str)] = &[
    ("arith.constant", "nn.constant"),
    ("tensor.expand_shape", "nn.reshape"),
    ("tensor.collapse_shape", "nn.reshape"),
    ("tensor.reshape", "nn.reshape"),
    ("tensor.cast", "nn.reshape or nothing"),
    ("tensor.extract_slice", "nn.slice (static)"),
    ("tensor.concat", "nn.concat"),
];

/// `nn` ops `--emit=tosa` writes (some instances may still be refused:
/// float-to-int casts, strided slices, grouped convolutions, pools that are
/// not 2-D or dilated, argmax picking the last of equal elements).
pub const WRITTEN_NN_OPS: &[&str] = &[
    "nn.constant",
    "nn.add",
    "nn.sub",
    "nn.mul",
    "nn.div",
    "nn.pow",
    "nn.max",
    "nn.min",
    "nn.equal",
    "nn.greater",
    "nn.less",
    "nn.sqrt",
    "nn.reciprocal",
    "nn.exp",
    "nn.log",
    "nn.tanh",
    "nn.erf",
    "nn.abs",
    "nn.sigmoid",
    "nn.neg",
    "nn.relu",
    "nn.where",
    "nn.cast",
    "nn.identity",
    "nn.reshape",
    "nn.squeeze",
    "nn.unsqueeze",
    "nn.flatten",
    "nn.expand",
    "nn.transpose",
    "nn.concat",
    "nn.slice",
    "nn.split",
    "nn.gather",
    "nn.tile",
    "nn.pad",
    "nn.reduce_sum",
    "nn.reduce_max",
    "nn.reduce_mean",
    "nn.softmax",
    "nn.layer_normalization",
    "nn.gelu",
    "nn.matmul",
    "nn.gemm",
    "nn.linear",
    "nn.conv2d",
    "nn.max_pool",
    "nn.average_pool",
    "nn.argmax",
];

/// Whether `convert-tosa-to-nn` converts ops named `name`.
pub fn is_readable(name: &str) -> bool {
    TOSA_OPS
        .iter()
        .any(|o| o.name == name && o.read_as.is_some())
        || OTHER_READ_OPS.iter().any(|(n, _)| *n == name)
}

/// Whether `--emit=tosa` writes `nn` ops named `name`.
pub fn is_writable(name: &str) -> bool {
    WRITTEN_NN_OPS.contains(&name)
}

/// The coverage table in Markdown, as the README shows it.
pub fn markdown_table() -> String {
    let mut s = String::from("| TOSA op | read as (`convert-tosa-to-nn`) | written from (`--emit=tosa`) |\n|---|---|---|\n");
    for o in TOSA_OPS {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            o.name,
            o.read_as.unwrap_or("—"),
            o.written_from.unwrap_or("—")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn workspace() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// Each op read has a lit test of its own (upstream parsing, the
    /// conversion, and the reference executor on known values).
    #[test]
    fn every_read_op_has_a_lit_test() {
        // `tosa.const_shape` is read with its users (reshape, slice, pad, tile).
        let own_test = |o: &&TosaOp| o.read_as.is_some() && o.name != "tosa.const_shape";
        for o in TOSA_OPS.iter().filter(own_test) {
            let file = workspace()
                .join("lit-tests/tosa")
                .join(format!("{}.mlir", o.name.trim_start_matches("tosa.")));
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            assert!(
                text.contains(o.name),
                "{} does not use {}",
                file.display(),
                o.name
            );
        }
    }

    /// The README shows this very table.
    #[test]
    fn readme_shows_the_coverage_table() {
        let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
        assert!(
            readme.contains(&markdown_table()),
            "README.md's TOSA coverage table is stale; replace it with:\n{}",
            markdown_table()
        );
    }

    #[test]
    fn every_written_op_is_a_registered_nn_op() {
        let d = ipuc_dialects::nn::dialect();
        for name in WRITTEN_NN_OPS {
            assert!(d.ops.iter().any(|o| o.name == *name), "{name}");
        }
    }
}
