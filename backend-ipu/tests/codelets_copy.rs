//! Strided-copy codelet on the simulator: random bytes, exact comparison of
//! the whole destination area (rows copied, gaps untouched), cycles
//! against the estimate, and a bank conflict reported.

mod common;

use common::{assert_rows_as_estimated, executable_of, simulate};
use ipuc_backend_ipu::codelets::copy::StridedCopy;
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_ipu_arch::MachineModel;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use rand::{Rng, SeedableRng};

#[test]
fn strided_copies_match_the_reference_and_estimate() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(77);
    for (rows, row_bytes, src_stride, dst_stride) in [
        (1u32, 8u32, 8u32, 8u32),
        (6, 64, 96, 64),
        (13, 2304, 2304, 2560),
        (40, 8, 24, 16),
    ] {
        let c = StridedCopy {
            rows,
            row_bytes,
            src: 0x80000,
            src_stride,
            dst: 0xa0000,
            dst_stride,
        };
        let src_len = (rows * src_stride) as usize;
        let dst_len = (rows * dst_stride) as usize;
        let src: Vec<u8> = (0..src_len).map(|_| rng.random_range(1..=255)).collect();
        let dst: Vec<u8> = (0..dst_len).map(|_| rng.random_range(1..=255)).collect();
        let (prog, counts) = c.program(4, &MachineModel::c600()).unwrap();
        let s = simulate(&prog, 4, &[(c.src, &src), (c.dst, &dst)]);
        let got = s.read_memory(4, c.dst, dst_len as u32).unwrap();
        assert_eq!(got, c.reference(&src, &dst), "{rows} rows of {row_bytes}");
        assert_rows_as_estimated(&s, &c, &counts, format_args!("{rows} rows of {row_bytes}"));
    }
}

/// A loop's archive runs from the top of region 0 into the interleaved
/// region (backend-ipu/src/lower/chain_loop.rs): a span's copy may read
/// across the boundary, into interleaved memory at the same address mod
/// 16 or into region 0 below the archive's elements, with no conflict.
#[test]
fn a_copy_across_the_regions_boundary_has_no_conflict() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(78);
    for dst in [0xa0f00u32, 0x6c100] {
        let c = StridedCopy {
            rows: 5,
            row_bytes: 512,
            src: 0x80000 - 1024,
            src_stride: 512,
            dst,
            dst_stride: 512,
        };
        let src: Vec<u8> = (0..2560).map(|_| rng.random_range(1..=255)).collect();
        let before = vec![0u8; 2560];
        let (prog, counts) = c.program(2, &MachineModel::c600()).unwrap();
        let s = simulate(&prog, 2, &[(c.src, &src), (c.dst, &before)]);
        let got = s.read_memory(2, c.dst, 2560).unwrap();
        assert_eq!(got, c.reference(&src, &before), "to 0x{dst:x}");
        assert_rows_as_estimated(&s, &c, &counts, format_args!("to 0x{dst:x}"));
    }
}

#[test]
fn a_copy_within_one_bank_is_a_reported_conflict() {
    // Source and destination in the same 16 KiB element of region 0.
    let c = StridedCopy {
        rows: 6,
        row_bytes: 64,
        src: 0x60000,
        src_stride: 64,
        dst: 0x61000,
        dst_stride: 64,
    };
    let (prog, _) = c.program(0, &MachineModel::c600()).unwrap();
    let mut s = sim(&executable_of(&prog), Default::default());
    let err = s.run().unwrap_err().to_string();
    assert!(err.contains("bank conflict"), "{err}");
}

#[test]
fn zero_fills_clear_exactly_their_bytes_and_match_the_estimate() {
    use ipuc_backend_ipu::codelets::fill::Fill;
    let mut rng = rand::rngs::StdRng::seed_from_u64(78);
    for words in [1u32, 5, 6, 7, 420, 1001] {
        let f = Fill {
            bytes: 8 * words,
            dst: 0x80008,
        };
        // Random bytes around and under the fill: only its own bytes
        // become zero.
        let around: Vec<u8> = (0..f.bytes + 32)
            .map(|_| rng.random_range(1..=255))
            .collect();
        let (prog, counts) = f.program(3, &MachineModel::c600()).unwrap();
        let s = simulate(&prog, 3, &[(0x80000, &around)]);
        let got = s.read_memory(3, 0x80000, f.bytes + 32).unwrap();
        let mut want = around.clone();
        want[8..8 + f.bytes as usize].fill(0);
        assert_eq!(got, want, "{words} words");
        common::assert_worker_issues(
            s.profile().unwrap().tiles[0].worker_issues,
            &f.worker_words(),
            |n| counts.worker_issues(n),
            format_args!("{words} words"),
        );
        let est = f.estimate_cycles().unwrap();
        common::assert_near_estimate(
            s.profile().unwrap().total_cycles,
            est,
            format_args!("{words} words"),
        );
    }
    assert!(Fill {
        bytes: 12,
        dst: 0x80000
    }
    .validate()
    .is_err());
}

#[test]
fn row_broadcasts_repeat_each_groups_row_and_match_the_estimate() {
    use ipuc_backend_ipu::codelets::broadcast::{RowBroadcast, ROW_BYTES};
    let mut rng = rand::rngs::StdRng::seed_from_u64(79);
    // (groups, rows, group stride): one row; fewer rows than workers; a
    // product's groups (two halves and a word apart, the bias's place in
    // the output buffer, `TileGemm::bias_in_output`).
    for (groups, rows, stride) in [
        (1u32, 1u32, 32u32),
        (3, 4, 4 * 32 + 16),
        (5, 105, 2 * (105 * 32 + 8) + 8),
        (2, 13, 13 * 32),
    ] {
        let b = RowBroadcast {
            groups,
            rows,
            src: 0x60000,
            dst: 0xa0008,
            group_stride: stride,
        };
        let what = format!("{groups} groups of {rows} rows");
        let src: Vec<u8> = (0..groups * ROW_BYTES)
            .map(|_| rng.random_range(1..=255))
            .collect();
        // Random bytes under and between the groups, which stay.
        let len = ((groups - 1) * stride + rows * ROW_BYTES + 64) as usize;
        let dst: Vec<u8> = (0..len).map(|_| rng.random_range(1..=255)).collect();
        let (prog, counts) = b.program(2, &MachineModel::c600()).unwrap();
        let s = simulate(&prog, 2, &[(b.src, &src), (b.dst, &dst)]);
        let got = s.read_memory(2, b.dst, len as u32).unwrap();
        assert_eq!(got, b.reference(&src, &dst), "{what}");
        assert_rows_as_estimated(&s, &b, &counts, &what);
    }
    let overlapping = RowBroadcast {
        groups: 2,
        rows: 4,
        src: 0x60000,
        dst: 0xa0000,
        group_stride: 64,
    };
    assert!(overlapping
        .validate()
        .unwrap_err()
        .to_string()
        .contains("overlap"));
}

/// The row splat (a value per row over every group's rows): one row;
/// fewer rows than workers; a product's groups (vt's: the second half of
/// each output group, a word apart); the widest step a store takes.
#[test]
fn row_splats_repeat_each_rows_value_and_match_the_estimate() {
    use ipuc_backend_ipu::codelets::broadcast::{SplatRows, ROW_BYTES};
    let mut rng = rand::rngs::StdRng::seed_from_u64(83);
    for (groups, rows, stride, src) in [
        (1u32, 1u32, 32u32, 0x60000u32),
        (3, 4, 4 * 32 + 16, 0x60002),
        (6, 92, 2 * (92 * 32 + 8) + 8, 0x60000),
        (2, 13, 2047 * 8 + 24, 0x60006),
    ] {
        let b = SplatRows {
            groups,
            rows,
            src,
            dst: 0xa0008,
            group_stride: stride,
        };
        let what = format!("{groups} groups of {rows} rows");
        let values: Vec<u8> = (0..2 * rows).map(|_| rng.random_range(1..=255)).collect();
        let len = ((groups - 1) * stride + rows * ROW_BYTES + 64) as usize;
        let dst: Vec<u8> = (0..len).map(|_| rng.random_range(1..=255)).collect();
        let (prog, counts) = b.program(2, &MachineModel::c600()).unwrap();
        let s = simulate(&prog, 2, &[(b.src, &values), (b.dst, &dst)]);
        let got = s.read_memory(2, b.dst, len as u32).unwrap();
        let want = b.reference(&values, &dst);
        assert_eq!(got, want, "{what}");
        // Every group's last row holds the last value, and the bytes
        // past it are untouched.
        let last = ((groups - 1) * stride + (rows - 1) * ROW_BYTES) as usize;
        assert_eq!(&want[last..last + 2], &values[values.len() - 2..], "{what}");
        assert_eq!(&want[last + 32..], &dst[last + 32..], "{what}");
        assert_rows_as_estimated(&s, &b, &counts, &what);
    }
    for (bad, why) in [
        (
            SplatRows {
                groups: 2,
                rows: 4,
                src: 0x60000,
                dst: 0xa0000,
                group_stride: 64,
            },
            "overlap",
        ),
        (
            SplatRows {
                groups: 2,
                rows: 4,
                src: 0x60000,
                dst: 0xa0000,
                group_stride: 2048 * 8 + 24,
            },
            "farther",
        ),
        (
            SplatRows {
                groups: 1,
                rows: 4,
                src: 0x60001,
                dst: 0xa0000,
                group_stride: 128,
            },
            "source",
        ),
    ] {
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
    }
}
