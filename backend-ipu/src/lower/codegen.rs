//! Code generation for a planned product: the `ipu.executable` that runs
//! `Y = X · W` on the plan's tiles.
//!
//! Every tile of the grid gets the same memory layout: the weight panels
//! of its column block at the start of interleaved memory (a `constant`
//! `ipu.tensor` per grid column, its value a resource blob, one piece per
//! grid row: the executable loads it with the program), Y and X each in
//! whole 32 KiB element pairs at the top of memory (X and Y never share a
//! pair, so the AMP's loads and stores never share a bank), code and the
//! vertex states in region 0 (placed by the assembler). After assembly
//! every tile is checked: the sections must end below the lowest tensor.
//!
//! Supersteps: with more than one grid column, the X block of each grid
//! row enters on the row's first tile (host input `input0`) and is
//! broadcast to the row ([`super::exchange`]); a sync closes the exchange;
//! then every tile runs the GEMM vertex. Y leaves as host output
//! `output0`, read where the vertex wrote it.

use ipuc_dialects::ipu::{self, build, SectionKind, TensorDirection, TensorPiece};
use ipuc_ipu_arch::MachineModel;
use ipuc_ir::attributes::{AttrKind, ResourceBlob};
use ipuc_ir::{Attribute, BlockId, Context, Diagnostic, FloatKind, Location, OpId, Type};

use super::exchange::Broadcast;
use super::plan::{bias_offset, output_span, GemmPlan};
use crate::codelets::amp::{AmpBlock, AmpVariant, Elem};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::gelu::Gelu;
use crate::codelets::gemm::TileGemm;
use crate::codelets::subroutine::{emit_call, emit_subroutine};
use crate::emit::CONSTANT_SECTION_PREFIX;

/// Where a tile's tensors live (the same on every tile of the plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileLayout {
    /// The weight panels.
    pub weights: u32,
    /// The GEMM's vertex states, at the top of region 0.
    pub states: u32,
    /// X in panel order.
    pub input: u32,
    /// Y's buffer.
    pub output: u32,
    /// The bias block (initial partials), 8 mod 16 bytes after Y's buffer.
    pub bias: Option<u32>,
    /// Lowest tensor address: sections must end at or below it.
    pub tensors_start: u32,
}

/// Lays out the plan's tensors from the top of tile memory.
pub fn layout(plan: &GemmPlan, machine: &MachineModel) -> TileLayout {
    let v = plan.vertex();
    let pair = 2 * machine.element_bytes;
    // The plan fits the tile, so every size is below 4 GiB.
    let whole = |b: u64| (b as u32 + AmpBlock::READ_PAST_BYTES).div_ceil(pair) * pair;
    let output = machine.sram_end - output_span(&v, machine) as u32;
    let input = output - whole(v.input_bytes());
    let bias = v.bias.map(|_| output + bias_offset(&v) as u32);
    let states = (machine.interleaved_base - v.state_bytes() as u32) & !7;
    TileLayout {
        weights: machine.interleaved_base,
        states,
        input,
        output,
        bias,
        tensors_start: states,
    }
}

/// The constant operands of a product: the weights' element values,
/// row-major `[K, N]`, and the bias's `[N]` if the plan's epilogue has one.
#[derive(Clone, Copy, Debug)]
pub struct Constants<'a> {
    /// W, row-major `[K, N]`.
    pub weights: &'a [f64],
    /// b `[N]`.
    pub bias: Option<&'a [f64]>,
}

/// Builds the `ipu.executable` for `plan` with its constants, appended to
/// `block`; the host tensors get types `x_ty` and `y_ty`.
pub fn emit_gemm(
    ctx: &mut Context,
    block: BlockId,
    plan: &GemmPlan,
    constants: Constants<'_>,
    (x_ty, y_ty): (Type, Type),
    machine: &MachineModel,
    loc: Location,
) -> Result<OpId, Diagnostic> {
    let w = constants.weights;
    let shape = plan.shape;
    let v = shape.variant;
    let (c, ko) = (v.in_channels() as u32, v.out_channels() as u32);
    let lay = layout(plan, machine);
    let (exe, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(block, exe);
    let tag = "gemm0";
    let elem = v.input_elem();
    let mut input_pieces = Vec::new();
    let mut output_pieces = Vec::new();
    for i in 0..plan.grid_rows {
        let rows = plan.rows_of(i);
        let home = plan.tile(i, 0);
        let receivers: Vec<u32> = (1..plan.grid_cols).map(|j| plan.tile(i, j)).collect();
        let vertex = TileGemm {
            input: lay.input,
            output: lay.output,
            weights: lay.weights,
            bias: lay.bias,
            ..plan.vertex()
        };
        let broadcast = Broadcast {
            sender: home,
            receivers: receivers.clone(),
            address: lay.input,
            bytes: vertex.input_bytes() as u32,
        };
        for g in 0..shape.k_groups() {
            for r in 0..rows {
                let first = u64::from(i * plan.rows + r) * u64::from(shape.k) + u64::from(g * c);
                input_pieces.push(TensorPiece {
                    tile: i64::from(home),
                    address: i64::from(lay.input + (g * plan.rows + r) * 32),
                    first: first as i64,
                    count: i64::from(c.min(shape.k - g * c)),
                });
            }
        }
        for j in 0..plan.grid_cols {
            let tile = plan.tile(i, j);
            let groups = plan.groups_of(j);
            for gl in 0..groups {
                let col = (j * plan.groups + gl) * ko;
                for r in 0..rows {
                    let first = u64::from(i * plan.rows + r) * u64::from(shape.n) + u64::from(col);
                    output_pieces.push(TensorPiece {
                        tile: i64::from(tile),
                        address: i64::from(vertex.output_group(gl) + r * 32),
                        first: first as i64,
                        count: i64::from(ko.min(shape.n - col)),
                    });
                }
            }
            let (tile_op, tile_body) = build::tile(ctx, tile, None, loc.clone());
            ctx.append_op(exe_body, tile_op);
            let mut e = Emitter::new(ctx, tile_body, loc.clone());
            e.code_section(".text.main", SectionKind::Supervisor);
            e.function("main");
            if plan.grid_cols > 1 {
                if j == 0 {
                    broadcast.emit_send(&mut e, machine);
                } else {
                    broadcast.emit_receive(&mut e);
                }
                e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
            }
            vertex
                .emit_supervisor_with(
                    &mut e,
                    tag,
                    op::imm(i64::from(lay.weights)),
                    op::imm(i64::from(lay.states)),
                )
                .map_err(|err| Diagnostic::error(loc.clone(), err.to_string()))?;
            let gelus: Vec<(String, Gelu)> = match shape.epilogue.gelu {
                Some(form) => (0..groups)
                    .map(|gl| {
                        let at = vertex.output_group(gl);
                        let len = plan.rows * ko;
                        let g = Gelu {
                            form,
                            len,
                            input: at,
                            output: at,
                        };
                        (format!("gelu{gl}"), g)
                    })
                    .collect(),
                None => Vec::new(),
            };
            for (name, _) in &gelus {
                emit_call(&mut e, name);
            }
            e.solo(inst("exitz", [op::mzero()]));
            e.size_of("main");
            vertex.emit_worker_code(&mut e, tag);
            for (name, g) in &gelus {
                emit_subroutine(&mut e, name, g)
                    .map_err(|err| Diagnostic::error(loc.clone(), err.to_string()))?;
            }
        }
    }
    // The vertex states: the same words on every tile (same layout, same
    // rows), one resource shared by all.
    {
        let vertex = TileGemm {
            input: lay.input,
            output: lay.output,
            weights: lay.weights,
            bias: lay.bias,
            ..plan.vertex()
        };
        let words = vertex.state_words();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let tiles: Vec<u32> = (0..plan.grid_rows)
            .flat_map(|i| (0..plan.grid_cols).map(move |j| plan.tile(i, j)))
            .collect();
        let t = replicated_constant(
            ctx,
            &format!("{tag}_vertex_states"),
            (Type::i32(), 4, 8),
            bytes,
            (&tiles, lay.states),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }
    if let (Some(at), Some(b)) = (lay.bias, constants.bias) {
        // Column block j's bias rows, the same on every grid row.
        let v = plan.vertex();
        for j in 0..plan.grid_cols {
            let first = (j * plan.groups * ko) as usize;
            let values = v.bias_block(b.get(first..).unwrap_or(&[]));
            let tiles: Vec<u32> = (0..plan.grid_rows).map(|i| plan.tile(i, j)).collect();
            let out = v.variant.output_elem();
            let t = replicated_constant(
                ctx,
                &format!("{tag}_bias_col{j}"),
                (output_type(v.variant), out.size(), 8),
                out.encode(&values),
                (&tiles, at),
                loc.clone(),
            );
            ctx.append_op(exe_body, t);
        }
    }
    for j in 0..plan.grid_cols {
        // Column block j's weight panels, zero-padded, on every grid row.
        let vertex = plan.vertex();
        let groups = plan.groups_of(j);
        let first_col = (j * plan.groups * ko) as usize;
        let cols = ((groups * ko) as usize).min(shape.n as usize - first_col);
        let block_w: Vec<f64> = (0..shape.k as usize)
            .flat_map(|kk| {
                let row = kk * shape.n as usize + first_col;
                w[row..row + cols].iter().copied()
            })
            .collect();
        let bytes = elem.encode(&vertex.weight_panels(&block_w, shape.k as usize, cols, 0.0));
        let tiles: Vec<u32> = (0..plan.grid_rows).map(|i| plan.tile(i, j)).collect();
        let t = replicated_constant(
            ctx,
            &format!("{tag}_weights_col{j}"),
            (element_type(v), elem.size(), 16),
            bytes,
            (&tiles, lay.weights),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }
    let x = build::tensor(
        ctx,
        "input0",
        x_ty,
        TensorDirection::Input,
        &input_pieces,
        loc.clone(),
    );
    let y = build::tensor(
        ctx,
        "output0",
        y_ty,
        TensorDirection::Output,
        &output_pieces,
        loc,
    );
    ctx.append_op(exe_body, x);
    ctx.append_op(exe_body, y);
    Ok(exe)
}

/// A `constant` `ipu.tensor` named `name` of `bytes` (elements of type
/// `element`, `size` bytes each) in a resource blob aligned to `alignment`,
/// one piece of all of it at `address` on each of `tiles`.
fn replicated_constant(
    ctx: &mut Context,
    name: &str,
    (element, size, alignment): (Type, usize, u32),
    bytes: Vec<u8>,
    (tiles, address): (&[u32], u32),
    loc: Location,
) -> OpId {
    let count = (bytes.len() / size) as i64;
    let ty = Type::tensor(&[count], element);
    let resource = ctx.resources().insert_unique(
        name,
        ResourceBlob {
            alignment,
            data: bytes.into(),
        },
    );
    let value = Attribute::new(AttrKind::DenseResource {
        resource,
        ty: ty.clone(),
    });
    let pieces: Vec<TensorPiece> = tiles
        .iter()
        .map(|&tile| TensorPiece {
            tile: i64::from(tile),
            address: i64::from(address),
            first: 0,
            count,
        })
        .collect();
    let t = build::tensor(ctx, name, ty, TensorDirection::Constant, &pieces, loc);
    ctx.set_attr(t, "value", value);
    t
}

/// The IR element type of the AMP's input format.
fn element_type(v: AmpVariant) -> Type {
    elem_type(v.input_elem())
}

/// The IR element type of the AMP's output (and partials) format.
fn output_type(v: AmpVariant) -> Type {
    elem_type(v.output_elem())
}

fn elem_type(e: Elem) -> Type {
    Type::float(match e {
        Elem::F16 => FloatKind::F16,
        Elem::F32 => FloatKind::F32,
        Elem::F8 => FloatKind::F8E4M3FNUZ,
    })
}

/// Checks that every tile's code and data sections end below the tensors
/// of `lay` (constant sections are the weights, placed there on purpose).
pub fn check_fits(exe: &ipuc_ipu_arch::Executable, lay: &TileLayout) -> Result<(), String> {
    for t in &exe.tiles {
        if let Some(s) = t
            .image
            .sections
            .iter()
            .filter(|s| !s.name.starts_with(CONSTANT_SECTION_PREFIX))
            .find(|s| s.end() > lay.tensors_start)
        {
            return Err(format!(
                "tile {}: section `{}` ends at 0x{:x}, past the first tensor at 0x{:x}",
                t.tile,
                s.name,
                s.end(),
                lay.tensors_start
            ));
        }
    }
    Ok(())
}

/// The `ipu.executable` ops of a module body, for callers that look them up.
pub fn executables(ctx: &Context, block: BlockId) -> Vec<OpId> {
    ctx.block_ops_vec(block)
        .into_iter()
        .filter(|&o| ctx.name_str(o) == ipu::EXECUTABLE)
        .collect()
}
