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

fn read_f32(s: &ipuc_runtime::sim::Simulator, tile: u32, addr: u32, n: u32) -> Vec<f32> {
    s.read_memory(tile, addr, n * 4)
        .unwrap()
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
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
        let x: [f32; 2] = [
            rng.random_range(-100.0..100.0),
            rng.random_range(-1e-3..1e-3),
        ];
        let y: [f32; 2] = [rng.random_range(-100.0..100.0), rng.random_range(-1e3..1e3)];
        let tas: f32 = rng.random_range(-4.0..4.0);
        let mut s = sim(&exe, Default::default());
        let data: Vec<u8> = x
            .iter()
            .chain(&y)
            .flat_map(|v| v.to_le_bytes())
            .chain(tas.to_le_bytes())
            .collect();
        s.write_memory(0, 0x70000, &data).unwrap();
        s.run().unwrap();
        let out = read_f32(&s, 0, 0x70020, 8);
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
            .map(|_| {
                f16::from_f64(rng.random_range(-300.0..300.0) * 10f64.powi(rng.random_range(-4..1)))
            })
            .collect();
        halves[0] = f16::INFINITY;
        halves[1] = f16::NAN;
        halves[2] = f16::from_f64(1.0625 * 2f64.powi(scale)); // a tie: rounds to even (1.0)
        halves[3] = f16::from_f64(-1e4); // saturates to -240
        let floats: Vec<f32> = (0..128)
            .map(|_| rng.random_range(-7e4f32..7e4) * 10f32.powi(rng.random_range(-9..1)))
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
        let f = read_f32(&s, 0, 0x75000, 128);
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
        .map(|_| (rng.random_range(1u32..0xffff) << 16) | rng.random_range(1u32..0xffff))
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

/// A mnemonic and its float64 function.
type Transcendental = (&'static str, fn(f64) -> f64);

/// The 13 transcendentals in the order the test program stores them.
const TRANSCENDENTALS: [Transcendental; 13] = [
    ("f16v2exp", f64::exp),
    ("f16v2exp2", f64::exp2),
    ("f16v2ln", f64::ln),
    ("f16v2log2", f64::log2),
    ("f16v2tanh", f64::tanh),
    ("f16v2sigm", |x| 1.0 / (1.0 + (-x).exp())),
    ("f32exp", f64::exp),
    ("f32ln", f64::ln),
    ("f32oox", |x| 1.0 / x),
    ("f32oorx", |x| 1.0 / x.sqrt()),
    ("f32sqrt", f64::sqrt),
    ("f32tanh", f64::tanh),
    ("f32sigm", |x| 1.0 / (1.0 + (-x).exp())),
];

/// Whether `got` is `want` rounded to nearest-even in a format whose
/// values next to `got` are `down` and `up` (None past the largest finite
/// value), checked from the neighbours, not by converting `want`.
fn is_nearest(
    got: f64,
    down: Option<f64>,
    up: Option<f64>,
    even: bool,
    max: f64,
    want: f64,
) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if got.is_infinite() {
        // Overflow: beyond the largest finite value plus half its ulp.
        let half_ulp = (max - down.unwrap_or(max)) / 2.0;
        return got.signum() == want.signum() && want.abs() >= max + half_ulp;
    }
    let d = (got - want).abs();
    [down, up].into_iter().flatten().all(|n| {
        let dn = (n - want).abs();
        d < dn || (d == dn && even)
    })
}

fn f16_nearest(got: f16, want: f64) -> bool {
    let b = got.to_bits();
    let step = |delta: i32| -> Option<f64> {
        let n = f16::from_bits((i32::from(b) + delta) as u16);
        (n.is_finite()).then(|| n.to_f64())
    };
    // Sign-magnitude: a larger bit pattern is a larger magnitude.
    let (mag_up, mag_down) = (step(1), if b & 0x7fff == 0 { None } else { step(-1) });
    let (down, up) = if got.is_sign_negative() {
        (mag_up, mag_down)
    } else {
        (mag_down, mag_up)
    };
    is_nearest(got.to_f64(), down, up, b & 1 == 0, 65504.0, want)
}

fn f32_nearest(got: f32, want: f64) -> bool {
    let b = got.to_bits();
    let step = |delta: i64| -> Option<f64> {
        let n = f32::from_bits((i64::from(b) + delta) as u32);
        n.is_finite().then(|| f64::from(n))
    };
    let (mag_up, mag_down) = (step(1), if b & 0x7fff_ffff == 0 { None } else { step(-1) });
    let (down, up) = if got.is_sign_negative() {
        (mag_up, mag_down)
    } else {
        (mag_down, mag_up)
    };
    is_nearest(
        f64::from(got),
        down,
        up,
        b & 1 == 0,
        f64::from(f32::MAX),
        want,
    )
}

#[test]
fn transcendentals_round_the_float64_function_to_nearest() {
    // N items: an f16 pair (lane 0 in [-12, 12], lane 1 in [2^-10, 1000])
    // and an f32 (alternately in [-30, 30] and [2^-20, 1e6]), each through
    // all 13 instructions; then known values and the special cases.
    const N: usize = 64;
    let mut body = String::new();
    for (k, (mn, _)) in TRANSCENDENTALS.iter().enumerate() {
        let src = if mn.starts_with("f16v2") { 0 } else { 1 };
        body += &format!("    {mn} $a2, $a{src}\n    st32 $a2, $m5, $mzero, {k}\n");
    }
    let text = format!(
        "{WORKER}    setzi $m4, 0x70000\n    setzi $m5, 0x74000\n    setzi $m6, {}\n\
         .Lloop:\n    ld32 $a0, $m4, $mzero, 0\n    ld32 $a1, $m4, $mzero, {N}\n{body}\
         \x20   add $m4, $m4, 4\n    add $m5, $m5, {}\n    brnzdec $m6, .Lloop\n    exitz $mzero\n",
        N - 1,
        4 * TRANSCENDENTALS.len()
    );
    let exe = program(&[(0, &text)], vec![]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1013);
    let mut pairs: Vec<[f16; 2]> = (0..N - 8)
        .map(|_| {
            [
                f16::from_f64(rng.random_range(-12.0..12.0)),
                f16::from_f64(2f64.powf(rng.random_range(-10.0..10.0))),
            ]
        })
        .collect();
    let mut singles: Vec<f32> = (0..N - 8)
        .map(|i| {
            if i % 2 == 0 {
                rng.random_range(-30.0..30.0)
            } else {
                2f32.powf(rng.random_range(-20.0..20.0))
            }
        })
        .collect();
    // Exact cases (each function's value is representable) and specials:
    // ln of a negative number is NaN, ln 0 is -inf, 1/0 is +inf, exp
    // overflows to +inf (f16 beyond 65520) and underflows to 0.
    for (p, s) in [
        ([0.0, 1.0], 4.0),
        ([3.0, 8.0], 9.0),
        ([-1.0, 0.0], 0.0),
        ([12.0, 0.25], -1.0),
        ([-20.0, 2.0], 100.0),
        ([f16::MAX.to_f64(), 1024.0], 1e-30),
        ([-0.0, 0.5], -0.0),
        ([11.0, 16.0], 2.0),
    ] {
        pairs.push([f16::from_f64(p[0]), f16::from_f64(p[1])]);
        singles.push(s as f32);
    }
    let mut data: Vec<u8> = pairs.iter().flat_map(|p| f16_bytes(p)).collect();
    data.extend(singles.iter().flat_map(|v| v.to_le_bytes()));
    let mut s = sim(&exe, Default::default());
    s.write_memory(0, 0x70000, &data).unwrap();
    s.run().unwrap_or_else(|e| panic!("{e}"));
    let width = TRANSCENDENTALS.len() as u32;
    for i in 0..N {
        for (k, (mn, f)) in TRANSCENDENTALS.iter().enumerate() {
            let w = word(&s, 0, 0x74000 + 4 * (i as u32 * width + k as u32));
            if mn.starts_with("f16v2") {
                for (lane, x) in pairs[i].iter().enumerate() {
                    let got = f16::from_bits((w >> (16 * lane)) as u16);
                    let x = x.to_f64();
                    assert!(
                        f16_nearest(got, f(x)),
                        "{mn}({x}) = {got}, float64 {}",
                        f(x)
                    );
                }
            } else {
                let got = f32::from_bits(w);
                let x = f64::from(singles[i]);
                assert!(
                    f32_nearest(got, f(x)),
                    "{mn}({x}) = {got}, float64 {}",
                    f(x)
                );
            }
        }
    }
    // Known values, read back directly.
    let at = |i: usize, k: usize| word(&s, 0, 0x74000 + 4 * (i as u32 * width + k as u32));
    let base = N - 8;
    assert_eq!(at(base, 0), 0x3c00 | (0x4170 << 16)); // exp(0) = 1, exp(1) rounds to 2.719
    assert_eq!(at(base, 5) & 0xffff, 0x3800); // sigm(0) = 0.5
    assert_eq!(f32::from_bits(at(base, 8)), 0.25); // 1/4
    assert_eq!(f32::from_bits(at(base, 9)), 0.5); // 1/sqrt(4)
    assert_eq!(f32::from_bits(at(base + 1, 10)), 3.0); // sqrt(9)
    assert_eq!(at(base + 1, 3) >> 16, 0x4200); // log2(8) = 3
    assert_eq!(at(base + 1, 1) & 0xffff, 0x4800); // 2^3 = 8
    assert!(f16::from_bits(at(base + 2, 2) as u16).is_nan()); // ln(-1)
    assert_eq!(at(base + 2, 2) >> 16, 0xfc00); // ln(0) = -inf
    assert_eq!(f32::from_bits(at(base + 2, 8)), f32::INFINITY); // 1/0
    assert_eq!(at(base + 3, 0) & 0xffff, 0x7c00); // exp(12) = 162755 overflows f16
    assert!(f32::from_bits(at(base + 3, 7)).is_nan()); // f32ln(-1)
    assert_eq!(at(base + 4, 0) & 0xffff, 0); // exp(-20) = 2e-9 underflows f16
}
