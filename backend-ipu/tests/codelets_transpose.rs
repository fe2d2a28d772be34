//! Transpose codelet on the simulator: random nonzero f16 / f32 bit
//! patterns, exact comparison with the reference, cycles against the
//! estimate and worker issues against the instruction counts.

mod common;

use common::{assert_rows_as_estimated, simulate};
use ipuc_backend_ipu::codelets::program::Codelet;
use ipuc_backend_ipu::codelets::transpose::{Transpose, TransposeElem};
use ipuc_ipu_arch::MachineModel;
use rand::{Rng, SeedableRng};

#[test]
fn transposes_match_the_reference_and_estimate() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(91);
    for (elem, rows, cols, src) in [
        (TransposeElem::F32, 1u32, 1u32, 0x80000u32),
        (TransposeElem::F32, 7, 13, 0x80000u32),
        (TransposeElem::F32, 64, 96, 0x80000u32),
        (TransposeElem::F16, 2, 1, 0x80000u32),
        (TransposeElem::F16, 8, 13, 0x80000u32),
        (TransposeElem::F16, 48, 100, 0x80000u32),
        (TransposeElem::F16, 14, 6, 0x80000u32),
        (TransposeElem::F16, 2, 2, 0x80000u32),
        (TransposeElem::F16, 6, 7, 0x80000u32),
        (TransposeElem::F16, 64, 96, 0x80000u32),
        (TransposeElem::F16, 30, 14, 0x80000u32),
        (TransposeElem::F32, 7, 12, 0x80000),
        (TransposeElem::F32, 1, 2, 0x80000),
        (TransposeElem::F32, 33, 50, 0x80000),
        // An odd-word source takes the one-row path.
        (TransposeElem::F32, 9, 10, 0x80004),
    ] {
        let c = Transpose {
            elem,
            rows,
            cols,
            src,
            dst: 0xa0000,
        };
        let n = (rows * cols) as usize;
        // Nonzero random elements: zero-filled memory could not hide a miss.
        let src: Vec<u8> = match elem {
            TransposeElem::F16 => (0..n)
                .flat_map(|_| half::f16::from_f32(rng.random_range(0.5f32..4.0)).to_le_bytes())
                .collect(),
            TransposeElem::F32 => (0..n)
                .flat_map(|_| rng.random_range(-8.0f32..-0.25).to_le_bytes())
                .collect(),
        };
        let (prog, counts) = c.program(4, &MachineModel::c600()).unwrap();
        // One `rpt` pass: f32 load and store 2 bundles, f32 pairs 3, f16
        // through the MRF 5, f16 shuffle 4 (the paths' documented shapes).
        let pass = match (elem, c.rows_per_unit()) {
            (TransposeElem::F32, 1) => 2,
            (TransposeElem::F32, _) => 3,
            (TransposeElem::F16, 1) => 5,
            (TransposeElem::F16, _) => 4,
        };
        assert_eq!(counts.1, pass, "{elem:?} {rows} x {cols}");
        let s = simulate(&prog, 4, &[(c.src, &src)]);
        let got = s.read_memory(4, c.dst, src.len() as u32).unwrap();
        assert_eq!(got, c.reference(&src), "{elem:?} {rows} x {cols}");
        assert_rows_as_estimated(&s, &c, &counts, format_args!("{elem:?} {rows} x {cols}"));
    }
}

#[test]
fn paired_paths_are_taken_and_cheaper() {
    // Per four elements: f16 sort4x16 4 issues, f32 pairs 6, f32 single 8,
    // f16 MRF 10.
    let t = |elem, cols| Transpose {
        elem,
        rows: 64,
        cols,
        src: 0x80000,
        dst: 0xa0000,
    };
    let shuffled = t(TransposeElem::F16, 96);
    assert_eq!(shuffled.rows_per_unit(), 2);
    let c600 = MachineModel::c600();
    let text = shuffled.program(0, &c600).unwrap().0.assembly();
    assert!(text.contains("sort4x16hi"), "{text}");
    let f32_pairs = t(TransposeElem::F32, 96);
    assert_eq!(f32_pairs.rows_per_unit(), 2);
    let f32_single = Transpose {
        src: 0x80004,
        ..t(TransposeElem::F32, 96)
    };
    assert_eq!(f32_single.rows_per_unit(), 1);
    let mrf = t(TransposeElem::F16, 95);
    assert_eq!(mrf.rows_per_unit(), 1);
    let [a, b, c, d] =
        [&shuffled, &f32_pairs, &f32_single, &mrf].map(|x| x.estimate_cycles().unwrap());
    println!("64x96 transpose cycles: f16 shuffle {a}, f32 pairs {b}, f32 single {c}, f16 MRF (95 cols) {d}");
    assert!(a * 4 < b * 3, "{a} vs {b}");
    assert!(b * 5 < c * 4, "{b} vs {c}");
    assert!(c < d, "{c} vs {d}");
}
