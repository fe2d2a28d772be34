//! `ipu-bench codelets`: one launch of every codelet family at a
//! representative size on one simulated tile, its simulated cycles beside
//! the codelet's own estimate. Run on two builds, it shows how a change to
//! the simulator's timing rules moves each family (the table in
//! `ipu-arch/TIMING.md`).
//!
//! Operands live in the interleaved region, 64 KiB apart,
//! so that no instruction's accesses share a bank; their contents are the
//! simulator's zero-initialised memory (timing does not depend on values).

use ipuc_backend_ipu::codelets::amp::{AmpBlock, AmpMode, AmpVariant};
use ipuc_backend_ipu::codelets::cast::{Cast, CastKind};
use ipuc_backend_ipu::codelets::copy::StridedCopy;
use ipuc_backend_ipu::codelets::elementwise::{Binary, BinaryOp, VecType};
use ipuc_backend_ipu::codelets::gelu::{Gelu, GeluForm};
use ipuc_backend_ipu::codelets::gelu_f8::GeluF8;
use ipuc_backend_ipu::codelets::layernorm::{LayerNorm, Variance};
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_backend_ipu::codelets::reduce::{ReduceOp, RowReduce};
use ipuc_backend_ipu::codelets::softmax::Softmax;
use ipuc_backend_ipu::codelets::transpose::{Transpose, TransposeElem};
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::{SimConfig, Simulator};
use serde::Serialize;

use super::BenchError;

/// One codelet launch, measured.
#[derive(Clone, Debug, Serialize)]
pub struct CodeletCycles {
    /// Family and size, e.g. `binary f16 add, 4096`.
    pub codelet: String,
    /// Simulated tile cycles (supervisor start to exit).
    pub simulated: u64,
    /// The codelet's estimate.
    pub estimate: u64,
}

/// Operand `k` of a launch: the start of the k-th 64 KiB block (two
/// element pairs) of the interleaved region.
fn operand(machine: &MachineModel, k: u32) -> u32 {
    machine.interleaved_base + k * 4 * machine.element_bytes
}

/// Simulated cycles and estimate of `codelet` alone on tile 0.
fn measure<C: Codelet>(
    machine: &MachineModel,
    name: String,
    codelet: &C,
) -> Result<CodeletCycles, BenchError> {
    let (program, counts) = codelet.program(0, machine)?;
    let exe = program.executable()?;
    let mut sim = Simulator::new(machine.clone(), SimConfig::default());
    sim.load(&exe)?;
    sim.run()?;
    let simulated = sim
        .profile()
        .ok_or_else(|| BenchError::Other("the simulator kept no profile".into()))?
        .total_cycles;
    Ok(CodeletCycles {
        codelet: name,
        simulated,
        estimate: codelet.cycles(&counts),
    })
}

/// Every family at its representative size.
pub fn run_codelets(machine: &MachineModel) -> Result<Vec<CodeletCycles>, BenchError> {
    let o = |k| operand(machine, k);
    let mut out = Vec::new();
    let amp = AmpBlock::place(AmpVariant::F16, AmpMode::Accumulate, 512, machine)?;
    out.push(measure(machine, "amp f16 accumulate, N=512".into(), &amp)?);
    for (op, ty, label) in [
        (BinaryOp::Add, VecType::F16, "binary f16 add"),
        (
            BinaryOp::ScaledAdd(-3),
            VecType::F16,
            "binary f16 scaled add",
        ),
        (BinaryOp::Axpy(0.5), VecType::F32, "binary f32 axpy"),
    ] {
        let c = Binary {
            op,
            ty,
            len: 4096,
            x: o(0),
            y: o(1),
            out: o(2),
        };
        out.push(measure(machine, format!("{label}, 4096"), &c)?);
    }
    let cast = Cast {
        kind: CastKind::F16ToF8 { scale: 0 },
        len: 4096,
        input: o(0),
        output: o(1),
    };
    out.push(measure(machine, "cast f16->f8, 4096".into(), &cast)?);
    let copy = StridedCopy {
        rows: 64,
        row_bytes: 128,
        src: o(0),
        src_stride: 256,
        dst: o(1),
        dst_stride: 128,
    };
    out.push(measure(machine, "strided copy, 64 x 128 B".into(), &copy)?);
    let gelu = Gelu {
        form: GeluForm::Tanh,
        len: 4096,
        input: o(0),
        output: o(1),
    };
    out.push(measure(machine, "gelu tanh f16, 4096".into(), &gelu)?);
    // The same 4096 values as 8 unscaled AMP output groups of 32 rows.
    let gelu_f8 = GeluF8 {
        form: GeluForm::Tanh,
        rows: 32,
        pairs: 4,
        input: o(0),
        group_stride: 32 * 32,
        input_exp: -2,
        output: o(1),
        pair_stride: 32 * 32,
        output_scale: -1,
    };
    out.push(measure(
        machine,
        "gelu tanh to fp8 panels, 32 rows x 8 groups".into(),
        &gelu_f8,
    )?);
    let reduce = RowReduce {
        op: ReduceOp::Sum,
        rows: 64,
        cols: 64,
        input: o(0),
        output: o(1),
    };
    out.push(measure(machine, "row sum f32, 64 x 64".into(), &reduce)?);
    let ln = LayerNorm {
        rows: 12,
        cols: 1152,
        eps: 1e-6,
        affine: true,
        input: o(0),
        gamma: o(1),
        beta: o(2),
        output: o(3),
        output_f8_scale: None,
        variance: Variance::Deviations,
        output_panels: None,
        x_groups: None,
    };
    out.push(measure(machine, "layernorm, 12 x 1152".into(), &ln)?);
    // As an LN tile writes it: six rows, as 16-channel panels.
    let ln_panels = LayerNorm {
        rows: 6,
        output_panels: Some(6 * 32),
        ..ln.clone()
    };
    out.push(measure(
        machine,
        "layernorm to panels, 6 x 1152".into(),
        &ln_panels,
    )?);
    let ln_f8 = LayerNorm {
        output_f8_scale: Some(-2),
        variance: Variance::Moments,
        ..ln
    };
    out.push(measure(
        machine,
        "layernorm to fp8, 12 x 1152".into(),
        &ln_f8,
    )?);
    // Its scale and shift folded into the next product.
    let ln_plain = LayerNorm {
        affine: false,
        ..ln_f8
    };
    out.push(measure(
        machine,
        "layernorm to fp8 without scale and shift, 12 x 1152".into(),
        &ln_plain,
    )?);
    let sm = Softmax {
        rows: 12,
        cols: 728,
        input: o(0),
        output: o(1),
    };
    out.push(measure(machine, "softmax, 12 x 728".into(), &sm)?);
    let tr = Transpose {
        elem: TransposeElem::F16,
        rows: 64,
        cols: 64,
        src: o(0),
        dst: o(1),
    };
    out.push(measure(machine, "transpose f16, 64 x 64".into(), &tr)?);
    Ok(out)
}

/// The report as a table.
pub fn format_codelets(machine: &MachineModel, rows: &[CodeletCycles]) -> String {
    let mut s = format!(
        "machine {}: one launch on one tile\n| codelet | simulated | estimate |\n|---|---|---|\n",
        machine.name
    );
    for r in rows {
        s += &format!("| {} | {} | {} |\n", r.codelet, r.simulated, r.estimate);
    }
    s
}
