//! `ipu-opt`: parse, transform and print ipuc IR (mlir-opt compatible flags).

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("IPUC_LOG"))
        .with_writer(std::io::stderr)
        .init();
    std::process::exit(ipuc_tools::opt::main_with_args(
        std::env::args().skip(1).collect(),
    ));
}
