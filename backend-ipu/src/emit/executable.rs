//! `ipu` IR to an [`Executable`]: every tile's ops become the assembler's
//! statements directly ([`super::statements`]: no text is printed or parsed)
//! and are encoded by the target's assembler; its errors come back as
//! diagnostics at the op a statement came from.
//!
//! Tensor bindings and host streams come from the `ipu.tensor` ops: one
//! binding per piece; an `input` tensor gets a host-to-device stream and an
//! `output` tensor a device-to-host stream, each named after the tensor, in
//! op order (inputs first).

use ipuc_dialects::ipu::{self, TensorDirection, TensorPiece};
use ipuc_ir::attributes::{AttrKind, Attribute};
use ipuc_ir::{Context, Diagnostic, FloatKind, OpId, TypeKind, WalkOrder};

use super::statements::tile_statements;
use crate::codelets::scope::section_block;
use ipuc_ipu_arch::exe::DType;
use ipuc_ipu_arch::image::Section;
use ipuc_ipu_arch::{
    asm::assemble_statements, AsmOptions, Executable, HostStream, MachineModel, StreamDirection,
    TensorBinding, TileProgram,
};
use std::collections::BTreeMap;

/// The single `ipu.executable` nested in `root` (or `root` itself).
pub fn find_executable(ctx: &Context, root: OpId) -> Result<OpId, Diagnostic> {
    let found: Vec<OpId> = ctx
        .collect_ops(root, WalkOrder::PreOrder)
        .into_iter()
        .filter(|&op| ctx.name_str(op) == ipu::EXECUTABLE)
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(Diagnostic::error(
            ctx.loc(root).clone(),
            "the module holds no 'ipu.executable': there is no tile code to emit (lower the program to the ipu dialect first)",
        )),
        [_, second, ..] => Err(Diagnostic::error(
            ctx.loc(*second).clone(),
            format!(
                "the module holds {} 'ipu.executable' ops; emitting needs exactly one",
                found.len()
            ),
        )),
    }
}

fn dtype_of(ctx: &Context, tensor: OpId) -> Result<(DType, Vec<u64>), Diagnostic> {
    let ty = ctx
        .attr(tensor, "tensor_type")
        .and_then(Attribute::as_type)
        .cloned();
    let err = |msg: String| Diagnostic::error(ctx.loc(tensor).clone(), msg);
    let Some(ty) = ty else {
        return Err(err("'ipu.tensor' has no tensor_type".into()));
    };
    let TypeKind::RankedTensor { shape, element, .. } = ty.kind() else {
        return Err(err(format!(
            "'ipu.tensor' type {ty} is not a ranked tensor"
        )));
    };
    let dtype = match element.kind() {
        TypeKind::Float(FloatKind::F32) => DType::F32,
        TypeKind::Float(FloatKind::F16) => DType::F16,
        TypeKind::Float(FloatKind::F8E4M3FNUZ) => DType::F8E4M3FNUZ {
            scale: ctx
                .attr(tensor, "fp8_scale")
                .and_then(Attribute::as_int)
                .map_or(0, |s| s as i8),
        },
        _ => {
            let int = match element.kind() {
                TypeKind::Integer { width, signedness } => Some((*width, *signedness)),
                _ => None,
            };
            match int {
                Some((32, ipuc_ir::types::Signedness::Unsigned)) => DType::U32,
                Some((32, _)) => DType::I32,
                Some((8, _)) => DType::U8,
                _ => {
                    return Err(err(format!(
                        "element type {element} has no executable binding type (f32, f16, f8E4M3FNUZ, i32, ui32, i8 are supported)"
                    )))
                }
            }
        }
    };
    Ok((dtype, shape.iter().map(|&d| d as u64).collect()))
}

/// Names of the image sections that hold constant tensors' pieces: the
/// prefix, then the tensor's name. They are loaded with the program beside
/// the assembled sections.
pub const CONSTANT_SECTION_PREFIX: &str = ".const.";

/// The bytes of a tensor constant's value (a splat expanded to `count`
/// elements of `size` bytes).
fn constant_bytes(value: &Attribute, count: usize, size: usize) -> Result<Vec<u8>, String> {
    match value.kind() {
        AttrKind::DenseElements(d) if d.splat => Ok(d.data.repeat(count)),
        AttrKind::DenseElements(d) => Ok(d.data.to_vec()),
        AttrKind::DenseResource { resource, .. } => resource
            .blob()
            .map(|b| b.data.to_vec())
            .ok_or_else(|| format!("resource '{}' has no data", resource.name())),
        _ => Err(format!("{value} is not a tensor constant")),
    }
    .and_then(|bytes| {
        if bytes.len() == count * size {
            Ok(bytes)
        } else {
            Err(format!(
                "the value holds {} bytes, the tensor {}",
                bytes.len(),
                count * size
            ))
        }
    })
}

/// Each piece of constant `tensor` with the bytes the executable loads
/// there.
pub(crate) fn constant_piece_bytes(
    ctx: &Context,
    tensor: OpId,
) -> Result<Vec<(TensorPiece, Vec<u8>)>, Diagnostic> {
    let err = |msg: String| Diagnostic::op_error(ctx, tensor, msg);
    let (dtype, shape) = dtype_of(ctx, tensor)?;
    let size = dtype.size() as usize;
    let count = shape.iter().product::<u64>() as usize;
    let value = ctx
        .attr(tensor, "value")
        .ok_or_else(|| err("a constant tensor needs a value".into()))?;
    let bytes = constant_bytes(value, count, size).map_err(err)?;
    ipu::tensor_pieces(ctx, tensor)
        .into_iter()
        .map(|p| {
            let from = p.first as usize * size;
            let to = from + p.count as usize * size;
            bytes
                .get(from..to)
                .map(|b| (p, b.to_vec()))
                .ok_or_else(|| err(format!("a piece reaches past its {} bytes", bytes.len())))
        })
        .collect()
}

/// Adds each piece of constant `tensor` to its tile's image as a data
/// section `.const.NAME` at the piece's address; a piece on a tile without
/// a program, or overlapping a section, is an error. Where a tile's own
/// code and data reach into a piece, the error says how large the program
/// is, once a tile and for the first [`SHOWN_OVERFLOWS`] tiles:
/// `overflowed` records every such tile (with its program's bytes), and
/// later pieces on them are skipped.
fn load_constant(
    ctx: &Context,
    tensor: OpId,
    name: &str,
    tiles: &mut [TileProgram],
    overflowed: &mut BTreeMap<u32, usize>,
) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let err = |msg: String| Diagnostic::op_error(ctx, tensor, msg);
    for (p, bytes) in constant_piece_bytes(ctx, tensor).map_err(|d| vec![d])? {
        let Some(program) = tiles.iter_mut().find(|t| i64::from(t.tile) == p.tile) else {
            errors.push(err(format!(
                "has a piece on tile {}, which has no program",
                p.tile
            )));
            return Err(errors);
        };
        let section = Section {
            name: format!("{CONSTANT_SECTION_PREFIX}{name}"),
            flags: "a".into(),
            is_code: false,
            address: p.address as u32,
            bytes,
            modes: Vec::new(),
        };
        let tile = program.tile;
        let image = &mut program.image;
        if let Some(o) = image
            .sections
            .iter()
            .find(|s| s.address < section.end() && section.address < s.end())
        {
            // Where the program's own sections (its code and data, not
            // other tensors) reach into the piece, say how far they take.
            let own_section = |s: &Section| !s.name.starts_with(CONSTANT_SECTION_PREFIX);
            let overlap = format!(
                "piece on tile {} at 0x{:x}..0x{:x} overlaps section `{}` at 0x{:x}..0x{:x}",
                p.tile,
                section.address,
                section.end(),
                o.name,
                o.address,
                o.end()
            );
            if !own_section(o) {
                errors.push(err(overlap));
                return Err(errors);
            }
            // The program is too large: said once a tile, for the first
            // few tiles; the other pieces go on being checked.
            if overflowed.contains_key(&tile) {
                continue;
            }
            let own = || image.sections.iter().filter(|s| own_section(s));
            let lo = own().map(|s| s.address).min().unwrap_or(o.address);
            let hi = own().map(Section::end).max().unwrap_or(o.end());
            let bytes: usize = own().map(|s| s.bytes.len()).sum();
            if overflowed.len() < SHOWN_OVERFLOWS {
                errors.push(err(format!(
                    "{overlap}: the tile's code and data take {bytes} bytes in 0x{lo:x}..0x{hi:x}{}, past the room the memory plan left for them below its tensors (the program is too large for this tile: a plan with less code, such as fewer exchange parts, is needed)",
                    by_block(own())
                )));
            }
            overflowed.insert(tile, bytes);
            continue;
        }
        let at = image
            .sections
            .partition_point(|s| s.address < section.address);
        image.sections.insert(at, section);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// How a tile's program `sections` divide among the chain's blocks
/// ([`section_block`]), largest first, and its three largest sections:
/// ` (by block, bytes: b1 30112, ...; largest sections: .data.b1 9000,
/// ...)`; empty where no section is a block's.
fn by_block<'a>(sections: impl Iterator<Item = &'a Section> + Clone) -> String {
    let mut largest: Vec<&Section> = sections.clone().collect();
    largest.sort_by_key(|s| (std::cmp::Reverse(s.bytes.len()), s.address));
    let largest: Vec<String> = largest
        .iter()
        .take(3)
        .map(|s| format!("{} {}", s.name, s.bytes.len()))
        .collect();
    let mut blocks: BTreeMap<&str, usize> = BTreeMap::new();
    let mut scoped = false;
    for s in sections {
        let block = section_block(&s.name);
        scoped |= block.is_some();
        *blocks
            .entry(block.unwrap_or("outside any block"))
            .or_default() += s.bytes.len();
    }
    if !scoped {
        return String::new();
    }
    let mut blocks: Vec<(&str, usize)> = blocks.into_iter().collect();
    blocks.sort_by_key(|&(name, bytes)| (std::cmp::Reverse(bytes), name));
    let parts: Vec<String> = blocks
        .iter()
        .map(|(name, bytes)| format!("{name} {bytes}"))
        .collect();
    format!(
        " (by block, bytes: {}; largest sections: {})",
        parts.join(", "),
        largest.join(", ")
    )
}

/// Tiles whose programs reach into their tensors that get an error each
/// ([`load_constant`]); the rest get one summary.
const SHOWN_OVERFLOWS: usize = 8;

/// The `ipu.tile` ops of `exe` with their tile numbers, in tile order.
fn tile_ops(ctx: &Context, exe: OpId) -> Vec<(u32, OpId)> {
    let mut tiles: Vec<(u32, OpId)> = ipu::body_ops(ctx, exe)
        .into_iter()
        .filter(|&op| ctx.name_str(op) == ipu::TILE)
        .map(|t| (ipu::tile_index(ctx, t).unwrap_or(0), t))
        .collect();
    tiles.sort_by_key(|t| t.0);
    tiles
}

/// A tile's assembly: its program and the supervisor stalls the assembler
/// warns about, or the errors.
type TileResult = Result<(TileProgram, Vec<Diagnostic>), Vec<Diagnostic>>;

/// Assembles tile `index` (op `tile`) of `machine`.
fn assemble_tile(ctx: &Context, machine: &MachineModel, index: u32, tile: OpId) -> TileResult {
    if index >= machine.tiles {
        return Err(vec![Diagnostic::error(
            ctx.loc(tile).clone(),
            format!(
                "tile {index} does not exist: machine '{}' has {} tiles",
                machine.name, machine.tiles
            ),
        )]);
    }
    let entry = ctx
        .attr(tile, "entry")
        .and_then(Attribute::as_symbol_root)
        .unwrap_or("main")
        .to_string();
    let opts = AsmOptions {
        file: format!("tile{index}"),
        entry,
        machine: machine.clone(),
    };
    let mut statements = tile_statements(ctx, tile).map_err(|d| vec![d])?;
    // The assembler takes the statements; positions map back through
    // `statements.ops`.
    match assemble_statements(std::mem::take(&mut statements.stmts), &opts) {
        Ok(a) => {
            // Pipeline stalls do not stop the build; they are reported at
            // the op that waits.
            let warnings = a
                .warnings
                .iter()
                .map(|w| {
                    let op = statements.op_at(w.pos, tile);
                    Diagnostic::warning(ctx.loc(op).clone(), w.message.clone())
                })
                .collect();
            Ok((
                TileProgram {
                    tile: index,
                    image: a.image,
                },
                warnings,
            ))
        }
        Err(errors) => Err(errors
            .0
            .iter()
            .map(|e| {
                let op = statements.op_at(e.pos, tile);
                Diagnostic::error(ctx.loc(op).clone(), e.message.clone()).with_note(
                    ctx.loc(tile).clone(),
                    format!("in the program of tile {index}"),
                )
            })
            .collect()),
    }
}

/// The environment variable that sets [`compile_threads`].
pub const COMPILE_THREADS_ENV: &str = "IPUC_COMPILE_THREADS";

/// The host threads [`build_executable`] assembles tiles on:
/// [`COMPILE_THREADS_ENV`] if it holds a positive number (anything else
/// is ignored with a warning, as the simulator's `IPUC_SIM_THREADS` is),
/// else every core.
pub fn compile_threads() -> usize {
    let asked = std::env::var(COMPILE_THREADS_ENV).ok().and_then(|v| {
        let n = v.trim().parse::<std::num::NonZeroUsize>().ok();
        if n.is_none() {
            tracing::warn!("{COMPILE_THREADS_ENV}={v:?} is not a positive thread count: ignored");
        }
        n
    });
    asked
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, usize::from)
}

/// Assembles every tile of `exe` (an `ipu.executable`) and builds the
/// executable, the tiles spread over [`compile_threads`] host threads.
pub fn build_executable(ctx: &Context, exe: OpId) -> Result<Executable, Vec<Diagnostic>> {
    let _time = tracing::info_span!(target: "ipu-lower", "encode the executable").entered();
    build_executable_on(ctx, exe, compile_threads())
}

/// [`build_executable`] on `threads` host threads: contiguous runs of
/// tiles, results (programs, warnings, errors) in tile order, so the
/// executable and its diagnostics do not depend on the thread count.
pub fn build_executable_on(
    ctx: &Context,
    exe: OpId,
    threads: usize,
) -> Result<Executable, Vec<Diagnostic>> {
    let machine_name = ctx
        .attr(exe, "machine")
        .and_then(Attribute::as_str)
        .unwrap_or("");
    let machine = MachineModel::by_name(machine_name).ok_or_else(|| {
        vec![Diagnostic::error(
            ctx.loc(exe).clone(),
            format!("unknown machine '{machine_name}'"),
        )]
    })?;
    let ops = tile_ops(ctx, exe);
    let chunk = ops.len().div_ceil(threads.max(1)).max(1);
    let results: Vec<TileResult> = std::thread::scope(|scope| {
        let machine = &machine;
        let handles: Vec<_> = ops
            .chunks(chunk)
            .map(|run| {
                scope.spawn(move || {
                    run.iter()
                        .map(|&(index, tile)| assemble_tile(ctx, machine, index, tile))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("assembling a tile panicked"))
            .collect()
    });
    let mut diags = Vec::new();
    let mut tiles = Vec::new();
    let (mut stalls, mut stalled_tiles) = (0usize, 0usize);
    for r in results {
        match r {
            Ok((program, warnings)) => {
                // The lowering's exchange code waits on some stalls by
                // design (a register loaded `latency` cycles before its
                // use stands for a delay), so they are not warnings here:
                // `IPUC_LOG=debug` lists them.
                for w in &warnings {
                    tracing::debug!("{w}");
                }
                stalls += warnings.len();
                stalled_tiles += usize::from(!warnings.is_empty());
                tiles.push(program);
            }
            Err(d) => diags.extend(d),
        }
    }
    if stalls > 0 {
        tracing::debug!(
            "{stalls} supervisor stall(s) on {stalled_tiles} tile(s), in the cycles the simulator counts"
        );
    }
    let mut bindings = Vec::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut overflowed = BTreeMap::new();
    for tensor in ipu::body_ops(ctx, exe) {
        if ctx.name_str(tensor) != ipu::TENSOR {
            continue;
        }
        let name = ctx
            .attr(tensor, "sym_name")
            .and_then(Attribute::as_str)
            .unwrap_or("")
            .to_string();
        let (dtype, shape) = match dtype_of(ctx, tensor) {
            Ok(x) => x,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        let direction = ctx
            .attr(tensor, "direction")
            .and_then(Attribute::as_str)
            .and_then(TensorDirection::parse);
        if direction == Some(TensorDirection::Constant) {
            if let Err(d) = load_constant(ctx, tensor, &name, &mut tiles, &mut overflowed) {
                diags.extend(d);
            }
            continue;
        }
        for p in ipu::tensor_pieces(ctx, tensor) {
            bindings.push(TensorBinding {
                name: name.clone(),
                tile: p.tile as u32,
                address: p.address as u32,
                size: (p.count as u64 * u64::from(dtype.size())) as u32,
                dtype,
                shape: shape.clone(),
                element_offset: p.first as u64,
            });
        }
        let stream = |direction| HostStream {
            name: name.clone(),
            tensor: name.clone(),
            direction,
        };
        match direction {
            Some(TensorDirection::Input) => inputs.push(stream(StreamDirection::HostToDevice)),
            Some(TensorDirection::Output) => outputs.push(stream(StreamDirection::DeviceToHost)),
            _ => {}
        }
    }
    if overflowed.len() > SHOWN_OVERFLOWS {
        let (tile, bytes) = overflowed
            .iter()
            .max_by_key(|&(&t, &b)| (b, std::cmp::Reverse(t)))
            .expect("more than shown");
        diags.push(Diagnostic::error(
            ctx.loc(exe).clone(),
            format!(
                "{} more tiles' code and data reach into their tensors, {} in all, the most {bytes} bytes on tile {tile} (errors for the first {SHOWN_OVERFLOWS} above)",
                overflowed.len() - SHOWN_OVERFLOWS,
                overflowed.len()
            ),
        ));
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    inputs.extend(outputs);
    Executable::new(&machine.name, tiles, bindings, inputs)
        .map_err(|e| vec![Diagnostic::error(ctx.loc(exe).clone(), e.to_string())])
}
