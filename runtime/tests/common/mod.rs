//! Helpers shared by the simulator tests.
#![allow(dead_code)]

use ipuc_backend_ipu::target::exe::DType;
use ipuc_backend_ipu::target::MachineModel;
use ipuc_backend_ipu::target::{assemble, AsmOptions, Executable, TensorBinding, TileProgram};
use ipuc_runtime::device::{Device, DeviceError};
use ipuc_runtime::sim::{Fault, SimConfig, Simulator};

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

pub fn sim(exe: &Executable, config: SimConfig) -> Simulator {
    let mut s = Simulator::new(MachineModel::c600(), config);
    s.load(exe).unwrap();
    s
}

pub fn run_ok(tiles: &[(u32, &str)], tensors: Vec<TensorBinding>) -> Simulator {
    let exe = program(tiles, tensors);
    let mut s = sim(&exe, SimConfig::default());
    s.run().unwrap_or_else(|e| panic!("{e}"));
    s
}

pub fn run_fault(tiles: &[(u32, &str)], config: SimConfig) -> Fault {
    let exe = program(tiles, vec![]);
    let mut s = sim(&exe, config);
    match s.run() {
        Err(DeviceError::Fault(f)) => *f,
        other => panic!("expected a fault, got {other:?}"),
    }
}

pub fn word(s: &Simulator, tile: u32, addr: u32) -> u32 {
    let b = s.read_memory(tile, addr, 4).unwrap();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
