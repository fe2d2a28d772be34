//! Shared by the codelet tests.
#![allow(dead_code)]

use ipuc_backend_ipu::codelets::program::CodeletProgram;
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
