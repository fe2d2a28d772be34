//! `ipu-opt`: parse, transform and print ipuc IR (mlir-opt compatible flags).

/// Lowering allocates millions of small IR objects: mimalloc, kept from
/// purging ([`ipuc_tools::alloc`]), as `ipu-run` (siglip-small's lowering
/// to an executable: 28 s with glibc's malloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    ipuc_tools::alloc::keep_freed_memory();
    ipuc_tools::opt::opt_main("ipu-opt", |_, _| Ok(()))
}
