//! Shared by the codelet and lowering tests.
#![allow(dead_code)]

use ipuc_backend_ipu::codelets::program::{Codelet, CodeletProgram};
use ipuc_ipu_arch::Executable;

/// The codelet's executable, encoded from its ops; checked to be exactly
/// what the text assembler makes of its printed assembly (the text is a
/// view of the IR, and the two encoders must agree).
pub fn executable_of(prog: &CodeletProgram) -> Executable {
    let exe = prog.executable().unwrap_or_else(|e| panic!("{e}"));
    let text = prog.assembly();
    let via_text = ipuc_ipu_arch::assemble(&text, &Default::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(exe.tiles.len(), 1);
    assert_eq!(exe.tiles[0].image, via_text, "{text}");
    exe
}

/// Verifies and encodes the lowered `executable`, runs it on the simulator
/// of `machine` with `x` as the f16 tensor `input0`, and returns `output0`
/// widened to f64 with the simulator; `what` names the case.
pub fn run_lowered(
    ctx: &ipuc_ir::Context,
    executable: ipuc_ir::OpId,
    machine: ipuc_ipu_arch::MachineModel,
    x: &[f64],
    what: impl std::fmt::Debug,
) -> (Vec<f64>, ipuc_runtime::sim::Simulator) {
    run_lowered_after(ctx, executable, machine, x, what, |_| {})
}

/// [`run_lowered`] with `before` applied to the loaded simulator first
/// (a test writes what an earlier block could have left in memory).
pub fn run_lowered_after(
    ctx: &ipuc_ir::Context,
    executable: ipuc_ir::OpId,
    machine: ipuc_ipu_arch::MachineModel,
    x: &[f64],
    what: impl std::fmt::Debug,
    before: impl FnOnce(&mut ipuc_runtime::sim::Simulator),
) -> (Vec<f64>, ipuc_runtime::sim::Simulator) {
    use ipuc_runtime::device::Device;
    ipuc_ir::verify(ctx, executable).unwrap_or_else(|d| panic!("{}", d.message));
    let exe = ipuc_backend_ipu::emit::build_executable(ctx, executable)
        .unwrap_or_else(|d| panic!("{}", d[0].message));
    let mut sim = ipuc_runtime::sim::Simulator::new(machine, Default::default());
    sim.load(&exe).unwrap();
    before(&mut sim);
    let input: Vec<half::f16> = x.iter().map(|&v| half::f16::from_f64(v)).collect();
    sim.write_tensor("input0", &f16_bytes(&input)).unwrap();
    sim.run().unwrap_or_else(|e| panic!("{what:?}: {e}"));
    let y = f16_values(&sim.read_tensor("output0").unwrap());
    (y, sim)
}

/// The cosine of `got` with `want`, and the L2 norm of their difference
/// relative to `want`'s.
pub fn cosine_and_rel_l2(got: &[f64], want: &[f64]) -> (f64, f64) {
    assert_eq!(got.len(), want.len());
    let dot: f64 = got.iter().zip(want).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let diff: Vec<f64> = got.iter().zip(want).map(|(a, b)| a - b).collect();
    (dot / (norm(got) * norm(want)), norm(&diff) / norm(want))
}

/// Reports a lowered block's `(cosine, relative L2 error)` against float64
/// and its `(simulated, estimated)` cycles, and asserts the cosine is above
/// `min_cos` and the error below `max_rel`; `what` names the case.
pub fn assert_block_accuracy(
    what: impl std::fmt::Debug,
    (cos, rel, cycles, estimate): (f64, f64, u64, u64),
    min_cos: f64,
    max_rel: f64,
) {
    eprintln!("{what:?}: cosine {cos:.6}, rel L2 {rel:.2e}, {cycles} cycles (estimate {estimate})");
    assert!(
        cos > min_cos && rel < max_rel,
        "{what:?}: cosine {cos}, rel L2 {rel}"
    );
}

/// The simulated `cycles` are within 5 % of the `estimate` (the bar every
/// codelet's estimate is held to); `what` names the case.
pub fn assert_near_estimate(cycles: u64, estimate: u64, what: impl std::fmt::Display) {
    let rel = (cycles as f64 - estimate as f64).abs() / estimate as f64;
    assert!(
        rel <= 0.05,
        "{what}: simulated {cycles} cycles, estimate {estimate}"
    );
}

/// The simulated tile's worker issues are the sum, over the six workers'
/// `shares`, of what the codelet's counts say a worker with that share
/// issues (`per_worker`); `what` names the case.
pub fn assert_worker_issues(
    simulated: u64,
    shares: &[u32; 6],
    per_worker: impl Fn(u32) -> u64,
    what: impl std::fmt::Display,
) {
    let issues: u64 = shares.iter().map(|&n| per_worker(n)).sum();
    assert_eq!(simulated, issues, "{what}");
}

/// The launch `s` just simulated on tile 0 took cycles near the codelet's
/// `estimate` ([`assert_near_estimate`]) and issued, worker by worker,
/// what its counts say ([`assert_worker_issues`] over `shares`); `what`
/// names the case.
pub fn assert_launch_as_estimated(
    s: &ipuc_runtime::sim::Simulator,
    estimate: u64,
    shares: &[u32; 6],
    per_worker: impl Fn(u32) -> u64,
    what: impl std::fmt::Display,
) {
    use ipuc_runtime::device::Device;
    let p = s.profile().unwrap();
    assert_near_estimate(p.total_cycles, estimate, &what);
    assert_worker_issues(p.tiles[0].worker_issues, shares, per_worker, what);
}

/// A codelet that splits rows (or units of rows) over the six workers:
/// the strided copy, the row reduction, the transpose, LayerNorm and the
/// row broadcast and splat each
/// give their shares and a worker's issues for `n` rows from the emitted
/// counts.
pub trait RowCodelet: Codelet {
    /// Rows per worker.
    fn shares(&self) -> [u32; 6];
    /// A worker's issues for `n` rows.
    fn issues(&self, counts: &Self::Counts, n: u32) -> u64;
}

macro_rules! row_codelets {
    ($($codelet:ty),*) => {$(
        impl RowCodelet for $codelet {
            fn shares(&self) -> [u32; 6] {
                self.worker_rows()
            }
            fn issues(&self, counts: &Self::Counts, n: u32) -> u64 {
                self.worker_issues(counts, n)
            }
        }
    )*};
}
row_codelets!(
    ipuc_backend_ipu::codelets::copy::StridedCopy,
    ipuc_backend_ipu::codelets::reduce::RowReduce,
    ipuc_backend_ipu::codelets::transpose::Transpose,
    ipuc_backend_ipu::codelets::layernorm::LayerNorm,
    ipuc_backend_ipu::codelets::broadcast::RowBroadcast,
    ipuc_backend_ipu::codelets::broadcast::SplatRows
);

/// [`assert_launch_as_estimated`] for the row codelet `c` that `s` just
/// ran, with the `counts` its emission gave.
pub fn assert_rows_as_estimated<C: RowCodelet + std::fmt::Debug + 'static>(
    s: &ipuc_runtime::sim::Simulator,
    c: &C,
    counts: &C::Counts,
    what: impl std::fmt::Display,
) {
    let estimate = c.estimate_cycles().unwrap();
    assert_launch_as_estimated(s, estimate, &c.shares(), |n| c.issues(counts, n), what);
}

/// f16 values as the tile stores them: little-endian, two bytes each.
pub fn f16_bytes(values: &[half::f16]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|x| x.to_bits().to_le_bytes())
        .collect()
}

/// The values of little-endian f16 `bytes`, widened to f64.
pub fn f16_values(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64())
        .collect()
}

/// Building `c` is refused with a message that contains `want` (the
/// parameter checks of every codelet test state their cases this way).
pub fn assert_refused(c: &impl Codelet, want: &str) {
    let machine = ipuc_ipu_arch::MachineModel::c600();
    let message = match c.program(0, &machine) {
        Ok(_) => panic!("accepted; want a refusal containing {want:?}"),
        Err(e) => e.to_string(),
    };
    assert!(
        message.contains(want),
        "{message:?} does not contain {want:?}"
    );
}

/// An f16 whose magnitude is drawn from `[lo, hi)`, with a random sign
/// (with `lo > 0` never zero, which would hide sign and scaling errors).
pub fn signed_f16(rng: &mut impl rand::Rng, lo: f64, hi: f64) -> half::f16 {
    half::f16::from_f64(ipuc_test_support::random::nonzero(rng, lo, hi))
}

/// `n` draws of [`signed_f16`].
pub fn signed_f16s(rng: &mut impl rand::Rng, n: u32, lo: f64, hi: f64) -> Vec<half::f16> {
    (0..n).map(|_| signed_f16(rng, lo, hi)).collect()
}

/// `got` is within `tol` of `want`; `what` names the element.
pub fn assert_within(got: f64, want: f64, tol: f64, what: impl std::fmt::Display) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got} want {want} (tolerance {tol:e})"
    );
}

/// The simulator after running `prog` (on `tile`) over `inputs`, each
/// `(address, bytes)` written to the tile first; a fault fails the test.
pub fn simulate(
    prog: &CodeletProgram,
    tile: u32,
    inputs: &[(u32, &[u8])],
) -> ipuc_runtime::sim::Simulator {
    use ipuc_runtime::device::Device;
    let mut s = ipuc_runtime::sim::testing::sim(&executable_of(prog), Default::default());
    for &(address, bytes) in inputs {
        s.write_memory(tile, address, bytes).unwrap();
    }
    s.run().unwrap_or_else(|e| panic!("{e}"));
    s
}
