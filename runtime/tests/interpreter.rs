//! The `nn` interpreter on hand-written IR, one test per op family, against
//! values computed here (plain loops and float64 formulas), plus its error
//! messages and memory behaviour.

use std::sync::Arc;

use ipuc_ir::numeric::ElementKind;
use ipuc_ir::{parse_source, verify, Context};
use ipuc_runtime::reference::interpreter::{self, InterpretError, RunStats};
use ipuc_runtime::reference::{self as k, HostTensor, Values};

/// Parses and verifies `src`, then runs its entry function on `inputs`.
fn run_stats(
    src: &str,
    inputs: &[HostTensor],
) -> Result<(Vec<HostTensor>, RunStats), InterpretError> {
    let mut ctx = Context::new(ipuc_dialects::registry());
    ctx.allow_unregistered = true;
    let parsed = parse_source(&mut ctx, "test.mlir", src).unwrap_or_else(|d| panic!("{d}"));
    verify(&ctx, parsed.module).unwrap_or_else(|d| panic!("{d:?}"));
    let f = interpreter::entry_function(&ctx, parsed.module)?;
    interpreter::run_function_with_stats(&ctx, f, inputs)
}

fn run(src: &str, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, InterpretError> {
    run_stats(src, inputs).map(|(out, _)| out)
}

fn f32s(shape: &[usize], v: &[f32]) -> HostTensor {
    HostTensor::from_f32(shape.to_vec(), v)
}

fn iota(shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
    f32s(shape, &v)
}

/// Checks shape and values within `atol + rtol·|want|`.
fn check(got: &HostTensor, shape: &[usize], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.shape, shape, "shape");
    let g = got.to_f64_vec();
    assert_eq!(g.len(), want.len());
    for (i, (a, b)) in g.iter().zip(want).enumerate() {
        let ok = (a.is_nan() && b.is_nan()) || (a - b).abs() <= atol + rtol * b.abs();
        assert!(ok, "element {i}: got {a}, want {b} (all: {g:?})");
    }
}

fn exact(got: &HostTensor, shape: &[usize], want: &[f64]) {
    check(got, shape, want, 0.0, 0.0)
}

/// Rounds an f64 to f32 and back: what an f32 kernel with one rounding gives.
fn r32(v: f64) -> f64 {
    v as f32 as f64
}

#[test]
fn float_binary_ops_broadcast_and_round_once() {
    let src = r#"
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = nn.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %1 = nn.sub %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %2 = nn.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %3 = nn.div %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %4 = nn.mod %a, %b {fmod = 1 : i64} : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %5 = nn.pow %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %6 = nn.max %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %7 = nn.min %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
"#;
    let a = [0.5f32, 7.25, 3.0, 0.1, 9.0, 2.5];
    let b = [1.5f32, 2.0, 0.3];
    let out = run(src, &[f32s(&[2, 3], &a), f32s(&[3], &b)]).unwrap();
    let want = |f: fn(f64, f64) -> f64| -> Vec<f64> {
        (0..6)
            .map(|i| r32(f(f64::from(a[i]), f64::from(b[i % 3]))))
            .collect()
    };
    exact(&out[0], &[2, 3], &want(|x, y| x + y));
    exact(&out[1], &[2, 3], &want(|x, y| x - y));
    exact(&out[2], &[2, 3], &want(|x, y| x * y));
    exact(&out[3], &[2, 3], &want(|x, y| x / y));
    // fmod is exact in any precision.
    exact(&out[4], &[2, 3], &want(|x, y| x % y));
    check(&out[5], &[2, 3], &want(f64::powf), 0.0, 2e-7);
    exact(&out[6], &[2, 3], &want(f64::max));
    exact(&out[7], &[2, 3], &want(f64::min));
}

#[test]
fn integer_ops_are_exact_and_comparisons_select() {
    let src = r#"
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %x: tensor<4xi8>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi8>, tensor<4xi8>, tensor<4xi32>) {
  %0 = nn.div %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %1 = nn.mod %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %2 = nn.mod %a, %b {fmod = 1 : i64} : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %3 = nn.neg %x : tensor<4xi8> -> tensor<4xi8>
  %4 = nn.abs %x : tensor<4xi8> -> tensor<4xi8>
  %5 = nn.less %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
  %6 = nn.equal %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
  %7 = nn.greater %a, %b : tensor<4xi32>, tensor<4xi32> -> tensor<4xi1>
  %8 = nn.where %5, %a, %b : tensor<4xi1>, tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %9 = nn.where %6, %a, %8 : tensor<4xi1>, tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %10 = nn.where %7, %b, %9 : tensor<4xi1>, tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return %0, %1, %2, %3, %4, %10 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi8>, tensor<4xi8>, tensor<4xi32>
}
"#;
    let i32s = |v: &[i64]| {
        HostTensor::from_values(
            ElementKind::I32,
            vec![v.len()],
            Values::Int(v.iter().map(|&x| i128::from(x)).collect()),
        )
    };
    let x = HostTensor::from_values(
        ElementKind::I8,
        vec![4],
        Values::Int(vec![-128, -5, 0, 127]),
    );
    let out = run(src, &[i32s(&[-7, 7, 9, 4]), i32s(&[2, -2, 9, 5]), x]).unwrap();
    assert_eq!(out[0].kind, ElementKind::I32);
    assert_eq!(out[0].to_i64_vec(), [-3, -3, 1, 0]);
    // Python-style mod takes the divisor's sign, fmod the dividend's.
    assert_eq!(out[1].to_i64_vec(), [1, -1, 0, 4]);
    assert_eq!(out[2].to_i64_vec(), [-1, 1, 0, 4]);
    // i8 negation and abs wrap at -128.
    assert_eq!(out[3].to_i64_vec(), [-128, 5, 0, -127]);
    assert_eq!(out[4].to_i64_vec(), [-128, 5, 0, 127]);
    // min(a, b) built from the comparisons and selects.
    assert_eq!(out[5].to_i64_vec(), [-7, -2, 9, 4]);
}

#[test]
fn unary_ops_match_float64_formulas() {
    let src = r#"
func.func @main(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %0 = nn.sqrt %x : tensor<5xf32> -> tensor<5xf32>
  %1 = nn.reciprocal %x : tensor<5xf32> -> tensor<5xf32>
  %2 = nn.exp %x : tensor<5xf32> -> tensor<5xf32>
  %3 = nn.log %x : tensor<5xf32> -> tensor<5xf32>
  %4 = nn.tanh %x : tensor<5xf32> -> tensor<5xf32>
  %5 = nn.erf %x : tensor<5xf32> -> tensor<5xf32>
  %6 = nn.neg %x : tensor<5xf32> -> tensor<5xf32>
  %7 = nn.abs %6 : tensor<5xf32> -> tensor<5xf32>
  %8 = nn.relu %6 : tensor<5xf32> -> tensor<5xf32>
  %9 = nn.sigmoid %6 : tensor<5xf32> -> tensor<5xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
}
"#;
    let xs = [0.25f32, 1.0, 2.0, 3.5, 10.0];
    let out = run(src, &[f32s(&[5], &xs)]).unwrap();
    let formulas: [fn(f64) -> f64; 10] = [
        f64::sqrt,
        |v| 1.0 / v,
        f64::exp,
        f64::ln,
        f64::tanh,
        erf_series,
        |v| -v,
        f64::abs,
        |v| (-v).max(0.0),
        |v| 1.0 / (1.0 + v.exp()),
    ];
    for (i, f) in formulas.iter().enumerate() {
        let want: Vec<f64> = xs.iter().map(|&v| f(f64::from(v))).collect();
        // One f32 rounding of the exact value.
        check(&out[i], &[5], &want, 1e-30, 1.2e-7);
    }
}

/// erf by its Maclaurin series (converges for the small arguments used here),
/// independent of the libm the kernels use; erf(10) is 1 to double precision.
fn erf_series(x: f64) -> f64 {
    if x > 5.0 {
        return 1.0;
    }
    let mut term = x;
    let mut sum = x;
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

#[test]
fn narrow_float_storage_is_emulated_exactly() {
    let src = r#"
func.func @main(%a: tensor<3xf16>, %b: tensor<3xf16>, %x: tensor<4xf32>, %d: tensor<2xf64>) -> (tensor<3xf16>, tensor<4xf8E4M3FNUZ>, tensor<4xf8E4M3FNUZ>, tensor<4xf32>, tensor<2xf64>) {
  %0 = nn.add %a, %b : tensor<3xf16>, tensor<3xf16> -> tensor<3xf16>
  %1 = nn.cast %x {to = f8E4M3FNUZ} : tensor<4xf32> -> tensor<4xf8E4M3FNUZ>
  %2 = nn.cast %x {to = f8E4M3FNUZ, saturate = 0 : i64} : tensor<4xf32> -> tensor<4xf8E4M3FNUZ>
  %3 = nn.cast %1 {to = f32} : tensor<4xf8E4M3FNUZ> -> tensor<4xf32>
  %4 = nn.add %d, %d : tensor<2xf64>, tensor<2xf64> -> tensor<2xf64>
  return %0, %1, %2, %3, %4 : tensor<3xf16>, tensor<4xf8E4M3FNUZ>, tensor<4xf8E4M3FNUZ>, tensor<4xf32>, tensor<2xf64>
}
"#;
    let f16 = |v: &[f32]| k::cast(&f32s(&[v.len()], v), ElementKind::F16, true);
    let d = HostTensor::from_values(ElementKind::F64, vec![2], Values::F64(vec![0.1, 1e300]));
    let out = run(
        src,
        &[
            f16(&[2048.0, 2048.0, 1.0]),
            f16(&[1.0, 3.0, 0.000_976_562_5]),
            f32s(&[4], &[1000.0, 0.3, -1e-9, -2.0]),
            d,
        ],
    )
    .unwrap();
    // f16 spacing at 2048 is 2: 2049 ties to even (2048), 2051 rounds to 2052;
    // 1 + 2^-10 is exact.
    assert_eq!(out[0].kind, ElementKind::F16);
    exact(&out[0], &[3], &[2048.0, 2052.0, 1.000_976_562_5]);
    // F143: 1000 saturates to 240 (or NaN without saturation), 0.3 rounds to
    // 1.25·2^-2, -1e-9 underflows to +0 (no negative zero).
    assert_eq!(out[1].kind, ElementKind::F8E4M3FNUZ);
    exact(&out[1], &[4], &[240.0, 0.3125, 0.0, -2.0]);
    exact(&out[2], &[4], &[f64::NAN, 0.3125, 0.0, -2.0]);
    exact(&out[3], &[4], &[240.0, 0.3125, 0.0, -2.0]);
    // f64 stays f64 (0.2 is not 0.1f32 + 0.1f32; 2e300 overflows f32).
    exact(&out[4], &[2], &[0.2, 2e300]);
}

fn matmul_f64(a: &[f64], b: &[f64], m: usize, kk: usize, n: usize) -> Vec<f64> {
    (0..m * n)
        .map(|i| {
            (0..kk)
                .map(|l| a[(i / n) * kk + l] * b[l * n + i % n])
                .sum()
        })
        .collect()
}

#[test]
fn contractions_match_loops() {
    let src = r#"
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>, %x: tensor<2x2x3xf32>, %g: tensor<3xf32>) -> (tensor<2x4xf32>, tensor<3x3xf32>, tensor<2x2x4xf32>) {
  %0 = nn.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %1 = nn.gemm %b, %b, %g {alpha = 0.5 : f32, beta = 2.0 : f32, transB = 1 : i64} : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32> -> tensor<3x3xf32>
  %2 = nn.linear %x, %b, %c : tensor<2x2x3xf32>, tensor<3x4xf32>, tensor<4xf32> -> tensor<2x2x4xf32>
  return %0, %1, %2 : tensor<2x4xf32>, tensor<3x3xf32>, tensor<2x2x4xf32>
}
"#;
    let a: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect();
    let b: Vec<f32> = (0..12).map(|i| (i as f32 - 5.0) * 0.25).collect();
    let c = [1.0f32, -1.0, 0.5, 2.0];
    let x: Vec<f32> = (0..12).map(|i| (i % 5) as f32 - 2.0).collect();
    let g = [0.25f32, -0.5, 3.0];
    let out = run(
        src,
        &[
            f32s(&[2, 3], &a),
            f32s(&[3, 4], &b),
            f32s(&[4], &c),
            f32s(&[2, 2, 3], &x),
            f32s(&[3], &g),
        ],
    )
    .unwrap();
    let w = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    let (a, b, c, x, g) = (w(&a), w(&b), w(&c), w(&x), w(&g));
    check(&out[0], &[2, 4], &matmul_f64(&a, &b, 2, 3, 4), 1e-6, 1e-6);
    // gemm: 0.5 · B·Bᵀ + 2 · g, g broadcast along rows.
    let bt: Vec<f64> = (0..12).map(|i| b[(i % 3) * 4 + i / 3]).collect();
    let gemm: Vec<f64> = matmul_f64(&b, &bt, 3, 4, 3)
        .iter()
        .enumerate()
        .map(|(i, v)| 0.5 * v + 2.0 * g[i % 3])
        .collect();
    check(&out[1], &[3, 3], &gemm, 1e-6, 1e-6);
    let linear: Vec<f64> = matmul_f64(&x, &b, 4, 3, 4)
        .iter()
        .enumerate()
        .map(|(i, v)| v + c[i % 4])
        .collect();
    check(&out[2], &[2, 2, 4], &linear, 1e-6, 1e-6);
}

#[test]
fn conv2d_matches_direct_loops() {
    let src = r#"
func.func @main(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x2x2xf32>, %b: tensor<3xf32>) -> tensor<1x3x3x2xf32> {
  %0 = nn.conv2d %x, %w, %b {strides = array<i64: 2, 3>, pads = array<i64: 1, 0, 0, 1>} : tensor<1x2x5x5xf32>, tensor<3x2x2x2xf32>, tensor<3xf32> -> tensor<1x3x3x2xf32>
  return %0 : tensor<1x3x3x2xf32>
}
"#;
    let x: Vec<f32> = (0..50).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let w: Vec<f32> = (0..24).map(|i| ((i * 5) % 7) as f32 * 0.5 - 1.5).collect();
    let b = [0.5f32, -1.0, 2.0];
    let out = run(
        src,
        &[
            f32s(&[1, 2, 5, 5], &x),
            f32s(&[3, 2, 2, 2], &w),
            f32s(&[3], &b),
        ],
    )
    .unwrap();
    // Padded rows: top 1, bottom 0; columns: left 0, right 1.
    let at = |c: usize, y: i64, xx: i64| -> f64 {
        if (0..5).contains(&y) && (0..5).contains(&xx) {
            f64::from(x[c * 25 + y as usize * 5 + xx as usize])
        } else {
            0.0
        }
    };
    let mut want = Vec::new();
    for m in 0..3 {
        for oy in 0..3i64 {
            for ox in 0..2i64 {
                let mut acc = f64::from(b[m]);
                for c in 0..2 {
                    for ky in 0..2i64 {
                        for kx in 0..2i64 {
                            let wv =
                                f64::from(w[((m * 2 + c) * 2 + ky as usize) * 2 + kx as usize]);
                            acc += wv * at(c, oy * 2 + ky - 1, ox * 3 + kx);
                        }
                    }
                }
                want.push(acc);
            }
        }
    }
    check(&out[0], &[1, 3, 3, 2], &want, 1e-6, 1e-6);
}

#[test]
fn shape_ops_move_elements_as_onnx_does() {
    let src = r#"
func.func @main(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<3x2xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x2x2xf32>, tensor<2x4xf32>, tensor<3x2xf32>, tensor<2x4xf32>) {
  %0 = nn.reshape %x {shape = array<i64: 3, 2>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = nn.transpose %0 {perm = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  %2 = nn.concat %1, %x {axis = -1 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  %3:3 = nn.split %2 {axis = 1 : i64, sizes = array<i64: 1, 2, 3>} : tensor<2x6xf32> -> (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x3xf32>)
  %4 = nn.slice %3#2 {starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, axes = array<i64: 1>, steps = array<i64: -1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %5 = nn.gather %4, %i {axis = 1 : i64} : tensor<2x3xf32>, tensor<4xi64> -> tensor<2x4xf32>
  %6 = nn.unsqueeze %5 {axes = array<i64: 0, -1>} : tensor<2x4xf32> -> tensor<1x2x4x1xf32>
  %7 = nn.squeeze %6 : tensor<1x2x4x1xf32> -> tensor<2x4xf32>
  %8 = nn.flatten %6 {axis = 2 : i64} : tensor<1x2x4x1xf32> -> tensor<2x4xf32>
  %9 = nn.expand %3#0 {shape = array<i64: 3, 2, 2>} : tensor<2x1xf32> -> tensor<3x2x2xf32>
  %10 = nn.tile %3#1 {repeats = array<i64: 1, 2>} : tensor<2x2xf32> -> tensor<2x4xf32>
  %11 = nn.pad %3#0 {pads = array<i64: 0, 0, 1, 1>, value = -1.0 : f32} : tensor<2x1xf32> -> tensor<3x2xf32>
  %12 = nn.identity %0 : tensor<3x2xf32> -> tensor<3x2xf32>
  return %12, %2, %4, %7, %8, %9, %10, %11, %5 : tensor<3x2xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<3x2x2xf32>, tensor<2x4xf32>, tensor<3x2xf32>, tensor<2x4xf32>
}
"#;
    let out = run(
        src,
        &[iota(&[2, 3]), HostTensor::from_i64(vec![4], &[0, -1, 2, 1])],
    )
    .unwrap();
    exact(&out[0], &[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    exact(
        &out[1],
        &[2, 6],
        &[0.0, 2.0, 4.0, 0.0, 1.0, 2.0, 1.0, 3.0, 5.0, 3.0, 4.0, 5.0],
    );
    exact(&out[2], &[2, 3], &[2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
    let gathered = [2.0, 0.0, 0.0, 1.0, 5.0, 3.0, 3.0, 4.0];
    exact(&out[3], &[2, 4], &gathered);
    exact(&out[4], &[2, 4], &gathered);
    exact(&out[8], &[2, 4], &gathered);
    exact(
        &out[5],
        &[3, 2, 2],
        &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
    );
    exact(&out[6], &[2, 4], &[2.0, 4.0, 2.0, 4.0, 3.0, 5.0, 3.0, 5.0]);
    exact(&out[7], &[3, 2], &[0.0, -1.0, 1.0, -1.0, -1.0, -1.0]);
    // Reshape, squeeze, unsqueeze and flatten share the input's bytes.
    assert!(Arc::ptr_eq(&out[3].data, &out[4].data));
}

#[test]
fn reductions_follow_onnx_axes_and_keepdims() {
    let src = r#"
func.func @main(%x: tensor<2x3x4xf32>, %n: tensor<2x3xi64>) -> (tensor<2x1x4xf32>, tensor<f32>, tensor<3xf32>, tensor<2xi64>) {
  %0 = nn.reduce_mean %x {axes = array<i64: 1>} : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %1 = nn.reduce_sum %x {keepdims = 0 : i64} : tensor<2x3x4xf32> -> tensor<f32>
  %2 = nn.reduce_max %x {axes = array<i64: 0, -1>, keepdims = 0 : i64} : tensor<2x3x4xf32> -> tensor<3xf32>
  %3 = nn.reduce_sum %n {axes = array<i64: 1>, keepdims = 0 : i64} : tensor<2x3xi64> -> tensor<2xi64>
  return %0, %1, %2, %3 : tensor<2x1x4xf32>, tensor<f32>, tensor<3xf32>, tensor<2xi64>
}
"#;
    let big = 1i64 << 60;
    let out = run(
        src,
        &[
            iota(&[2, 3, 4]),
            HostTensor::from_i64(vec![2, 3], &[big, big, -big, 1, 2, 3]),
        ],
    )
    .unwrap();
    exact(
        &out[0],
        &[2, 1, 4],
        &[4.0, 5.0, 6.0, 7.0, 16.0, 17.0, 18.0, 19.0],
    );
    exact(&out[1], &[], &[276.0]);
    exact(&out[2], &[3], &[15.0, 19.0, 23.0]);
    // Exact integer sums (2^60 is beyond f64's exact integers once summed with 1).
    assert_eq!(out[3].to_i64_vec(), [big, 6]);
}

#[test]
fn normalizations_and_gelu_match_float64_formulas() {
    let src = r#"
func.func @main(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = nn.softmax %x : tensor<2x4xf32> -> tensor<2x4xf32>
  %1 = nn.layer_normalization %x, %s, %b {epsilon = 1.0e-3 : f32} : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %2 = nn.gelu %x : tensor<2x4xf32> -> tensor<2x4xf32>
  %3 = nn.gelu %x {approximate = "tanh"} : tensor<2x4xf32> -> tensor<2x4xf32>
  return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
"#;
    let x = [1.0f32, 2.0, -0.5, 0.0, 3.0, -3.0, 0.25, 4.0];
    let s = [1.0f32, 0.5, 2.0, -1.0];
    let b = [0.0f32, 0.1, -0.2, 0.3];
    let out = run(src, &[f32s(&[2, 4], &x), f32s(&[4], &s), f32s(&[4], &b)]).unwrap();
    let x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let mut softmax = Vec::new();
    let mut layer_norm = Vec::new();
    for row in x.chunks(4) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        softmax.extend(row.iter().map(|v| (v - max).exp() / sum));
        let mean = row.iter().sum::<f64>() / 4.0;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 4.0;
        layer_norm.extend(row.iter().enumerate().map(|(j, v)| {
            (v - mean) / (var + 1e-3f32 as f64).sqrt() * f64::from(s[j]) + f64::from(b[j])
        }));
    }
    check(&out[0], &[2, 4], &softmax, 1e-7, 1e-6);
    check(&out[1], &[2, 4], &layer_norm, 1e-6, 1e-6);
    let gelu: Vec<f64> = x
        .iter()
        .map(|&v| 0.5 * v * (1.0 + erf_series(v / std::f64::consts::SQRT_2)))
        .collect();
    check(&out[2], &[2, 4], &gelu, 1e-7, 1e-6);
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let gelu_tanh: Vec<f64> = x
        .iter()
        .map(|&v| 0.5 * v * (1.0 + (c * (v + 0.044715 * v.powi(3))).tanh()))
        .collect();
    check(&out[3], &[2, 4], &gelu_tanh, 1e-7, 1e-6);
}

#[test]
fn attention_reads_heads_scale_default_and_mask() {
    let src = r#"
func.func @main(%q: tensor<1x3x8xf32>, %k: tensor<1x5x8xf32>, %v: tensor<1x5x4xf32>, %m: tensor<1x1x3x5xf32>) -> (tensor<1x3x4xf32>, tensor<1x3x4xf32>) {
  %0 = nn.attention %q, %k, %v {heads = 2 : i64} : tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x4xf32> -> tensor<1x3x4xf32>
  %1 = nn.attention %q, %k, %v, %m {heads = 2 : i64, scale = 0.3 : f32} : tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x4xf32>, tensor<1x1x3x5xf32> -> tensor<1x3x4xf32>
  return %0, %1 : tensor<1x3x4xf32>, tensor<1x3x4xf32>
}
"#;
    let vals = |n: usize, s: f32| {
        (0..n)
            .map(|i| ((i * 37 % 17) as f32 - 8.0) * s)
            .collect::<Vec<_>>()
    };
    let (q, kk, v, m) = (
        f32s(&[1, 3, 8], &vals(24, 0.1)),
        f32s(&[1, 5, 8], &vals(40, 0.07)),
        f32s(&[1, 5, 4], &vals(20, 0.2)),
        f32s(&[1, 1, 3, 5], &vals(15, 0.5)),
    );
    let out = run(src, &[q.clone(), kk.clone(), v.clone(), m.clone()]).unwrap();
    // The kernel is checked against float64 in fused_kernels.rs; here the
    // interpreter must pass heads, the default scale 1/sqrt(head_dim) and the mask.
    let default = k::attention(&q, &kk, &v, None, 2, 0.5).unwrap();
    assert_eq!(out[0], default);
    let masked = k::attention(&q, &kk, &v, Some(&m), 2, 0.3).unwrap();
    assert_eq!(out[1], masked);
    assert_ne!(out[0], out[1]);
}

#[test]
fn constants_share_their_bytes() {
    let src = r#"
func.func @main() -> (tensor<3xf32>, tensor<2x2xi8>, tensor<2xf32>, tensor<2xf32>) {
  %0 = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %1 = nn.constant dense<7> : tensor<2x2xi8>
  %2 = nn.constant dense_resource<w0> : tensor<2xf32>
  %3 = nn.add %2, %2 : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0, %1, %2, %3 : tensor<3xf32>, tensor<2x2xi8>, tensor<2xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w0: "0x040000000000803F00000040"
    }
  }
#-}
"#;
    let mut ctx = Context::new(ipuc_dialects::registry());
    let parsed = parse_source(&mut ctx, "c.mlir", src).unwrap();
    let f = interpreter::entry_function(&ctx, parsed.module).unwrap();
    let out = interpreter::run_function(&ctx, f, &[]).unwrap();
    exact(&out[0], &[3], &[1.0, 2.0, 3.0]);
    assert_eq!(out[1].kind, ElementKind::I8);
    assert_eq!(out[1].to_i64_vec(), [7, 7, 7, 7]);
    exact(&out[2], &[2], &[1.0, 2.0]);
    exact(&out[3], &[2], &[2.0, 4.0]);
    // The weight tensor is the resource blob itself, not a copy.
    let blob = ctx
        .resources()
        .get("w0")
        .unwrap()
        .blob()
        .unwrap()
        .data
        .clone();
    assert!(Arc::ptr_eq(&out[2].data, &blob));
}

#[test]
fn intermediates_are_freed_after_their_last_use() {
    // A chain of eight 1 MiB tensors: only the input, the previous and the
    // current one may be alive at once.
    let mut body = String::new();
    let ty = "tensor<256x1024xf32>";
    let mut prev = "%x".to_string();
    for i in 0..8 {
        body.push_str(&format!(
            "  %{i} = nn.add {prev}, {prev} : {ty}, {ty} -> {ty}\n"
        ));
        prev = format!("%{i}");
    }
    let src = format!("func.func @main(%x: {ty}) -> {ty} {{\n{body}  return {prev} : {ty}\n}}\n");
    let x = HostTensor::from_f32(vec![256, 1024], &vec![1.0; 256 * 1024]);
    let (out, stats) = run_stats(&src, &[x]).unwrap();
    exact(&out[0], &[256, 1024], &vec![256.0; 256 * 1024]);
    assert_eq!(stats.ops, 8);
    let mib = 1 << 20;
    assert_eq!(stats.peak_live_bytes, 2 * mib, "{stats:?}");
}

#[test]
fn errors_name_the_op_its_location_and_the_problem() {
    let src = r#"
func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
  %0 = nn.div %a, %b : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32> loc("Div_7"("model.onnx":0:0))
  return %0 : tensor<2xi32>
}
"#;
    let i32s =
        |v: &[i128]| HostTensor::from_values(ElementKind::I32, vec![2], Values::Int(v.to_vec()));
    let err = run(src, &[i32s(&[1, 2]), i32s(&[1, 0])])
        .unwrap_err()
        .to_string();
    assert!(err.contains("'Div_7'") && err.contains("'nn.div'"), "{err}");
    assert!(err.contains("division by zero"), "{err}");

    let src = r#"
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "test.mystery"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"#;
    let err = run(src, &[f32s(&[2], &[1.0, 2.0])])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("test.mlir:3:8: 'test.mystery' is not supported"),
        "{err}"
    );

    let err = run(src, &[]).unwrap_err().to_string();
    assert_eq!(err, "function @main takes 1 input(s), but 0 were given");
    let err = run(src, &[f32s(&[3], &[1.0, 2.0, 3.0])])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "input #0 of @main must be tensor<2xf32>, but is tensor<3xf32>"
    );
    let two = "func.func @a() {\n  return\n}\nfunc.func @b() {\n  return\n}\n";
    let err = run(two, &[]).unwrap_err().to_string();
    assert!(err.contains("several public functions (@a, @b)"), "{err}");
}

#[test]
fn fused_attention_equals_its_decomposed_form() {
    // The ONNX pattern nn.attention replaces: split heads, q·kᵀ·scale, softmax,
    // ·v, merge heads.
    let src = r#"
func.func @main(%q: tensor<1x4x6xf32>, %k: tensor<1x5x6xf32>, %v: tensor<1x5x6xf32>) -> (tensor<1x4x6xf32>, tensor<1x4x6xf32>) {
  %s = nn.constant dense<0.5> : tensor<f32>
  %q4 = nn.reshape %q {shape = array<i64: 1, 4, 2, 3>} : tensor<1x4x6xf32> -> tensor<1x4x2x3xf32>
  %qh = nn.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x3xf32> -> tensor<1x2x4x3xf32>
  %k4 = nn.reshape %k {shape = array<i64: 1, 5, 2, 3>} : tensor<1x5x6xf32> -> tensor<1x5x2x3xf32>
  %kt = nn.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x5x2x3xf32> -> tensor<1x2x3x5xf32>
  %v4 = nn.reshape %v {shape = array<i64: 1, 5, 2, 3>} : tensor<1x5x6xf32> -> tensor<1x5x2x3xf32>
  %vh = nn.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x5x2x3xf32> -> tensor<1x2x5x3xf32>
  %qk = nn.matmul %qh, %kt : tensor<1x2x4x3xf32>, tensor<1x2x3x5xf32> -> tensor<1x2x4x5xf32>
  %sc = nn.mul %qk, %s : tensor<1x2x4x5xf32>, tensor<f32> -> tensor<1x2x4x5xf32>
  %p = nn.softmax %sc {axis = -1 : i64} : tensor<1x2x4x5xf32> -> tensor<1x2x4x5xf32>
  %o = nn.matmul %p, %vh : tensor<1x2x4x5xf32>, tensor<1x2x5x3xf32> -> tensor<1x2x4x3xf32>
  %ot = nn.transpose %o {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x4x3xf32> -> tensor<1x4x2x3xf32>
  %d = nn.reshape %ot {shape = array<i64: 1, 4, 6>} : tensor<1x4x2x3xf32> -> tensor<1x4x6xf32>
  %f = nn.attention %q, %k, %v {heads = 2 : i64, scale = 0.5 : f32} : tensor<1x4x6xf32>, tensor<1x5x6xf32>, tensor<1x5x6xf32> -> tensor<1x4x6xf32>
  return %d, %f : tensor<1x4x6xf32>, tensor<1x4x6xf32>
}
"#;
    let vals = |n: usize, s: f32| {
        (0..n)
            .map(|i| ((i * 29 % 13) as f32 - 6.0) * s)
            .collect::<Vec<_>>()
    };
    let out = run(
        src,
        &[
            f32s(&[1, 4, 6], &vals(24, 0.2)),
            f32s(&[1, 5, 6], &vals(30, 0.15)),
            f32s(&[1, 5, 6], &vals(30, 0.3)),
        ],
    )
    .unwrap();
    check(&out[1], &[1, 4, 6], &out[0].to_f64_vec(), 1e-6, 1e-6);
}

/// `v` rounded to f8E4M3FNUZ as `nn.cast` with `saturate = 1` defines it,
/// written out independently of the numeric crate: 3 significand bits
/// below the leading one, subnormal quantum 2^-10, nearest with ties to
/// even, magnitudes above 240 and infinities to +-240, no -0, NaN stays NaN.
fn f8_e4m3fnuz(v: f64) -> f64 {
    if v.is_nan() {
        return f64::NAN;
    }
    if v.is_infinite() {
        return 240f64.copysign(v);
    }
    let a = v.abs();
    let exponent = if a > 0.0 {
        a.log2().floor().max(-7.0)
    } else {
        -7.0
    };
    let quantum = 2f64.powf(exponent - 3.0);
    let r = ((a / quantum).round_ties_even() * quantum).min(240.0);
    if r == 0.0 {
        0.0
    } else {
        r.copysign(v)
    }
}

/// Rounds an f64 to f16 and back.
fn r16(v: f64) -> f64 {
    half::f16::from_f64(v).to_f64()
}

#[test]
fn fp8_cast_rounds_saturates_and_keeps_nan() {
    let src = r#"
func.func @main(%x: tensor<12xf16>) -> tensor<12xf8E4M3FNUZ> {
  %0 = nn.cast %x {to = f8E4M3FNUZ} : tensor<12xf16> -> tensor<12xf8E4M3FNUZ>
  return %0 : tensor<12xf8E4M3FNUZ>
}
"#;
    let tiny = 2f32.powi(-11);
    let v = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        250.0,      // above 240: saturates
        -1000.0,    // far above: saturates
        239.0,      // rounds to 240 (steps of 16 in [128, 256))
        3.3,        // 3.25 (steps of 0.25 in [2, 4))
        -0.0,       // no -0: +0
        tiny,       // half the smallest subnormal: ties to the even zero
        -tiny,      // the same, negative: +0, not NaN
        1.5 * tiny, // nearer the smallest subnormal 2^-10
        17.0,       // tie between 16 and 18: the even code, 16
    ];
    let x = k::cast(&f32s(&[12], &v), ElementKind::F16, true);
    let out = run(src, std::slice::from_ref(&x)).unwrap();
    assert_eq!(out[0].kind, ElementKind::F8E4M3FNUZ);
    // The independent rounding agrees with the values worked out by hand
    // above, and the kernel with both.
    let want: Vec<f64> = x.to_f64_vec().into_iter().map(f8_e4m3fnuz).collect();
    let by_hand = [
        f64::NAN,
        240.0,
        -240.0,
        240.0,
        -240.0,
        240.0,
        3.25,
        0.0,
        0.0,
        0.0,
        2f64.powi(-10),
        16.0,
    ];
    for (w, h) in want.iter().zip(&by_hand) {
        assert!(w == h || (w.is_nan() && h.is_nan()), "{want:?}");
    }
    exact(&out[0], &[12], &want);
    // No code is -0's: FNUZ's 0x80 is NaN, so +0 must be 0x00.
    for i in 7..10 {
        assert_eq!(out[0].data[i], 0x00, "element {i}");
    }
}

#[test]
fn fp8_contractions_give_f16_against_float64() {
    // What `convert-precision{precision=fp8}` produces: the activation cast
    // to FP8 at scale 0, FP8 weights at scale 2^-6, an f16 bias; every
    // product comes out in f16.
    let src = r#"
func.func @main(%x: tensor<4x64xf16>, %w: tensor<64x8xf8E4M3FNUZ>, %b: tensor<8xf16>) -> (tensor<4x64xf8E4M3FNUZ>, tensor<4x8xf16>, tensor<4x8xf16>) {
  %q = nn.cast %x {to = f8E4M3FNUZ} : tensor<4x64xf16> -> tensor<4x64xf8E4M3FNUZ>
  %0 = nn.linear %q, %w, %b {rhs_scale = -6 : i64} : tensor<4x64xf8E4M3FNUZ>, tensor<64x8xf8E4M3FNUZ>, tensor<8xf16> -> tensor<4x8xf16>
  %1 = nn.matmul %q, %w {rhs_scale = -6 : i64} : tensor<4x64xf8E4M3FNUZ>, tensor<64x8xf8E4M3FNUZ> -> tensor<4x8xf16>
  return %q, %0, %1 : tensor<4x64xf8E4M3FNUZ>, tensor<4x8xf16>, tensor<4x8xf16>
}
"#;
    // Deterministic pseudo-random values: activations over a wide range (a
    // few beyond 240, some below the subnormals), weights already FP8 codes.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let x: Vec<f32> = (0..256)
        .map(|i| (next() * 2f64.powi(i % 19 - 10)) as f32)
        .collect();
    let codes: Vec<f32> = (0..512)
        .map(|_| f8_e4m3fnuz(next() * 240.0) as f32)
        .collect();
    let bias: Vec<f32> = (0..8).map(|_| (next() * 4.0) as f32).collect();
    let x16 = k::cast(&f32s(&[4, 64], &x), ElementKind::F16, true);
    let w8 = k::cast(&f32s(&[64, 8], &codes), ElementKind::F8E4M3FNUZ, true);
    let b16 = k::cast(&f32s(&[8], &bias), ElementKind::F16, true);
    // The codes are on the grid: the weight tensor holds them exactly.
    let wv: Vec<f64> = codes.iter().map(|&c| f64::from(c)).collect();
    assert_eq!(w8.to_f64_vec(), wv);
    let out = run(src, &[x16.clone(), w8, b16.clone()]).unwrap();

    let q: Vec<f64> = x16.to_f64_vec().into_iter().map(f8_e4m3fnuz).collect();
    assert!(q.iter().any(|v| v.abs() == 240.0) && q.contains(&0.0));
    exact(&out[0], &[4, 64], &q);
    let b = b16.to_f64_vec();
    let product = matmul_f64(&q, &wv, 4, 64, 8);
    let with = |scale: f64, bias: bool| -> Vec<f64> {
        product
            .iter()
            .enumerate()
            .map(|(i, p)| r16(p * scale + if bias { b[i % 8] } else { 0.0 }))
            .collect()
    };
    for t in &out[1..] {
        assert_eq!(t.kind, ElementKind::F16);
    }
    // f32 accumulation then one rounding to f16: within one f16 ulp (2^-10
    // relative) of float64 math rounded once.
    let scale = 2f64.powi(-6);
    check(&out[1], &[4, 8], &with(scale, true), 1e-6, 2f64.powi(-10));
    check(&out[2], &[4, 8], &with(scale, false), 1e-6, 2f64.powi(-10));
}
