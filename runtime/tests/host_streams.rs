//! Host streams as steps of the run: inputs move before the device program,
//! outputs after it, each taking the machine model's host-link time.

use ipuc_ipu_arch::exe::DType;
use ipuc_ipu_arch::{
    assemble, AsmOptions, Executable, HostStream, MachineModel, StreamDirection, TileProgram,
};
use ipuc_runtime::device::{Device, DeviceError};
use ipuc_runtime::sim::testing::*;
use ipuc_runtime::sim::SimConfig;

/// Tile 5 adds 1 to each of the four words of `x` (0x70000) into `y` (0x70010).
fn add_one() -> Executable {
    let mut text = String::from("main:\n    setzi $m0, 0x70000\n");
    for k in 0..4 {
        text += &format!(
            "    ld32 $m1, $m0, $mzero, {k}\n    add $m1, $m1, 1\n    st32 $m1, $m0, $mzero, {}\n",
            k + 4
        );
    }
    text += "    exitz $mzero\n";
    let image = assemble(&text, &AsmOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let stream = |name: &str, direction| HostStream {
        name: name.into(),
        tensor: name.into(),
        direction,
    };
    Executable::new(
        "c600",
        vec![TileProgram { tile: 5, image }],
        vec![
            binding("x", 5, 0x70000, DType::I32, 4),
            binding("y", 5, 0x70010, DType::I32, 4),
        ],
        vec![
            stream("x", StreamDirection::HostToDevice),
            stream("y", StreamDirection::DeviceToHost),
        ],
    )
    .unwrap()
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn streams_move_data_at_their_steps_and_count_in_the_run() {
    let m = MachineModel::c600();
    let mut s = sim(&add_one(), SimConfig::default());
    s.write_stream("x", &words(&[1, 2, 3, 4])).unwrap();
    // Staged, not yet on the tile: the bytes move at the input step.
    assert_eq!(s.read_memory(5, 0x70000, 16).unwrap(), vec![0; 16]);
    s.run().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.read_stream("y").unwrap(), words(&[2, 3, 4, 5]));
    let p = s.profile().unwrap().clone();
    // 16 bytes each way: 10 us (15,000 cycles at 1.5 GHz) + 16 B / 25 GB/s (1 cycle).
    let t = m.host_transfer_cycles(16);
    assert_eq!(t, 15_001);
    assert_eq!(p.host_steps.len(), 2);
    let (input, output) = (&p.host_steps[0], &p.host_steps[1]);
    assert_eq!(
        (
            input.stream.as_str(),
            input.start,
            input.cycles,
            input.bytes
        ),
        ("x", 0, t, 16)
    );
    assert_eq!(output.direction, StreamDirection::DeviceToHost);
    // The output step starts when the device program ends.
    assert_eq!(output.start, t + p.total_cycles);
    assert_eq!(p.host_cycles, 2 * t);
    assert_eq!(p.run_cycles, p.total_cycles + 2 * t);
    assert!(
        p.total_cycles > 0 && p.total_cycles < 100,
        "{}",
        p.total_cycles
    );
}

#[test]
fn an_unstaged_input_step_still_takes_its_time() {
    // `write_tensor` (the test helper) fills the tensor outside the run.
    let mut s = sim(&add_one(), SimConfig::default());
    s.write_tensor("x", &words(&[10, 20, 30, 40])).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.read_stream("y").unwrap(), words(&[11, 21, 31, 41]));
    assert_eq!(s.read_tensor("y").unwrap(), words(&[11, 21, 31, 41]));
    assert_eq!(s.profile().unwrap().host_cycles, 2 * 15_001);
}

#[test]
fn streams_are_checked_by_name_direction_and_size() {
    let mut s = sim(&add_one(), SimConfig::default());
    let wrong_way = s.write_stream("y", &words(&[0; 4])).unwrap_err();
    assert!(
        matches!(&wrong_way, DeviceError::UnknownTensor(m) if m.contains("host-to-device")),
        "{wrong_way}"
    );
    assert!(matches!(
        s.write_stream("x", &[0; 12]),
        Err(DeviceError::SizeMismatch {
            expected: 16,
            got: 12,
            ..
        })
    ));
    assert!(s.read_stream("x").is_err());
    // Nothing delivered before a run.
    assert!(s.read_stream("y").is_err());
}
