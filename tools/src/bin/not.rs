//! `not`: runs a command and inverts its result, as LLVM's `not`. Exits 0
//! when the command exits with a non-zero status, 1 when it succeeds or
//! crashes. With `--crash`, exits 0 only when the command crashes (is
//! killed by a signal).

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let expect_crash = args.first().is_some_and(|a| a == "--crash");
    if expect_crash {
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: not [--crash] COMMAND [ARGS...]");
        return ExitCode::from(1);
    };
    let status = match Command::new(program).args(rest).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("not: cannot run '{program}': {e}");
            return ExitCode::from(1);
        }
    };
    let crashed = status.signal().is_some();
    let inverted = if expect_crash {
        crashed
    } else {
        !crashed && !status.success()
    };
    if inverted {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
