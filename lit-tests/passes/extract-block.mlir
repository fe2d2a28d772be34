// extract-block cuts one block of an encoder layer out of a model into its
// own function, finding it through the ONNX node scopes in op locations.
// Inputs/two-layer-encoder.mlir is a fused two-layer encoder with the
// legacy exporter's node names.

// RUN: ipu-opt %S/Inputs/two-layer-encoder.mlir --extract-block=block=mlp:1 | filecheck %s --check-prefix=MLP
// RUN: ipu-opt %S/Inputs/two-layer-encoder.mlir --pass-pipeline='builtin.module(extract-block{block=attention:0})' | filecheck %s --check-prefix=ATTN
// RUN: ipu-opt %S/Inputs/two-layer-encoder.mlir --extract-block=block=layer:0 | filecheck %s --check-prefix=LAYER
// RUN: ipu-opt %S/Inputs/two-layer-encoder.mlir --extract mlp:0 | filecheck %s --check-prefix=FUSED
// RUN: ipu-run %S/Inputs/two-layer-encoder.mlir --device reference --extract layer:1 | filecheck %s --check-prefix=EXEC
// RUN: not ipu-opt %S/Inputs/two-layer-encoder.mlir --extract-block=block=ffn:1 2>&1 | filecheck %s --check-prefix=BADKIND
// RUN: not ipu-opt %S/Inputs/two-layer-encoder.mlir --extract mlp 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not ipu-opt %S/Inputs/two-layer-encoder.mlir --extract-block=block=mlp:2 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not ipu-run %S/Inputs/two-layer-encoder.mlir --device reference --extract attention:7 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not ipu-opt %s --extract-block=block=mlp:0 2>&1 | filecheck %s --check-prefix=NOSCOPE
// RUN: not ipu-opt %S/Inputs/post-norm-layer.mlir --extract-block=block=mlp:0 2>&1 | filecheck %s --check-prefix=NONORM
// RUN: not ipu-opt %S/Inputs/post-norm-layer.mlir --extract-block=block=attention:0 2>&1 | filecheck %s --check-prefix=NOSCOPE-ATTN
// RUN: ipu-opt %S/Inputs/post-norm-layer.mlir --extract-block=block=layer:0 | filecheck %s --check-prefix=POSTNORM-LAYER
// RUN: not ipu-opt %S/Inputs/straddling-layers.mlir --extract-block=block=layer:1 2>&1 | filecheck %s --check-prefix=STRADDLE

// The MLP of layer 1: its LayerNorm, fc1, GELU, fc2 and the residual add of
// the LayerNorm's input, which becomes the function's one argument. The
// GELU's location also names a (CSE-shared) constant node of layer 0, which
// must not pull it into layer 0. Weights are cloned in as constants.
// MLP-LABEL: func.func @layer1_mlp(%arg0: tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
// MLP:      %[[LN:.*]] = nn.layer_normalization %arg0,
// MLP:      %[[W1:.*]] = nn.constant dense<5.000000e-01> : tensor<4x8xf32>
// MLP:      %[[FC1:.*]] = nn.linear %[[LN]], %[[W1]]
// MLP-NEXT: %[[G:.*]] = nn.gelu %[[FC1]]
// MLP-NEXT: %[[W2:.*]] = nn.constant dense<-2.500000e-01> : tensor<8x4xf32>
// MLP-NEXT: %[[FC2:.*]] = nn.linear %[[G]], %[[W2]]
// MLP-NEXT: %[[R:.*]] = nn.add %arg0, %[[FC2]]
// MLP-NEXT: return %[[R]] : tensor<1x2x4xf32>
// MLP-NOT:  func.func

// The attention block of layer 0: the embedding add before it stays out.
// ATTN-LABEL: func.func @layer0_attention(%arg0: tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
// ATTN-NOT:  nn.add %arg0, %arg0
// ATTN:      nn.layer_normalization %arg0,
// ATTN:      nn.split
// ATTN-NEXT: nn.attention
// ATTN:      %[[O:.*]] = nn.linear
// ATTN-NEXT: %[[R:.*]] = nn.add %arg0, %[[O]]
// ATTN-NEXT: return %[[R]]

// The whole layer: both residual adds, nothing of layer 1 or the embedding.
// LAYER-LABEL: func.func @layer0(%arg0: tensor<1x2x4xf32>)
// LAYER:     nn.layer_normalization %arg0
// LAYER:     nn.attention
// LAYER:     %[[R1:.*]] = nn.add %arg0,
// LAYER-NEXT: nn.layer_normalization %[[R1]]
// LAYER:     nn.gelu
// LAYER:     %[[R:.*]] = nn.add %[[R1]],
// LAYER-NEXT: return %[[R]]
// LAYER-NOT: nn.layer_normalization

// --extract fuses first (eqsat-fuse, canonicalize): the block is already
// fused here, so the same five ops come out.
// FUSED-LABEL: func.func @layer0_mlp
// FUSED: nn.layer_normalization
// FUSED: nn.linear
// FUSED: nn.gelu
// FUSED: nn.linear
// FUSED: nn.add %arg0
// FUSED: return

// ipu-run runs the extracted layer on a synthesized input (fused, and
// the MLP's LayerNorm folded into fc1, as --extract does: its ones and
// zeros are two more constants; the attention's QKV product has no bias
// to take its LayerNorm's shift, so that one stays).
// EXEC: model {{.*}}two-layer-encoder.mlir (@layer1)
// EXEC: run {{.*}}(20 ops,
// EXEC: output_0 [1, 2, 4] f32

// BADKIND: unknown block kind 'ffn' in 'ffn:1' (kinds: mlp, attention, layer, head)
// SYNTAX: block 'mlp' must be KIND:LAYER, e.g. mlp:3, or head (kinds: mlp, attention, layer, head)
// RANGE: two-layer-encoder.mlir:5:1: error: cannot extract {{.*}}: layer {{[27]}} is out of range, the model has 2 encoder layers (0..=1)
// NOSCOPE: error: cannot extract mlp:0: no op location names an encoder layer
// A residual block needs its LayerNorm; the whole layer needs none.
// NONORM: error: cannot extract mlp:0: the 'mlp' scope of layer 0 is not fed by a LayerNormalization of that layer
// NOSCOPE-ATTN: error: cannot extract attention:0: layer 0 has no op in a 'self_attn' scope (its scopes: mlp)
// POSTNORM-LAYER-LABEL: func.func @layer0(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32>
// POSTNORM-LAYER: nn.add %arg0,
// STRADDLE: '/model/encoder/layers.0/Add_1': error: 'nn.add' op cannot extract layer:1: this op belongs to layers 0 and 1 at once

// A function without ONNX node scopes in its locations.
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = nn.gelu %x : tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
