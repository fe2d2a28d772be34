//! The assembler's warning at every supervisor instruction that reads a
//! register before the pipeline has its value: the chip (and the simulator)
//! stalls it, which the code does not show.

use super::error::{Diag, Pos};
use crate::encoding::Instr;
use crate::machine::MachineModel;
use crate::pipeline::supervisor_schedule;

/// Warns at the stalls of supervisor code `code` (address, instruction,
/// where). Each run of consecutive addresses is scheduled on its own: the
/// instruction after a gap starts a new straight run.
pub(super) fn warn_supervisor_stalls(
    code: &mut [(u32, Instr, Pos)],
    m: &MachineModel,
    diag: &mut Diag,
) {
    code.sort_by_key(|c| c.0);
    let mut start = 0;
    while start < code.len() {
        let mut end = start + 1;
        while end < code.len() && code[end].0 == code[end - 1].0 + 4 {
            end += 1;
        }
        let run = &code[start..end];
        let instrs: Vec<Instr> = run.iter().map(|c| c.1).collect();
        for s in supervisor_schedule(&instrs, m).stalls {
            let reg = if s.register == 16 {
                "$CCCSLOAD".to_string()
            } else {
                format!("$m{}", s.register)
            };
            diag.warning(
                run[s.index].2,
                format!(
                    "supervisor stall of {} cycle(s): {reg} is written {} instruction(s) earlier (line {}) and readable only {} cycles after that instruction issues; move independent instructions in between",
                    s.cycles,
                    s.index - s.writer,
                    run[s.writer].2.line,
                    m.supervisor_result_latency
                ),
            );
        }
        start = end;
    }
}
