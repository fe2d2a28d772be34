//! The `ipu` dialect: per-tile programs in Graphcore tile assembly, held in
//! the IR so that passes can schedule and bundle instructions. Printing it
//! as assembly (backend-ipu's `emit`) is a view of these ops, not a separate
//! code path.
//!
//! ```mlir
//! ipu.executable machine = "c600" {
//!   ipu.tensor input @a : tensor<4xf32> pieces [(0, 0x70000, 0, 4)]
//!   ipu.tile 0 {
//!     ipu.section ".text.main", "ax" supervisor {
//!       ipu.directive globl @main
//!       ipu.label @main
//!       ipu.inst setzi m0, 0x70000
//!       ipu.inst exitz mzero
//!     }
//!   }
//! }
//! ```
//!
//! - `ipu.executable`: the whole-chip program; attribute `machine` (`"c600"`
//!   or `"bow"`); a symbol table holding `ipu.tile` and `ipu.tensor` ops.
//! - `ipu.tensor`: a host-visible tensor (symbol): its type, its direction
//!   (`input`: streamed to the tiles before the run, `output`: streamed back
//!   after it, `internal`: neither, `constant`: its `value` is loaded with
//!   the program, and its pieces may repeat elements on several tiles) and its pieces, each `(tile, address,
//!   first element, element count)` of the row-major elements. FP8 tensors
//!   carry their power-of-two scale in `fp8_scale`.
//! - `ipu.tile`: one tile's program (attribute `tile`, optional `entry`
//!   symbol, default `main`).
//! - `ipu.section`: a `.section NAME, "FLAGS"` whose items all run in one
//!   context `kind` (`supervisor` or `worker`). A mode switch in the middle of
//!   an assembler section becomes a second `ipu.section` of the same name
//!   (the assembler appends to a section named again), so the kind of every
//!   instruction is known from its section.
//! - `ipu.label`: a label (`sym_name`), unique within its tile.
//! - `ipu.inst`: `mnemonic` and `operands` (see [`operand`]).
//! - `ipu.bundle`: `{ main ; aux }`: exactly two `ipu.inst`, main first.
//! - `ipu.directive`: `.globl`, `.type`, `.size`, `.align`, `.word`,
//!   `.space`, `.stack` and friends (attribute `name` without the dot, and
//!   `args`). Mode switches are the section's `kind`, not directives.

pub mod build;
mod custom_format;
pub mod operand;

use ipuc_ir::attributes::{AttrKind, Attribute};
use ipuc_ir::builtin::SYM_NAME;
use ipuc_ir::dialect::{AttrDecl, Dialect, OpDefinition, Traits};
use ipuc_ir::dialect_symbols::SymbolDef;
use ipuc_ir::{Context, Diagnostic, OpId, TypeKind};

pub use build::SectionKind;
pub use operand::{format_imm, is_register_name, Operand, OperandError, Register};

/// `ipu.executable`.
pub const EXECUTABLE: &str = "ipu.executable";
/// `ipu.tensor`.
pub const TENSOR: &str = "ipu.tensor";
/// `ipu.tile`.
pub const TILE: &str = "ipu.tile";
/// `ipu.section`.
pub const SECTION: &str = "ipu.section";
/// `ipu.label`.
pub const LABEL: &str = "ipu.label";
/// `ipu.inst`.
pub const INST: &str = "ipu.inst";
/// `ipu.bundle`.
pub const BUNDLE: &str = "ipu.bundle";
/// `ipu.directive`.
pub const DIRECTIVE: &str = "ipu.directive";

/// Direction of an `ipu.tensor`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TensorDirection {
    /// Written by the host before the run.
    Input,
    /// Read by the host after the run.
    Output,
    /// Neither (state that stays on the device).
    Internal,
    /// Data loaded with the program (weights): its `value` is written to
    /// every piece. A constant's pieces may repeat elements (replicas on
    /// several tiles).
    Constant,
}

impl TensorDirection {
    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            TensorDirection::Input => "input",
            TensorDirection::Output => "output",
            TensorDirection::Internal => "internal",
            TensorDirection::Constant => "constant",
        }
    }
    /// Parses the keyword.
    pub fn parse(s: &str) -> Option<TensorDirection> {
        match s {
            "input" => Some(TensorDirection::Input),
            "output" => Some(TensorDirection::Output),
            "internal" => Some(TensorDirection::Internal),
            "constant" => Some(TensorDirection::Constant),
            _ => None,
        }
    }
}

/// One piece of an `ipu.tensor`: `count` elements from `first` at `address` on `tile`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TensorPiece {
    /// Tile.
    pub tile: i64,
    /// Tile address.
    pub address: i64,
    /// First element (row-major).
    pub first: i64,
    /// Element count.
    pub count: i64,
}

impl TensorPiece {
    /// The `array<i64: tile, address, first, count>` attribute.
    pub fn to_attr(self) -> Attribute {
        Attribute::dense_i64_array(&[self.tile, self.address, self.first, self.count])
    }
    /// Reads a piece attribute.
    pub fn from_attr(a: &Attribute) -> Option<TensorPiece> {
        match a.as_i64_list()?.as_slice() {
            &[tile, address, first, count] => Some(TensorPiece {
                tile,
                address,
                first,
                count,
            }),
            _ => None,
        }
    }
}

const MACHINE: AttrDecl = AttrDecl {
    name: "machine",
    description: "string \"c600\" or \"bow\"",
    check: |a| {
        a.as_str()
            .is_some_and(|s| ipuc_ipu_arch::MachineModel::by_name(s).is_some())
    },
    optional: false,
};
const TILE_INDEX: AttrDecl = AttrDecl {
    name: "tile",
    description: "non-negative integer",
    check: |a| {
        a.as_int()
            .is_some_and(|v| (0..=i128::from(u32::MAX)).contains(&v))
    },
    optional: false,
};
const ENTRY: AttrDecl = AttrDecl {
    name: "entry",
    description: "flat symbol reference",
    check: |a| matches!(a.kind(), AttrKind::SymbolRef { nested, .. } if nested.is_empty()),
    optional: true,
};
const SECTION_NAME: AttrDecl = AttrDecl {
    name: "name",
    description: "non-empty string",
    check: |a| {
        a.as_str()
            .is_some_and(|s| !s.is_empty() && !s.contains(['"', '\n', ',']))
    },
    optional: false,
};
const SECTION_FLAGS: AttrDecl = AttrDecl {
    name: "flags",
    description: "string",
    check: |a| a.as_str().is_some_and(|s| !s.contains(['"', '\n'])),
    optional: true,
};
const KIND: AttrDecl = AttrDecl {
    name: "kind",
    description: "string \"supervisor\" or \"worker\"",
    check: |a| matches!(a.as_str(), Some("supervisor" | "worker")),
    optional: false,
};
const MNEMONIC: AttrDecl = AttrDecl {
    name: "mnemonic",
    description: "instruction mnemonic string",
    check: |a| {
        a.as_str().is_some_and(|s| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    },
    optional: false,
};
const OPERANDS: AttrDecl = AttrDecl {
    name: "operands",
    description: "array of operands",
    check: |a| a.as_array().is_some(),
    optional: false,
};
const DIRECTIVE_NAME: AttrDecl = AttrDecl {
    name: "name",
    description: "directive name",
    check: |a| a.as_str().is_some(),
    optional: false,
};
const ARGS: AttrDecl = AttrDecl {
    name: "args",
    description: "array of operands",
    check: |a| a.as_array().is_some(),
    optional: false,
};
const TENSOR_TYPE: AttrDecl = AttrDecl {
    name: "tensor_type",
    description: "statically shaped tensor type",
    check: |a| {
        a.as_type().is_some_and(
            |t| matches!(t.kind(), TypeKind::RankedTensor { shape, .. } if shape.iter().all(|&d| d >= 0)),
        )
    },
    optional: false,
};
const DIRECTION: AttrDecl = AttrDecl {
    name: "direction",
    description: "string \"input\", \"output\", \"internal\" or \"constant\"",
    check: |a| a.as_str().and_then(TensorDirection::parse).is_some(),
    optional: false,
};
const PIECES: AttrDecl = AttrDecl {
    name: "pieces",
    description: "array of array<i64: tile, address, first element, count>",
    check: |a| {
        a.as_array()
            .is_some_and(|ps| ps.iter().all(|p| TensorPiece::from_attr(p).is_some()))
    },
    optional: false,
};
const VALUE: AttrDecl = AttrDecl {
    name: "value",
    description: "dense or dense_resource elements (constant tensors)",
    check: |a| {
        matches!(
            a.kind(),
            AttrKind::DenseElements(_) | AttrKind::DenseResource { .. }
        )
    },
    optional: true,
};
const FP8_SCALE: AttrDecl = AttrDecl {
    name: "fp8_scale",
    description: "integer in -31..=31",
    check: |a| a.as_int().is_some_and(|v| (-31..=31).contains(&v)),
    optional: true,
};

/// The `ipu` dialect.
pub fn dialect() -> Dialect {
    let container = Traits::SINGLE_BLOCK | Traits::NO_TERMINATOR;
    let mut d = Dialect::new(
        "ipu",
        "Per-tile IPU programs: sections, labels, instructions, bundles and directives",
    )
    .op(OpDefinition::new(EXECUTABLE)
        .summary("A whole-chip program: tile programs and host-visible tensors")
        .traits(container | Traits::SYMBOL_TABLE | Traits::ISOLATED_FROM_ABOVE)
        .attribute(MACHINE)
        .operands(&[])
        .results(&[])
        .regions(Some(1))
        .verifier(verify_executable)
        .custom_assembly_format(
            custom_format::print_executable,
            custom_format::parse_executable,
        ))
    .op(OpDefinition::new(TENSOR)
        .summary("A host-visible tensor and where its pieces live")
        .traits(Traits::SYMBOL)
        .attribute(SYM_NAME)
        .attribute(TENSOR_TYPE)
        .attribute(DIRECTION)
        .attribute(PIECES)
        .attribute(VALUE)
        .attribute(FP8_SCALE)
        .operands(&[])
        .results(&[])
        .verifier(verify_tensor)
        .custom_assembly_format(custom_format::print_tensor, custom_format::parse_tensor))
    .op(OpDefinition::new(TILE)
        .summary("One tile's program")
        .traits(container | Traits::ISOLATED_FROM_ABOVE)
        .attribute(TILE_INDEX)
        .attribute(ENTRY)
        .operands(&[])
        .results(&[])
        .regions(Some(1))
        .verifier(verify_tile)
        .custom_assembly_format(custom_format::print_tile, custom_format::parse_tile))
    .op(OpDefinition::new(SECTION)
        .summary("A section of a tile program, run by one kind of context")
        .traits(container)
        .attribute(SECTION_NAME)
        .attribute(SECTION_FLAGS)
        .attribute(KIND)
        .operands(&[])
        .results(&[])
        .regions(Some(1))
        .verifier(verify_section)
        .custom_assembly_format(custom_format::print_section, custom_format::parse_section))
    .op(OpDefinition::new(LABEL)
        .summary("A code or data label")
        .traits(Traits::SYMBOL)
        .attribute(SYM_NAME)
        .operands(&[])
        .results(&[])
        .verifier(verify_label)
        .custom_assembly_format(custom_format::print_label, custom_format::parse_label))
    .op(OpDefinition::new(INST)
        .summary("One tile instruction: mnemonic and structured operands")
        .attribute(MNEMONIC)
        .attribute(OPERANDS)
        .operands(&[])
        .results(&[])
        .verifier(verify_inst)
        .custom_assembly_format(custom_format::print_inst, custom_format::parse_inst))
    .op(OpDefinition::new(BUNDLE)
        .summary("A main and an auxiliary instruction issued together")
        .traits(container)
        .operands(&[])
        .results(&[])
        .regions(Some(1))
        .verifier(verify_bundle)
        .custom_assembly_format(custom_format::print_bundle, custom_format::parse_bundle))
    .op(OpDefinition::new(DIRECTIVE)
        .summary("An assembler directive (.globl, .type, .size, .align, data, ...)")
        .attribute(DIRECTIVE_NAME)
        .attribute(ARGS)
        .operands(&[])
        .results(&[])
        .verifier(verify_directive)
        .custom_assembly_format(
            custom_format::print_directive,
            custom_format::parse_directive,
        ));
    // Checked as written (their spelling is already canonical).
    d.attributes = vec![
        SymbolDef {
            mnemonic: "reg",
            normalize: |b| Ok(operand::verify_reg_body(b).map(|()| b.to_string())?),
        },
        SymbolDef {
            mnemonic: "csr",
            normalize: |b| Ok(operand::verify_csr_body(b).map(|()| b.to_string())?),
        },
        SymbolDef {
            mnemonic: "at",
            normalize: |b| Ok(operand::verify_at_body(b).map(|()| b.to_string())?),
        },
    ];
    d
}

/// The ops of the single block of `op`'s first region (empty if none).
pub fn body_ops(ctx: &Context, op: OpId) -> Vec<OpId> {
    ctx.regions(op)
        .first()
        .and_then(|&r| ctx.entry_block(r))
        .map(|b| ctx.block_ops_vec(b))
        .unwrap_or_default()
}

fn expect_parent(ctx: &Context, op: OpId, parents: &[&str]) -> Result<(), Diagnostic> {
    match ctx.parent_op(op) {
        Some(p) if parents.contains(&ctx.name_str(p)) => Ok(()),
        _ => Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "expects parent op {}",
                parents
                    .iter()
                    .map(|p| format!("'{p}'"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        )),
    }
}

fn expect_children(ctx: &Context, op: OpId, allowed: &[&str]) -> Result<(), Diagnostic> {
    for child in body_ops(ctx, op) {
        if !allowed.contains(&ctx.name_str(child)) {
            return Err(Diagnostic::op_error(
                ctx,
                child,
                format!(
                    "is not allowed in '{}' (expected {})",
                    ctx.name_str(op),
                    allowed
                        .iter()
                        .map(|p| format!("'{p}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The tile number of an `ipu.tile`.
pub fn tile_index(ctx: &Context, tile: OpId) -> Option<u32> {
    ctx.attr(tile, "tile")
        .and_then(Attribute::as_int)
        .and_then(|v| u32::try_from(v).ok())
}

/// The pieces of an `ipu.tensor`.
pub fn tensor_pieces(ctx: &Context, tensor: OpId) -> Vec<TensorPiece> {
    ctx.attr(tensor, "pieces")
        .and_then(Attribute::as_array)
        .map(|ps| ps.iter().filter_map(TensorPiece::from_attr).collect())
        .unwrap_or_default()
}

/// The operands of an `ipu.inst` (or args of an `ipu.directive`), skipping
/// malformed ones (the verifier reports those).
pub fn operands_of(ctx: &Context, op: OpId) -> Vec<Operand> {
    let key = if ctx.name_str(op) == DIRECTIVE {
        "args"
    } else {
        "operands"
    };
    ctx.attr(op, key)
        .and_then(Attribute::as_array)
        .map(|xs| {
            xs.iter()
                .filter_map(|a| Operand::from_attr(a).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn verify_executable(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_children(ctx, op, &[TILE, TENSOR])?;
    let mut seen: std::collections::BTreeMap<u32, OpId> = Default::default();
    for child in body_ops(ctx, op) {
        if ctx.name_str(child) != TILE {
            continue;
        }
        if let Some(t) = tile_index(ctx, child) {
            if let Some(&prev) = seen.get(&t) {
                return Err(Diagnostic::op_error(
                    ctx,
                    child,
                    format!("tile {t} has a second program"),
                )
                .with_note(ctx.loc(prev).clone(), "first program of the tile"));
            }
            seen.insert(t, child);
        }
    }
    for child in body_ops(ctx, op) {
        if ctx.name_str(child) != TENSOR {
            continue;
        }
        for p in tensor_pieces(ctx, child) {
            if u32::try_from(p.tile).map_or(true, |t| !seen.contains_key(&t)) {
                return Err(Diagnostic::op_error(
                    ctx,
                    child,
                    format!("has a piece on tile {}, which has no 'ipu.tile'", p.tile),
                ));
            }
        }
    }
    Ok(())
}

fn verify_tensor(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[EXECUTABLE])?;
    let ty = ctx
        .attr(op, "tensor_type")
        .and_then(Attribute::as_type)
        .cloned()
        .expect("declared attribute");
    let TypeKind::RankedTensor { shape, .. } = ty.kind() else {
        unreachable!("checked by the attribute declaration")
    };
    let total: i64 = shape.iter().product();
    let mut pieces = tensor_pieces(ctx, op);
    if pieces.is_empty() {
        return Err(Diagnostic::op_error(ctx, op, "needs at least one piece"));
    }
    for p in &pieces {
        if p.tile < 0 || p.address < 0 || p.address % 4 != 0 || p.count <= 0 || p.first < 0 {
            return Err(Diagnostic::op_error(ctx, op, format!("piece (tile {}, address {}, first {}, count {}) needs a non-negative tile, a 4-byte aligned address and a positive count", p.tile, p.address, p.first, p.count)));
        }
    }
    let direction = ctx
        .attr(op, "direction")
        .and_then(Attribute::as_str)
        .and_then(TensorDirection::parse);
    let value = ctx.attr(op, "value");
    if direction == Some(TensorDirection::Constant) {
        let Some(value) = value else {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                "a constant tensor needs a value",
            ));
        };
        if value.ty() != Some(&ty) {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "value of type {} does not match the tensor type {ty}",
                    value.ty().map_or("none".to_string(), |t| t.to_string())
                ),
            ));
        }
        // Replicas may repeat elements; each piece stays inside the tensor.
        if let Some(p) = pieces.iter().find(|p| p.first + p.count > total) {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "piece (tile {}, first {}, count {}) runs past the tensor's {total} elements",
                    p.tile, p.first, p.count
                ),
            ));
        }
        return Ok(());
    }
    if value.is_some() {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            "only a constant tensor has a value",
        ));
    }
    pieces.sort_by_key(|p| p.first);
    let mut next = 0;
    for p in &pieces {
        if p.first != next {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "pieces must cover the elements exactly once: element {next} is {}",
                    if p.first > next {
                        "missing"
                    } else {
                        "covered twice"
                    }
                ),
            ));
        }
        next = p.first + p.count;
    }
    if next != total {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("pieces cover {next} elements, but the tensor has {total}"),
        ));
    }
    Ok(())
}

fn verify_tile(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[EXECUTABLE])?;
    expect_children(ctx, op, &[SECTION])?;
    let mut labels: rustc_hash::FxHashMap<String, OpId> = Default::default();
    for section in body_ops(ctx, op) {
        for item in body_ops(ctx, section) {
            if ctx.name_str(item) != LABEL {
                continue;
            }
            if let Some(name) = ctx.attr(item, "sym_name").and_then(Attribute::as_str) {
                if let Some(&prev) = labels.get(name) {
                    return Err(Diagnostic::op_error(
                        ctx,
                        item,
                        format!("label @{name} is already defined in this tile"),
                    )
                    .with_note(ctx.loc(prev).clone(), "previous definition"));
                }
                labels.insert(name.to_string(), item);
            }
        }
    }
    Ok(())
}

fn verify_section(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[TILE])?;
    expect_children(ctx, op, &[LABEL, INST, BUNDLE, DIRECTIVE])
}

fn verify_label(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[SECTION])
}

fn verify_operand_list(ctx: &Context, op: OpId, key: &str) -> Result<Vec<Operand>, Diagnostic> {
    let items = ctx
        .attr(op, key)
        .and_then(Attribute::as_array)
        .map(<[Attribute]>::to_vec)
        .unwrap_or_default();
    items
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Operand::from_attr(a)
                .map_err(|e| Diagnostic::op_error(ctx, op, format!("{key} #{i}: {e}")))
        })
        .collect()
}

fn verify_inst(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[SECTION, BUNDLE])?;
    for (i, o) in verify_operand_list(ctx, op, "operands")?.iter().enumerate() {
        if let Operand::At(k) = o {
            return Err(Diagnostic::op_error(
                ctx,
                op,
                format!(
                    "operands #{i}: `@{k}` is a directive argument, not an instruction operand"
                ),
            ));
        }
    }
    Ok(())
}

fn verify_bundle(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[SECTION])?;
    let ops = body_ops(ctx, op);
    if ops.len() != 2 || ops.iter().any(|&o| ctx.name_str(o) != INST) {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "holds exactly two 'ipu.inst' (main, then aux), found {} op(s)",
                ops.len()
            ),
        ));
    }
    Ok(())
}

fn verify_directive(ctx: &Context, op: OpId) -> Result<(), Diagnostic> {
    expect_parent(ctx, op, &[SECTION])?;
    let name = ctx
        .attr(op, "name")
        .and_then(Attribute::as_str)
        .unwrap_or("");
    if matches!(name, "worker" | "supervisor" | "section" | "text" | "data") {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("`.{name}` is expressed by 'ipu.section' (its name, flags and kind), not by a directive"),
        ));
    }
    if !ipuc_ipu_arch::asm::DIRECTIVES.contains(&name) {
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!(
                "unknown directive `.{name}` (known: {})",
                ipuc_ipu_arch::asm::DIRECTIVES.join(", ")
            ),
        ));
    }
    let args = verify_operand_list(ctx, op, "args")?;
    let is_sym = |o: &Operand| matches!(o, Operand::Symbol(_));
    let is_value =
        |o: &Operand| matches!(o, Operand::Imm(_) | Operand::Symbol(_) | Operand::Expr(_));
    let ok = match name {
        "globl" | "global" => args.len() == 1 && is_sym(&args[0]),
        "type" => args.len() == 2 && is_sym(&args[0]) && matches!(args[1], Operand::At(_)),
        "size" => args.len() == 2 && is_sym(&args[0]) && is_value(&args[1]),
        "align" | "balign" => {
            (1..=2).contains(&args.len()) && args.iter().all(|a| matches!(a, Operand::Imm(_)))
        }
        "word" | "int" | "long" => !args.is_empty() && args.iter().all(is_value),
        "space" | "zero" => args.len() == 1 && matches!(args[0], Operand::Imm(_)),
        "stack" => args.len() == 3 && is_sym(&args[0]) && args[1..].iter().all(is_value),
        _ => true,
    };
    if !ok {
        let expected = match name {
            "globl" | "global" => "one symbol",
            "type" => "a symbol and a kind (#ipu.at<function>)",
            "size" => "a symbol and a size",
            "align" | "balign" => "an integer alignment",
            "word" | "int" | "long" => "one or more values",
            "space" | "zero" => "an integer byte count",
            _ => "`supervisor` or `worker`, a top and a size",
        };
        return Err(Diagnostic::op_error(
            ctx,
            op,
            format!("`.{name}` expects {expected}"),
        ));
    }
    Ok(())
}
