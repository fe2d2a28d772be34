//! `ipu-run`: run a model on a device and compare with reference outputs.

/// The compile allocates millions of small IR objects; mimalloc's thread-local
/// free lists halve its time against glibc's malloc (measured on the so400m
/// MLP block: 46 s -> 20 s of CPU), kept from purging ([`ipuc_tools::alloc`]).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    ipuc_tools::alloc::keep_freed_memory();
    ipuc_tools::init_logging();
    std::process::exit(ipuc_tools::run::main_with_args(std::env::args().collect()));
}
