//! `ipu-prof`: answers questions about a profile written by `ipu-run --profile`.

use clap::Parser;

fn main() {
    ipuc_tools::init_logging();
    let cli = ipuc_tools::prof::cli::Cli::parse();
    match ipuc_tools::prof::cli::run(cli) {
        Ok(out) => print!("{out}"),
        Err(e) => {
            eprintln!("ipu-prof: error: {e}");
            std::process::exit(2);
        }
    }
}
