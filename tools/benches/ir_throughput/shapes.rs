//! The IR shapes the throughput benchmark generates, each written twice:
//! in the generic form (what upstream `mlir-opt-22` reads, as it knows no
//! `nn` op) and in the custom forms of `func` and `nn` (unregistered ops
//! stay generic there, as they must).
//!
//! Every function holds [`OPS_PER_FUNCTION`] operations counting the
//! `func.func` and its `return`; each shape is IR of a kind people write:
//!
//! - `scalar`: `i32` arithmetic in unregistered ops, every tenth with an
//!   integer attribute (the shape the README quoted before).
//! - `tensor`: registered `nn` ops over `tensor<729x1152xf16>`,
//!   `tensor<1x16x729x72xbf16>` and `tensor<?x4304xf32>` values.
//! - `attrs`: `nn` ops with their inherent attributes (integers, floats,
//!   strings, dense arrays) plus a discardable `onnx.name`, and an
//!   unregistered op with a wide dictionary.
//! - `regions`: unregistered ops with regions of two blocks (arguments,
//!   a branch with successor operands) holding a nested region.
//! - `resources`: `nn.constant` weights as `dense_resource` blobs of
//!   2 KiB each, and the `dialect_resources` section that holds them.

use std::fmt::Write as _;

/// Operations per function, counting `func.func` and its `return`.
pub const OPS_PER_FUNCTION: usize = 100;

/// One IR shape of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Scalar,
    Tensor,
    Attrs,
    Regions,
    Resources,
}

impl Shape {
    pub const ALL: [Shape; 5] = [
        Shape::Scalar,
        Shape::Tensor,
        Shape::Attrs,
        Shape::Regions,
        Shape::Resources,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Scalar => "scalar",
            Shape::Tensor => "tensor",
            Shape::Attrs => "attrs",
            Shape::Regions => "regions",
            Shape::Resources => "resources",
        }
    }

    pub fn from_name(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The textual form a module is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Every operation in the generic form.
    Generic,
    /// `func` and `nn` ops in their custom forms.
    Custom,
}

/// A module of `shape` with at least `total_ops` operations, in `form`.
pub fn generate(shape: Shape, form: Form, total_ops: usize) -> String {
    let funcs = total_ops.div_ceil(OPS_PER_FUNCTION).max(1);
    let mut w = Writer {
        out: String::with_capacity(total_ops * 160),
        form,
        blobs: 0,
    };
    if form == Form::Generic {
        w.out.push_str("\"builtin.module\"() ({\n");
    } else {
        w.out.push_str("module {\n");
    }
    for f in 0..funcs {
        match shape {
            Shape::Scalar => scalar_function(&mut w, f),
            Shape::Tensor => tensor_function(&mut w, f),
            Shape::Attrs => attrs_function(&mut w, f),
            Shape::Regions => regions_function(&mut w, f),
            Shape::Resources => resources_function(&mut w, f),
        }
    }
    if form == Form::Generic {
        w.out.push_str("}) : () -> ()\n");
    } else {
        w.out.push_str("}\n");
    }
    if w.blobs > 0 {
        resource_section(&mut w.out, w.blobs);
    }
    w.out
}

/// Appends text in one form, numbering resource blobs as they are used.
struct Writer {
    out: String,
    form: Form,
    blobs: usize,
}

/// One single-result operation; `registered` ops have the `nn` custom form.
struct Op<'a> {
    result: &'a str,
    name: &'a str,
    operands: &'a [&'a str],
    operand_types: &'a [&'a str],
    result_type: &'a str,
    /// Inherent attributes (properties in the generic form), `k = v, ...`.
    props: &'a str,
    /// Discardable attributes, `k = v, ...`.
    attrs: &'a str,
    registered: bool,
}

impl Writer {
    fn custom(&self) -> bool {
        self.form == Form::Custom
    }

    fn op(&mut self, op: &Op<'_>) {
        let out = &mut self.out;
        let _ = write!(out, "    %{} = ", op.result);
        if self.form == Form::Custom && op.registered {
            let _ = write!(out, "{}", op.name);
            for (i, v) in op.operands.iter().enumerate() {
                out.push_str(if i == 0 { " %" } else { ", %" });
                out.push_str(v);
            }
            let dict: Vec<&str> = [op.props, op.attrs]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            if !dict.is_empty() {
                let _ = write!(out, " {{{}}}", dict.join(", "));
            }
            out.push_str(" : ");
            if !op.operand_types.is_empty() {
                out.push_str(&op.operand_types.join(", "));
                out.push(' ');
            }
            let _ = writeln!(out, "-> {}", op.result_type);
        } else {
            let _ = write!(out, "\"{}\"(", op.name);
            for (i, v) in op.operands.iter().enumerate() {
                out.push_str(if i == 0 { "%" } else { ", %" });
                out.push_str(v);
            }
            out.push(')');
            if !op.props.is_empty() {
                let _ = write!(out, " <{{{}}}>", op.props);
            }
            if !op.attrs.is_empty() {
                let _ = write!(out, " {{{}}}", op.attrs);
            }
            let _ = writeln!(
                out,
                " : ({}) -> {}",
                op.operand_types.join(", "),
                op.result_type
            );
        }
    }

    /// A function `name(args) -> results` whose body `body` writes; it
    /// returns `returned`.
    fn function(
        &mut self,
        name: &str,
        args: &[&str],
        results: &[&str],
        returned: &[String],
        body: impl FnOnce(&mut Writer),
    ) {
        let arg_list = args
            .iter()
            .enumerate()
            .map(|(i, t)| format!("%arg{i}: {t}"))
            .collect::<Vec<_>>()
            .join(", ");
        let result_list = if results.len() == 1 {
            results[0].to_string()
        } else {
            format!("({})", results.join(", "))
        };
        let _ = self.custom();
        if self.custom() {
            let _ = writeln!(
                self.out,
                "  func.func @{name}({arg_list}) -> {result_list} {{"
            );
        } else {
            let _ = writeln!(
                self.out,
                "  \"func.func\"() <{{function_type = ({}) -> {result_list}, sym_name = \"{name}\"}}> ({{\n  ^bb0({arg_list}):",
                args.join(", ")
            );
        }
        body(self);
        let values = returned
            .iter()
            .map(|v| format!("%{v}"))
            .collect::<Vec<_>>()
            .join(", ");
        if self.custom() {
            let _ = writeln!(
                self.out,
                "    return {values} : {}\n  }}",
                results.join(", ")
            );
        } else {
            let _ = writeln!(
                self.out,
                "    \"func.return\"({values}) : ({}) -> ()\n  }}) : () -> ()",
                results.join(", ")
            );
        }
    }
}

/// Body operations per function (all but `func.func` and `return`).
const BODY_OPS: usize = OPS_PER_FUNCTION - 2;

fn scalar_function(w: &mut Writer, f: usize) {
    let last = (BODY_OPS - 1).to_string();
    w.function(&format!("f{f}"), &["i32", "i32"], &["i32"], &[last], |w| {
        for i in 0..BODY_OPS {
            let (result, prev) = (
                i.to_string(),
                if i == 0 {
                    "arg1".to_string()
                } else {
                    (i - 1).to_string()
                },
            );
            let scale = format!("scale = {i} : i64");
            let mul = i % 10 == 9;
            w.op(&Op {
                result: &result,
                name: if mul { "test.mul" } else { "test.add" },
                operands: &[&prev, if mul { "arg1" } else { "arg0" }],
                operand_types: &["i32", "i32"],
                result_type: "i32",
                props: "",
                attrs: if mul { &scale } else { "" },
                registered: false,
            });
        }
    });
}

const F16: &str = "tensor<729x1152xf16>";
const F16_W: &str = "tensor<1152x1152xf16>";
const BF16: &str = "tensor<1x16x729x72xbf16>";
const DYN: &str = "tensor<?x4304xf32>";
const DYN_B: &str = "tensor<4304xf32>";

/// Three chains of `nn` ops, one per tensor type, interleaved.
fn tensor_function(w: &mut Writer, f: usize) {
    // The last value of each chain, returned at the end.
    let mut last = ["arg0".to_string(), "arg2".to_string(), "arg3".to_string()];
    let mut returned = Vec::new();
    let mut ops = Vec::new();
    for i in 0..BODY_OPS {
        let chain = i % 3;
        let step = i / 3;
        let result = i.to_string();
        let prev = last[chain].clone();
        ops.push((result.clone(), chain, step, prev));
        last[chain] = result;
    }
    returned.extend(last.iter().cloned());
    w.function(
        &format!("f{f}"),
        &[F16, F16_W, BF16, DYN, DYN_B],
        &[F16, BF16, DYN],
        &returned,
        |w| {
            for (result, chain, step, prev) in &ops {
                let prev = prev.as_str();
                let (name, operands, operand_types, props): (&str, Vec<&str>, Vec<&str>, &str) =
                    match (chain, step % 3) {
                        (0, 0) => ("nn.matmul", vec![prev, "arg1"], vec![F16, F16_W], ""),
                        (0, 1) => ("nn.add", vec![prev, "arg0"], vec![F16, F16], ""),
                        (0, _) => ("nn.gelu", vec![prev], vec![F16], ""),
                        (1, 0) => ("nn.mul", vec![prev, "arg2"], vec![BF16, BF16], ""),
                        (1, 1) => ("nn.softmax", vec![prev], vec![BF16], "axis = -1 : i64"),
                        (1, _) => ("nn.sigmoid", vec![prev], vec![BF16], ""),
                        (_, 0) => ("nn.add", vec![prev, "arg4"], vec![DYN, DYN_B], ""),
                        (_, 1) => ("nn.relu", vec![prev], vec![DYN], ""),
                        (_, _) => ("nn.tanh", vec![prev], vec![DYN], ""),
                    };
                let result_type = operand_types[0];
                w.op(&Op {
                    result,
                    name,
                    operands: &operands,
                    operand_types: &operand_types,
                    result_type,
                    props,
                    attrs: "",
                    registered: true,
                });
            }
        },
    );
}

const ACT: &str = "tensor<729x1152xf32>";
const VEC: &str = "tensor<1152xf32>";

/// `nn` ops with attribute dictionaries, as an importer writes them.
fn attrs_function(w: &mut Writer, f: usize) {
    let last = (BODY_OPS - 1).to_string();
    w.function(&format!("f{f}"), &[ACT, VEC, VEC], &[ACT], &[last], |w| {
        for i in 0..BODY_OPS {
            let result = i.to_string();
            let prev = if i == 0 { "arg0".to_string() } else { (i - 1).to_string() };
            let name_attr = format!(
                "onnx.name = \"/vision_model/encoder/layers.{}/op_{i}\"",
                f % 27
            );
            let (name, operands, operand_types, props, registered): (&str, Vec<&str>, Vec<&str>, String, bool) =
                match i % 6 {
                    0 => (
                        "nn.layer_normalization",
                        vec![&prev, "arg1", "arg2"],
                        vec![ACT, VEC, VEC],
                        "axis = -1 : i64, epsilon = 9.99999997E-7 : f32".into(),
                        true,
                    ),
                    1 => (
                        "nn.gelu",
                        vec![&prev],
                        vec![ACT],
                        "approximate = \"tanh\"".into(),
                        true,
                    ),
                    2 => (
                        "nn.slice",
                        vec![&prev],
                        vec![ACT],
                        "axes = array<i64: 0, 1>, ends = array<i64: 729, 1152>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>".into(),
                        true,
                    ),
                    3 => (
                        "nn.softmax",
                        vec![&prev],
                        vec![ACT],
                        "axis = 1 : i64".into(),
                        true,
                    ),
                    4 => (
                        "nn.mod",
                        vec![&prev, "arg1"],
                        vec![ACT, VEC],
                        "fmod = 1 : i64".into(),
                        true,
                    ),
                    _ => (
                        "test.annotate",
                        vec![&prev],
                        vec![ACT],
                        String::new(),
                        false,
                    ),
                };
            let attrs = if registered {
                name_attr
            } else {
                format!(
                    "{name_attr}, alpha = 5.000000e-01 : f32, group = {i} : i64, kernel_shape = array<i64: 3, 3>, \
                     pads = [0, 0, 1, 1], mode = \"constant\", scales = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, \
                     enabled = true, table = {{key = \"k{i}\", value = 7 : i32}}"
                )
            };
            w.op(&Op {
                result: &result,
                name,
                operands: &operands,
                operand_types: &operand_types,
                result_type: ACT,
                props: &props,
                attrs: &attrs,
                registered,
            });
        }
    });
}

/// Region operations: two blocks with a branch, a nested single-block region.
fn regions_function(w: &mut Writer, f: usize) {
    // Each region op holds five ops besides itself.
    const PER_REGION_OP: usize = 6;
    let count = BODY_OPS / PER_REGION_OP;
    let plain = BODY_OPS - count * PER_REGION_OP;
    let last = format!("r{}", count - 1);
    w.function(&format!("f{f}"), &["i32", "i32"], &["i32"], &[last], |w| {
        for i in 0..plain {
            let _ = writeln!(
                w.out,
                "    %p{i} = \"test.add\"(%arg0, %arg1) : (i32, i32) -> i32"
            );
        }
        for k in 0..count {
            let prev = if k == 0 {
                "arg0".to_string()
            } else {
                format!("r{}", k - 1)
            };
            let _ = write!(
                w.out,
                "    %r{k} = \"test.loop\"(%{prev}, %arg1) ({{\n\
                 \x20   ^bb0(%a{k}: i32, %b{k}: i32):\n\
                 \x20     %s{k} = \"test.add\"(%a{k}, %b{k}) : (i32, i32) -> i32\n\
                 \x20     \"test.br\"(%s{k})[^bb1] : (i32) -> ()\n\
                 \x20   ^bb1(%t{k}: i32):\n\
                 \x20     %u{k} = \"test.inner\"(%t{k}) ({{\n\
                 \x20     ^bb0(%q{k}: i32):\n\
                 \x20       \"test.yield\"(%q{k}) : (i32) -> ()\n\
                 \x20     }}) {{depth = 2 : i64}} : (i32) -> i32\n\
                 \x20     \"test.yield\"(%u{k}) : (i32) -> ()\n\
                 \x20   }}) {{kind = \"loop\"}} : (i32, i32) -> i32\n"
            );
        }
    });
}

const WEIGHT: &str = "tensor<32x32xf16>";

/// A chain of `nn.add`s, every tenth op a `dense_resource` weight.
fn resources_function(w: &mut Writer, f: usize) {
    let last = (BODY_OPS - 1).to_string();
    let _ = f;
    w.function(&format!("f{f}"), &[WEIGHT], &[WEIGHT], &[last], |w| {
        let mut weight = String::from("arg0");
        for i in 0..BODY_OPS {
            let result = i.to_string();
            let prev = if i == 0 {
                "arg0".to_string()
            } else {
                (i - 1).to_string()
            };
            if i % 10 == 0 {
                let blob = w.blobs;
                w.blobs += 1;
                let value = format!("value = dense_resource<w{blob}> : {WEIGHT}");
                if w.custom() {
                    let _ = writeln!(
                        w.out,
                        "    %{result} = nn.constant dense_resource<w{blob}> : {WEIGHT}"
                    );
                } else {
                    w.op(&Op {
                        result: &result,
                        name: "nn.constant",
                        operands: &[],
                        operand_types: &[],
                        result_type: WEIGHT,
                        props: &value,
                        attrs: "",
                        registered: true,
                    });
                }
                weight = result;
                continue;
            }
            w.op(&Op {
                result: &result,
                name: "nn.add",
                operands: &[&prev, &weight],
                operand_types: &[WEIGHT, WEIGHT],
                result_type: WEIGHT,
                props: "",
                attrs: "",
                registered: true,
            });
        }
    });
}

/// Bytes of each weight blob (a `tensor<32x32xf16>`).
const BLOB_BYTES: usize = 32 * 32 * 2;

/// The `dialect_resources` section with `blobs` deterministic weights.
fn resource_section(out: &mut String, blobs: usize) {
    out.push_str("\n{-#\n  dialect_resources: {\n    builtin: {\n");
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for b in 0..blobs {
        // f16's alignment (2), little-endian, then the bytes.
        let _ = write!(out, "      w{b}: \"0x02000000");
        for _ in 0..BLOB_BYTES {
            // xorshift64: deterministic, cheap, and not a run of zeros.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let _ = write!(out, "{:02X}", (state >> 24) as u8);
        }
        out.push('"');
        out.push_str(if b + 1 < blobs { ",\n" } else { "\n" });
    }
    out.push_str("    }\n  }\n#-}\n");
}
