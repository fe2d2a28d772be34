//! `ipu-opt`: parse, transform and print ipuc IR (mlir-opt compatible flags).

fn main() -> std::process::ExitCode {
    ipuc_tools::opt::opt_main("ipu-opt", |_, _| Ok(()))
}
