//! Compiles `csrc/resource_blob.cpp` against the MLIR 22 headers that
//! mlir-sys links (`MLIR_SYS_220_PREFIX`), with LLVM's own C++ flags.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=csrc/resource_blob.cpp");
    println!("cargo:rerun-if-env-changed=MLIR_SYS_220_PREFIX");
    let Ok(prefix) = std::env::var("MLIR_SYS_220_PREFIX") else {
        panic!(
            "ipuc-mlir-interop needs MLIR_SYS_220_PREFIX (e.g. /usr/lib/llvm-22), \
             as mlir-sys does; see the README's section on the `mlir` feature"
        );
    };
    let llvm_config = format!("{prefix}/bin/llvm-config");
    let cxxflags = Command::new(&llvm_config)
        .arg("--cxxflags")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {llvm_config}: {e}"));
    assert!(cxxflags.status.success(), "{llvm_config} --cxxflags failed");
    let mut build = cc::Build::new();
    build.cpp(true).file("csrc/resource_blob.cpp");
    for flag in String::from_utf8_lossy(&cxxflags.stdout).split_whitespace() {
        // The cc crate adds -O only when optimising, and glibc warns about
        // _FORTIFY_SOURCE without it.
        if !flag.starts_with("-D_FORTIFY_SOURCE") {
            build.flag(flag);
        }
    }
    build.flag_if_supported("-Wno-unused-parameter");
    build.compile("ipuc_mlir_shim");
}
