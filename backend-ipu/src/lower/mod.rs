//! The `nn` → tile lowering: planning over the tiles ([`plan`]), exchange
//! code ([`exchange`]) and code generation into the `ipu` dialect
//! ([`codegen`]).
//!
//! This first slice lowers one matrix product with constant weights;
//! the stages it shares with the whole-model lowering (plan search, the
//! exchange timing proof, per-tile memory layout, the GEMM vertex) are the
//! ones the rest of the model builds on.

pub mod attention;
pub mod attention_block;
pub mod attention_constants;
pub mod attention_emit;
pub mod attention_exchange;
pub mod attention_layout;
pub mod batch;
pub mod bias_broadcast;
pub mod block;
pub mod block_exchange;
pub mod block_match;
pub mod block_values;
pub mod chain;
pub mod chain_loop;
pub mod codegen;
pub mod exchange;
pub mod head_tile;
pub mod ln_tiles;
pub mod mlp;
pub mod passes;
pub mod patch_embed;
pub mod plan;
pub mod pool;
pub mod pool_head;
pub mod reduce;
pub mod schedule;
pub mod squeeze;
pub mod stream;
pub mod window;
