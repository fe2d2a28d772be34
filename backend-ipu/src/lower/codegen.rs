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

use super::exchange::{emit_arm, emit_disarm, emit_sends, first_send_cycle, Broadcast, ARM_ISSUES};
use super::plan::{
    bias_offset, output_span, reduction_add, reduction_buffer, whole_pairs, GemmPlan,
};
use super::reduce;
use crate::codelets::amp::{AmpVariant, Elem};
use crate::codelets::emitter::{inst, op, Emitter};
use crate::codelets::gelu::Gelu;
use crate::codelets::gemm::TileGemm;
use crate::codelets::program::Codelet;
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
    /// With a K split: the reduction's receive buffer and its two result
    /// buffers, each in its own element pairs.
    pub reduction: Option<[u32; 3]>,
    /// Lowest tensor address: sections must end at or below it.
    pub tensors_start: u32,
}

/// Lays out the plan's tensors from the top of tile memory.
pub fn layout(plan: &GemmPlan, machine: &MachineModel) -> TileLayout {
    let v = plan.vertex();
    // The plan fits the tile, so every size is below 4 GiB.
    let output = machine.sram_end - output_span(&v, machine) as u32;
    let input = output - whole_pairs(v.input_bytes(), machine) as u32;
    let bias = v.bias.map(|_| output + bias_offset(&v) as u32);
    let buffer = reduction_buffer(&v, plan.grid_k, machine) as u32;
    let reduction = (buffer > 0).then(|| std::array::from_fn(|b| input - (b as u32 + 1) * buffer));
    let states = (machine.interleaved_base - v.state_bytes() as u32) & !7;
    TileLayout {
        weights: machine.interleaved_base,
        states,
        input,
        output,
        bias,
        reduction,
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

/// Where a tile's share of Y is: output group `g`'s row `r` (of the rows
/// the tile owns, from `lo`) at `base + g * group_stride + (r - lo) * 32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct View {
    base: u32,
    group_stride: u32,
    lo: u32,
}

impl View {
    fn at(&self, g: u32, r: u32) -> u32 {
        self.base + g * self.group_stride + (r - self.lo) * 32
    }
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
    let shape = plan.shape;
    let v = shape.variant;
    let (c, ko) = (v.in_channels() as u32, v.out_channels() as u32);
    let lay = layout(plan, machine);
    let (exe, exe_body) = build::executable(ctx, &machine.name, loc.clone());
    ctx.append_op(block, exe);
    let tag = "gemm0";
    let vertex = TileGemm {
        input: lay.input,
        output: lay.output,
        weights: lay.weights,
        bias: lay.bias,
        ..plan.vertex()
    };
    let fail = |err: crate::codelets::CodeletError| Diagnostic::error(loc.clone(), err.to_string());
    let mut input_pieces = Vec::new();
    let mut output_pieces = Vec::new();
    for i in 0..plan.grid_rows {
        let rows = plan.rows_of(i);
        for k in 0..plan.grid_k {
            // X[rows of i, panels of k] enters on tile (i, 0, k).
            let home = plan.tile(i, 0, k);
            for g in 0..plan.k_panels_of(k) {
                let panel = k * plan.k_panels + g;
                for r in 0..rows {
                    let first =
                        u64::from(i * plan.rows + r) * u64::from(shape.k) + u64::from(panel * c);
                    input_pieces.push(TensorPiece {
                        tile: i64::from(home),
                        address: i64::from(lay.input + (g * plan.rows + r) * 32),
                        first: first as i64,
                        count: i64::from(c.min(shape.k - panel * c)),
                    });
                }
            }
        }
        for j in 0..plan.grid_cols {
            let groups = plan.groups_of(j);
            for k in 0..plan.grid_k {
                let tile = plan.tile(i, j, k);
                let (tile_op, tile_body) = build::tile(ctx, tile, None, loc.clone());
                ctx.append_op(exe_body, tile_op);
                let mut e = Emitter::new(ctx, tile_body, loc.clone());
                e.code_section(".text.main", SectionKind::Supervisor);
                e.function("main");
                if plan.grid_cols > 1 {
                    let broadcast = Broadcast {
                        sender: plan.tile(i, 0, k),
                        receivers: (1..plan.grid_cols).map(|jj| plan.tile(i, jj, k)).collect(),
                        address: lay.input,
                        bytes: vertex.input_bytes() as u32,
                    };
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
                    .map_err(fail)?;
                // The K split's reduction rounds, then the epilogue, on the
                // rows this tile owns.
                let mut view = View {
                    base: vertex.output_group(0),
                    group_stride: vertex.group_stride(),
                    lo: 0,
                };
                let mut calls: Vec<(String, Box<dyn Instance>)> = Vec::new();
                let rounds = reduce::rounds(k, plan.grid_k, plan.rows);
                for (t, round) in rounds.iter().enumerate() {
                    let [recv, res0, res1] = lay.reduction.expect("a K split has buffers");
                    let result = if t % 2 == 0 { res0 } else { res1 };
                    let (keep, give) = (reduce::len(round.keep), reduce::len(round.give));
                    let partner = plan.tile(i, j, round.partner);
                    // Compute, sync, exchange, sync: every tile reaches the
                    // exchange together.
                    e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
                    let mut issued = 0;
                    if keep > 0 {
                        emit_arm(&mut e, partner, recv, groups * keep * 8);
                        issued += ARM_ISSUES;
                    } else {
                        emit_disarm(&mut e, machine);
                        issued += 2;
                    }
                    let chunks: Vec<(u32, u32)> = (0..groups)
                        .filter(|_| give > 0)
                        .map(|g| (view.at(g, round.give.0), give * 8))
                        .collect();
                    let first = first_send_cycle(machine, tile, &[partner]);
                    emit_sends(&mut e, first, issued, &chunks);
                    e.solo(inst("sync", [op::sym("TEXCH_SYNCZONE_INTERNAL")]));
                    for g in (0..groups).filter(|_| keep > 0) {
                        let add = reduction_add(
                            v,
                            keep,
                            view.at(g, round.keep.0),
                            recv + g * keep * 32,
                            result + g * keep * 32,
                        );
                        let name = format!("red{t}_{g}");
                        emit_call(&mut e, &name);
                        calls.push((name, Box::new(add)));
                    }
                    view = View {
                        base: result,
                        group_stride: keep * 32,
                        lo: round.keep.0,
                    };
                }
                let (lo, hi) = reduce::owned(k, plan.grid_k, plan.rows);
                if let (Some(form), true) = (shape.epilogue.gelu, hi > lo) {
                    for g in 0..groups {
                        let at = view.at(g, lo);
                        let gelu = Gelu {
                            form,
                            len: (hi - lo) * ko,
                            input: at,
                            output: at,
                        };
                        let name = format!("gelu{g}");
                        emit_call(&mut e, &name);
                        calls.push((name, Box::new(gelu)));
                    }
                }
                e.solo(inst("exitz", [op::mzero()]));
                e.size_of("main");
                vertex.emit_worker_code(&mut e, tag);
                for (name, instance) in &calls {
                    instance.emit_as(&mut e, name).map_err(fail)?;
                }
                // Y's rows this tile owns.
                for g in 0..groups {
                    let col = (j * plan.groups + g) * ko;
                    for r in lo..hi.min(rows) {
                        let first =
                            u64::from(i * plan.rows + r) * u64::from(shape.n) + u64::from(col);
                        output_pieces.push(TensorPiece {
                            tile: i64::from(tile),
                            address: i64::from(view.at(g, r)),
                            first: first as i64,
                            count: i64::from(ko.min(shape.n - col)),
                        });
                    }
                }
            }
        }
    }
    let every_tile: Vec<u32> = (0..plan.tiles()).collect();
    // The vertex states: the same words on every tile (same layout, same
    // rows), one resource shared by all.
    {
        let words = vertex.state_words();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let t = replicated_constant(
            ctx,
            &format!("{tag}_vertex_states"),
            (Type::i32(), 4, 8),
            bytes,
            (&every_tile, lay.states),
            loc.clone(),
        );
        ctx.append_op(exe_body, t);
    }
    let tiles_of =
        |j: u32, k: u32| -> Vec<u32> { (0..plan.grid_rows).map(|i| plan.tile(i, j, k)).collect() };
    let suffix = |j: u32, k: u32| {
        if plan.grid_k > 1 {
            format!("col{j}_k{k}")
        } else {
            format!("col{j}")
        }
    };
    if let (Some(at), Some(b)) = (lay.bias, constants.bias) {
        // Column block j's bias rows on the K part 0 tiles, zeros on the
        // others (the bias is added once), the same on every grid row.
        let out = v.output_elem();
        for j in 0..plan.grid_cols {
            for k in 0..plan.grid_k {
                let first = (j * plan.groups * ko) as usize;
                let values = if k == 0 {
                    vertex.bias_block(b.get(first..).unwrap_or(&[]))
                } else {
                    vertex.bias_block(&[])
                };
                let t = replicated_constant(
                    ctx,
                    &format!("{tag}_bias_{}", suffix(j, k)),
                    (output_type(v), out.size(), 8),
                    out.encode(&values),
                    (&tiles_of(j, k), at),
                    loc.clone(),
                );
                ctx.append_op(exe_body, t);
            }
        }
    }
    let elem = v.input_elem();
    for j in 0..plan.grid_cols {
        for k in 0..plan.grid_k {
            // The weight panels of column block j and K part k, zero-padded,
            // on every grid row.
            let first_col = (j * plan.groups * ko) as usize;
            let cols = ((plan.groups_of(j) * ko) as usize).min(shape.n as usize - first_col);
            let first_row = (k * plan.k_panels * c) as usize;
            let k_rows = ((plan.k_panels_of(k) * c) as usize).min(shape.k as usize - first_row);
            let block_w: Vec<f64> = (first_row..first_row + k_rows)
                .flat_map(|kk| {
                    let row = kk * shape.n as usize + first_col;
                    constants.weights[row..row + cols].iter().copied()
                })
                .collect();
            let bytes = elem.encode(&vertex.weight_panels(&block_w, k_rows, cols, 0.0));
            let t = replicated_constant(
                ctx,
                &format!("{tag}_weights_{}", suffix(j, k)),
                (element_type(v), elem.size(), 16),
                bytes,
                (&tiles_of(j, k), lay.weights),
                loc.clone(),
            );
            ctx.append_op(exe_body, t);
        }
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

/// A codelet instance a tile's program calls: emitted as a subroutine.
trait Instance {
    fn emit_as(&self, e: &mut Emitter, name: &str) -> Result<(), crate::codelets::CodeletError>;
}

impl<C: Codelet> Instance for C {
    fn emit_as(&self, e: &mut Emitter, name: &str) -> Result<(), crate::codelets::CodeletError> {
        emit_subroutine(e, name, self).map(|_| ())
    }
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
