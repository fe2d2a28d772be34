//! `ipu-bench`: performance benchmarks on the simulated IPU.

use clap::Parser;

/// The compile allocates millions of small IR objects; mimalloc's thread-local
/// free lists halve its time against glibc's malloc (measured on the so400m
/// MLP block: 46 s -> 20 s of CPU), kept from purging ([`ipuc_tools::alloc`]).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    ipuc_tools::alloc::keep_freed_memory();
    ipuc_tools::init_logging();
    let cli = ipuc_tools::bench::cli::Cli::parse();
    if let Some(n) = cli.sim_threads {
        // Every simulator the benchmarks start reads its default thread
        // count from here; no other thread runs yet.
        std::env::set_var(ipuc_runtime::sim::SIM_THREADS_ENV, n.to_string());
    }
    match ipuc_tools::bench::cli::run(cli) {
        Ok(out) => print!("{out}"),
        Err(e) => {
            eprintln!("ipu-bench: error: {e}");
            std::process::exit(1);
        }
    }
}
