//! Small-program helpers for tests and benches: assemble hand-written tile
//! programs into an executable, bind tensors, run on the simulator, read
//! words back. They panic with the assembler's or simulator's message on
//! failure, as test helpers do; compilers use the `Device` API instead.

use crate::device::{Device, DeviceError};
use crate::sim::{Fault, SimConfig, Simulator};
use ipuc_ipu_arch::exe::DType;
use ipuc_ipu_arch::MachineModel;
use ipuc_ipu_arch::{assemble, AsmOptions, Executable, TensorBinding, TileProgram};

/// Assembles each `(tile, text)` and bundles the images into a c600 executable.
pub fn program(tiles: &[(u32, &str)], tensors: Vec<TensorBinding>) -> Executable {
    let tiles = tiles
        .iter()
        .map(|(t, text)| {
            let opts = AsmOptions {
                file: format!("tile{t}.S"),
                ..AsmOptions::default()
            };
            let image = assemble(text, &opts).unwrap_or_else(|e| panic!("{e}"));
            TileProgram { tile: *t, image }
        })
        .collect();
    Executable::new("c600", tiles, tensors, vec![]).unwrap()
}

/// A tensor binding of `count` elements of `dtype` at `address` on `tile`.
pub fn binding(name: &str, tile: u32, address: u32, dtype: DType, count: u64) -> TensorBinding {
    TensorBinding {
        name: name.into(),
        tile,
        address,
        size: (count * u64::from(dtype.size())) as u32,
        dtype,
        shape: vec![count],
        element_offset: 0,
    }
}

/// A c600 simulator with `exe` loaded.
pub fn sim(exe: &Executable, config: SimConfig) -> Simulator {
    let mut s = Simulator::new(MachineModel::c600(), config);
    s.load(exe).unwrap();
    s
}

/// Runs `tiles` to completion and returns the simulator; panics on a fault.
pub fn run_ok(tiles: &[(u32, &str)], tensors: Vec<TensorBinding>) -> Simulator {
    let exe = program(tiles, tensors);
    let mut s = sim(&exe, SimConfig::default());
    s.run().unwrap_or_else(|e| panic!("{e}"));
    s
}

/// Runs `tiles` and returns the fault they must raise; panics if they do not.
pub fn run_fault(tiles: &[(u32, &str)], config: SimConfig) -> Fault {
    let exe = program(tiles, vec![]);
    let mut s = sim(&exe, config);
    match s.run() {
        Err(DeviceError::Fault(f)) => *f,
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// The little-endian word at `addr` of `tile`.
pub fn word(s: &Simulator, tile: u32, addr: u32) -> u32 {
    let b = s.read_memory(tile, addr, 4).unwrap();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
