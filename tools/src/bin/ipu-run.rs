//! `ipu-run`: run a model on a device and compare with reference outputs.

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("IPUC_LOG"))
        .with_writer(std::io::stderr)
        .init();
    std::process::exit(ipuc_tools::run::main_with_args(std::env::args().collect()));
}
