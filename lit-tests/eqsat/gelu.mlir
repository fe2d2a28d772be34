// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse))' | filecheck %s

// The legacy exporter's tanh form: 6 Mul + 2 Add + Tanh, x^3 as x*(x*x).
// CHECK-LABEL: func.func @gelu_tanh_legacy
// CHECK-NEXT: %[[G:.*]] = nn.gelu %arg0 {approximate = "tanh"} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_legacy(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = nn.constant dense<0.5> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %k = nn.constant dense<0.044715> : tensor<f32>
  %c = nn.constant dense<0.7978845608> : tensor<f32>
  %2 = nn.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = nn.mul %x, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = nn.mul %k, %3 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = nn.add %x, %4 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %6 = nn.mul %c, %5 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %7 = nn.tanh %6 : tensor<4x8xf32> -> tensor<4x8xf32>
  %8 = nn.add %one, %7 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %9 = nn.mul %x, %8 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %10 = nn.mul %h, %9 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %10 : tensor<4x8xf32>
}

// The dynamo exporter's form: Pow(x, 3), the product as (x * 0.5) * (...),
// constants on the right.
// CHECK-LABEL: func.func @gelu_tanh_dynamo
// CHECK-NEXT: %[[G:.*]] = nn.gelu %arg0 {approximate = "tanh"}
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_dynamo(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = nn.constant dense<0.5> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %k = nn.constant dense<0.044715> : tensor<f32>
  %c = nn.constant dense<0.7978845608> : tensor<f32>
  %three = nn.constant dense<3.0> : tensor<f32>
  %1 = nn.pow %x, %three : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %2 = nn.mul %1, %k : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %3 = nn.add %x, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = nn.mul %3, %c : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %5 = nn.tanh %4 : tensor<4x8xf32> -> tensor<4x8xf32>
  %6 = nn.add %5, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %7 = nn.mul %x, %h : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %8 = nn.mul %7, %6 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %8 : tensor<4x8xf32>
}

// The exact form, with x / sqrt(2) and 0.5 * (1 + erf) * x.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-NEXT: %[[G:.*]] = nn.gelu %arg0 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = nn.constant dense<0.5> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %s = nn.constant dense<1.41421354> : tensor<f32>
  %1 = nn.div %x, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %2 = nn.erf %1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = nn.add %2, %one : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %4 = nn.mul %h, %3 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = nn.mul %4, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}

// A model converted to f16 (`--precision fp16` before the pipeline): its
// constants are GELU's rounded to f16, 0.044715 to 0.0447083 (1.5e-4 away,
// past the 1e-4 an f32 exporter's constants are held to), so the rules
// accept the constant's own type's rounding of each.
// CHECK-LABEL: func.func @gelu_tanh_f16
// CHECK-NEXT: %[[G:.*]] = nn.gelu %arg0 {approximate = "tanh"} : tensor<4x8xf16> -> tensor<4x8xf16>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %h = nn.constant dense<0.5> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %k = nn.constant dense<0.044715> : tensor<f16>
  %c = nn.constant dense<0.7978845608> : tensor<f16>
  %2 = nn.mul %x, %x : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %3 = nn.mul %x, %2 : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %4 = nn.mul %k, %3 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %5 = nn.add %x, %4 : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %6 = nn.mul %c, %5 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %7 = nn.tanh %6 : tensor<4x8xf16> -> tensor<4x8xf16>
  %8 = nn.add %one, %7 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %9 = nn.mul %x, %8 : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %10 = nn.mul %h, %9 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return %10 : tensor<4x8xf16>
}

// Negative: in f16, 0.0448 is three f16 steps (of 3.05e-5) above
// 0.044715's rounding, not GELU's constant.
// CHECK-LABEL: func.func @gelu_tanh_f16_next_value
// CHECK-NOT: nn.gelu
// CHECK: nn.tanh
// CHECK: return
func.func @gelu_tanh_f16_next_value(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %h = nn.constant dense<0.5> : tensor<f16>
  %one = nn.constant dense<1.0> : tensor<f16>
  %k = nn.constant dense<0.0448> : tensor<f16>
  %c = nn.constant dense<0.7978845608> : tensor<f16>
  %2 = nn.mul %x, %x : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %3 = nn.mul %x, %2 : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %4 = nn.mul %k, %3 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %5 = nn.add %x, %4 : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %6 = nn.mul %c, %5 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %7 = nn.tanh %6 : tensor<4x8xf16> -> tensor<4x8xf16>
  %8 = nn.add %one, %7 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %9 = nn.mul %x, %8 : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  %10 = nn.mul %h, %9 : tensor<f16>, tensor<4x8xf16> -> tensor<4x8xf16>
  return %10 : tensor<4x8xf16>
}

// Negative: 0.05 is not GELU's 0.044715.
// CHECK-LABEL: func.func @gelu_wrong_constant
// CHECK-NOT: nn.gelu
// CHECK: nn.tanh
// CHECK: return
func.func @gelu_wrong_constant(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = nn.constant dense<0.5> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %k = nn.constant dense<0.05> : tensor<f32>
  %c = nn.constant dense<0.7978845608> : tensor<f32>
  %2 = nn.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = nn.mul %x, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = nn.mul %k, %3 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = nn.add %x, %4 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %6 = nn.mul %c, %5 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %7 = nn.tanh %6 : tensor<4x8xf32> -> tensor<4x8xf32>
  %8 = nn.add %one, %7 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %9 = nn.mul %x, %8 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %10 = nn.mul %h, %9 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %10 : tensor<4x8xf32>
}

// Negative: with the gelu group off nothing is recognised.
// RUN: ipu-opt %s --pass-pipeline='builtin.module(func.func(eqsat-fuse{rules=algebra}))' | filecheck %s --check-prefix=OFF
// OFF-NOT: nn.gelu
