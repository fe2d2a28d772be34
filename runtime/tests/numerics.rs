//! Numerics against float64 / exact references.

use half::f16;
use ipuc_ipu_arch::float8::f8_to_f64;
use ipuc_runtime::device::Device;
use ipuc_runtime::sim::testing::*;
use rand::{Rng, SeedableRng};

fn f16_bytes(v: &[f16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()
}

fn read_f16(s: &ipuc_runtime::sim::Simulator, tile: u32, addr: u32, n: u32) -> Vec<f16> {
    s.read_memory(tile, addr, n * 2)
        .unwrap()
        .chunks(2)
        .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])))
        .collect()
}

const WORKER: &str = "main:\n    setzi $m0, worker\n    setzi $m1, 0x70000\n    run $m0, $m1, 0\n    sync TEXCH_SYNCZONE_LOCAL\n    exitz $mzero\n    .worker\nworker:\n";

#[test]
fn f32_vector_ops_match_float64() {
    let text = format!(
        "{WORKER}    ld64 $a0:1, $mvertex_base, $mzero, 0\n    ld64 $a2:3, $mvertex_base, $mzero, 1\n    ld32 $a6, $mvertex_base, $mzero, 4\n    uput $TAS, $a6\n\
         f32v2add $a4:5, $a0:1, $a2:3\n    st64 $a4:5, $mvertex_base, $mzero, 4\n\
         f32v2mul $a4:5, $a0:1, $a2:3\n    st64 $a4:5, $mvertex_base, $mzero, 5\n\
         f32v2sub $a4:5, $a0:1, $a2:3\n    st64 $a4:5, $mvertex_base, $mzero, 6\n\
         f32v2axpy $a4:5, $a0:1, $a2:3\n    st64 $a4:5, $mvertex_base, $mzero, 7\n    exitz $mzero\n"
    );
    let exe = program(&[(0, &text)], vec![]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for _ in 0..20 {
        let x: [f32; 2] = [rng.gen_range(-100.0..100.0), rng.gen_range(-1e-3..1e-3)];
        let y: [f32; 2] = [rng.gen_range(-100.0..100.0), rng.gen_range(-1e3..1e3)];
        let tas: f32 = rng.gen_range(-4.0..4.0);
        let mut s = sim(&exe, Default::default());
        let data: Vec<u8> = x
            .iter()
            .chain(&y)
            .flat_map(|v| v.to_le_bytes())
            .chain(tas.to_le_bytes())
            .collect();
        s.write_memory(0, 0x70000, &data).unwrap();
        s.run().unwrap();
        let out: Vec<f32> = s
            .read_memory(0, 0x70020, 32)
            .unwrap()
            .chunks(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        for l in 0..2 {
            let (a, b, t) = (f64::from(x[l]), f64::from(y[l]), f64::from(tas));
            assert_eq!(out[l], (a + b) as f32);
            assert_eq!(out[2 + l], (a * b) as f32);
            assert_eq!(out[4 + l], (a - b) as f32);
            let axpy = t * a + b;
            assert!(
                (f64::from(out[6 + l]) - axpy).abs() <= axpy.abs() * 1.2e-7 + 1e-30,
                "{} vs {axpy}",
                out[6 + l]
            );
        }
    }
}

/// Exact FP8 reference by brute force: the nearest code, ties to the even
/// mantissa, saturating at 240, NaN for NaN/inf.
fn f8_reference(v: f64) -> u8 {
    if !v.is_finite() {
        return 0x80;
    }
    let v = v.clamp(-240.0, 240.0);
    let mut best = 0u8;
    let mut best_err = f64::INFINITY;
    for q in 0u8..=255 {
        if q == 0x80 {
            continue;
        }
        let err = (f8_to_f64(q) - v).abs();
        let better = err < best_err || (err == best_err && (q & 1) == 0 && (best & 1) == 1);
        if better {
            best = q;
            best_err = err;
        }
    }
    if f8_to_f64(best) == 0.0 {
        0
    } else {
        best
    }
}

#[test]
fn conversions_f32_f16_f8_are_exactly_rounded() {
    for scale in [-3i32, 0, 4] {
        let text = format!(
            "{WORKER}    setzi $m2, 0\n    setzi $m3, 64\n    setzi $m4, 0x70000\n    setzi $m5, 0x71000\n    setzi $m6, 0x72000\n\
             setzi $m7, 0x73000\n    setzi $m8, 0x74000\n    setzi $m9, 0x75000\nloop:\n\
             ld64 $a0:1, $m4, $mzero, $m2\n    f16v4tof8 $a2, $a0:1, {scale}\n    st32 $a2, $m5, $mzero, $m2\n\
             f8v4tof16 $a4:5, $a2, {scale}\n    st64 $a4:5, $m6, $mzero, $m2\n\
             ld64 $a0:1, $m7, $mzero, $m2\n    f32v2tof16 $a6, $a0:1\n    st32 $a6, $m8, $mzero, $m2\n\
             f16v2tof32 $a0:1, $a6\n    st64 $a0:1, $m9, $mzero, $m2\n\
             add $m2, $m2, 1\n    sub $m3, $m3, 1\n    brnz $m3, loop\n    exitz $mzero\n"
        );
        let exe = program(&[(0, &text)], vec![]);
        let mut s = sim(&exe, Default::default());
        let mut rng = rand::rngs::StdRng::seed_from_u64((scale + 20) as u64);
        let mut halves: Vec<f16> = (0..256)
            .map(|_| f16::from_f64(rng.gen_range(-300.0..300.0) * 10f64.powi(rng.gen_range(-4..1))))
            .collect();
        halves[0] = f16::INFINITY;
        halves[1] = f16::NAN;
        halves[2] = f16::from_f64(1.0625 * 2f64.powi(scale)); // a tie: rounds to even (1.0)
        halves[3] = f16::from_f64(-1e4); // saturates to -240
        let floats: Vec<f32> = (0..128)
            .map(|_| rng.gen_range(-7e4f32..7e4) * 10f32.powi(rng.gen_range(-9..1)))
            .collect();
        s.write_memory(0, 0x70000, &f16_bytes(&halves)).unwrap();
        s.write_memory(
            0,
            0x73000,
            &floats
                .iter()
                .flat_map(|f| f.to_le_bytes())
                .collect::<Vec<u8>>(),
        )
        .unwrap();
        s.run().unwrap_or_else(|e| panic!("{e}"));
        let f8 = s.read_memory(0, 0x71000, 256).unwrap();
        let back = read_f16(&s, 0, 0x72000, 256);
        for i in 0..256 {
            let want = f8_reference(halves[i].to_f64() * 2f64.powi(-scale));
            assert_eq!(f8[i], want, "scale {scale} element {i} ({})", halves[i]);
            let v = f8_to_f64(want) * 2f64.powi(scale);
            assert!(
                back[i] == f16::from_f64(v) || (v.is_nan() && back[i].is_nan()),
                "f8->f16 {i}"
            );
        }
        assert_eq!(f8[2], 0x40);
        assert_eq!(f8[3], 0xff);
        assert_eq!((f8[0], f8[1]), (0x80, 0x80));
        let h = read_f16(&s, 0, 0x74000, 128);
        let f: Vec<f32> = s
            .read_memory(0, 0x75000, 512)
            .unwrap()
            .chunks(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        for i in 0..128 {
            // f64 -> f16 rounding of the exact f32 value is the reference.
            let want = f16::from_f64(f64::from(floats[i]));
            assert_eq!(
                h[i].to_bits(),
                want.to_bits(),
                "f32->f16 {i}: {}",
                floats[i]
            );
            assert_eq!(f[i], want.to_f32(), "f16->f32 {i}");
        }
    }
}

#[test]
fn sort4x16_packs_low_and_high_halves() {
    // Random words (no zero halves) through both forms, including `$a15`
    // (reads as zero) as a source.
    let mut rng = rand::rngs::StdRng::seed_from_u64(416);
    let words: Vec<u32> = (0..2)
        .map(|_| (rng.gen_range(1u32..0xffff) << 16) | rng.gen_range(1u32..0xffff))
        .collect();
    let text = format!(
        "{WORKER}    setzi $m4, 0x70000\n    ld32 $a0, $m4, $mzero, 0\n    ld32 $a1, $m4, $mzero, 1\n\
         \x20   sort4x16lo $a2, $a0, $a1\n    sort4x16hi $a3, $a0, $a1\n    sort4x16hi $a4, $a1, $a15\n\
         \x20   st32 $a2, $m4, $mzero, 2\n    st32 $a3, $m4, $mzero, 3\n    st32 $a4, $m4, $mzero, 4\n    exitz $mzero\n"
    );
    let exe = program(&[(0, &text)], vec![]);
    let mut s = sim(&exe, Default::default());
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    s.write_memory(0, 0x70000, &bytes).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let (a, b) = (words[0], words[1]);
    assert_eq!(word(&s, 0, 0x70008), (a & 0xffff) | (b << 16));
    assert_eq!(word(&s, 0, 0x7000c), (a >> 16) | (b & 0xffff_0000));
    assert_eq!(word(&s, 0, 0x70010), b >> 16);
}
