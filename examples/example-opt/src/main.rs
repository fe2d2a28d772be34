//! `example-opt`: every ipuc dialect, pass and `ipu-opt` flag, plus the
//! `example` dialect and the `example-expand-powi` pass, in one call.

fn main() -> std::process::ExitCode {
    ipuc_tools::opt::opt_main("example-opt", |dialects, passes| {
        dialects.register(ipuc_example_opt::dialect::dialect());
        ipuc_example_opt::register_passes(passes)
    })
}
