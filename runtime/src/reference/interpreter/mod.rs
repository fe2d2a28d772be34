//! The host reference executor: runs a `func.func` whose body holds `nn` ops
//! on host tensors, op by op, with the reference kernels.
//!
//! - Every `nn` op maps onto one kernel (`ops`); the interpreter itself does
//!   no arithmetic, so it computes exactly what the kernels compute (f16, bf16
//!   and f8 storage rounded once per op, integers exact, f64 in f64, matrix
//!   products and large element-wise loops multi-threaded).
//! - Constants (`dense<...>`, `dense_resource<...>`) share the attribute's
//!   bytes; only splats are expanded.
//! - Each intermediate tensor is freed right after its last use, so peak memory
//!   is the live set of the schedule, not the sum of all tensors.
//! - Every result is checked against the op's declared type, so a kernel that
//!   disagrees with the dialect's shape inference is an error, not a silent
//!   wrong answer.
//! - Errors name the op, its location (with the ONNX node name for imported
//!   ops) and what is unsupported or wrong.
//!
//! ```
//! use ipuc_ir::{parse_source, Context};
//! use ipuc_runtime::reference::{interpreter, HostTensor};
//!
//! let mut ctx = Context::new(ipuc_dialects::registry());
//! let src = r#"
//! func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
//!   %0 = nn.relu %x : tensor<2xf32> -> tensor<2xf32>
//!   return %0 : tensor<2xf32>
//! }
//! "#;
//! let module = parse_source(&mut ctx, "relu.mlir", src).unwrap().module;
//! let main = interpreter::entry_function(&ctx, module).unwrap();
//! let out = interpreter::run_function(&ctx, main, &[HostTensor::from_f32(vec![2], &[-1.0, 2.0])]).unwrap();
//! assert_eq!(out[0].to_f64_vec(), [0.0, 2.0]);
//! ```

mod ops;
mod tensors;

use std::collections::HashMap;

use ipuc_dialects::func;
use ipuc_ir::diagnostics::location_prefix;
use ipuc_ir::{Context, OpId, Value};

pub use tensors::{describe, element_kind_of, matches_type};

use super::HostTensor;
use ops::OpError;

/// Why a function could not be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpretError {
    /// The operation to run is not a `func.func`.
    #[error("'{0}' is not a func.func")]
    NotAFunction(String),
    /// No function to run was found, or the choice is ambiguous.
    #[error("{0}")]
    NoEntryFunction(String),
    /// The function is a declaration.
    #[error("function @{0} has no body")]
    NoBody(String),
    /// The body has more than one block.
    #[error("function @{name} has {blocks} blocks; the reference executor runs straight-line bodies only")]
    ControlFlow {
        /// Function name.
        name: String,
        /// Block count.
        blocks: usize,
    },
    /// Wrong number of inputs.
    #[error("function @{name} takes {expected} input(s), but {got} were given")]
    InputCount {
        /// Function name.
        name: String,
        /// Parameters.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// An input does not have the parameter's type.
    #[error("input #{index} of @{name} must be {expected}, but is {got}")]
    InputType {
        /// Function name.
        name: String,
        /// Parameter position.
        index: usize,
        /// The parameter type.
        expected: String,
        /// The given tensor.
        got: String,
    },
    /// An op failed or is not supported.
    #[error("{location}: '{op}' {message}")]
    Op {
        /// `file:line:col ('onnx node')` or the node name.
        location: String,
        /// The op name.
        op: String,
        /// What went wrong.
        message: String,
    },
}

impl InterpretError {
    fn at(ctx: &Context, op: OpId, message: impl Into<String>) -> InterpretError {
        InterpretError::Op {
            location: location_prefix(ctx.loc(op)),
            op: ctx.name_str(op).to_string(),
            message: message.into(),
        }
    }
}

/// The name of a `func.func` (`sym_name`).
pub fn function_name(ctx: &Context, func: OpId) -> String {
    ctx.attr(func, "sym_name")
        .and_then(|a| a.as_str())
        .unwrap_or("<anonymous>")
        .to_string()
}

/// The function to run in `root`: `root` itself if it is a `func.func`;
/// otherwise, among the top-level functions with a body, `@main` if present,
/// else the only public one.
pub fn entry_function(ctx: &Context, root: OpId) -> Result<OpId, InterpretError> {
    if ctx.name_str(root) == func::FUNC {
        return Ok(root);
    }
    let candidates: Vec<OpId> = ctx
        .regions(root)
        .iter()
        .flat_map(|&r| ctx.region_blocks(r).iter())
        .flat_map(|&b| ctx.block_ops(b))
        .filter(|&op| ctx.name_str(op) == func::FUNC && func::entry_block(ctx, op).is_some())
        .collect();
    if let Some(&main) = candidates
        .iter()
        .find(|&&f| function_name(ctx, f) == "main")
    {
        return Ok(main);
    }
    let public: Vec<OpId> = candidates
        .iter()
        .copied()
        .filter(|&f| ctx.attr(f, "sym_visibility").and_then(|a| a.as_str()) != Some("private"))
        .collect();
    match public.as_slice() {
        [f] => Ok(*f),
        [] => Err(InterpretError::NoEntryFunction(
            "the module holds no public func.func with a body to run".into(),
        )),
        several => Err(InterpretError::NoEntryFunction(format!(
            "the module holds several public functions ({}); name one @main",
            several
                .iter()
                .map(|&f| format!("@{}", function_name(ctx, f)))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Measurements of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Operations executed (excluding `func.return`).
    pub ops: usize,
    /// The largest number of tensor bytes alive at once (inputs included;
    /// tensors sharing one buffer, such as reshapes and weights, count once).
    pub peak_live_bytes: usize,
}

/// Runs the `func.func` `func` on `inputs` (one per parameter, in order) and
/// returns the operands of its `func.return`.
pub fn run_function(
    ctx: &Context,
    func: OpId,
    inputs: &[HostTensor],
) -> Result<Vec<HostTensor>, InterpretError> {
    run_function_with_stats(ctx, func, inputs).map(|(outputs, _)| outputs)
}

/// The bytes of the distinct buffers held by `env`.
fn live_bytes(env: &HashMap<Value, HostTensor>) -> usize {
    let mut seen = std::collections::HashSet::new();
    env.values()
        .filter(|t| seen.insert(t.data.as_ptr()))
        .map(|t| t.data.len())
        .sum()
}

/// As [`run_function`], also returning [`RunStats`].
pub fn run_function_with_stats(
    ctx: &Context,
    func: OpId,
    inputs: &[HostTensor],
) -> Result<(Vec<HostTensor>, RunStats), InterpretError> {
    if ctx.name_str(func) != func::FUNC {
        return Err(InterpretError::NotAFunction(ctx.name_str(func).to_string()));
    }
    keep_freed_tensor_memory();
    let name = function_name(ctx, func);
    let region = ctx.regions(func)[0];
    let blocks = ctx.region_blocks(region);
    let body = match blocks {
        [] => return Err(InterpretError::NoBody(name)),
        [b] => *b,
        _ => {
            return Err(InterpretError::ControlFlow {
                name,
                blocks: blocks.len(),
            })
        }
    };
    let params = ctx.block_args(body);
    if params.len() != inputs.len() {
        return Err(InterpretError::InputCount {
            name,
            expected: params.len(),
            got: inputs.len(),
        });
    }
    let ops = ctx.block_ops_vec(body);
    let last_use = last_uses(ctx, &ops);
    let mut env: HashMap<Value, HostTensor> = HashMap::new();
    for (index, (&param, input)) in params.iter().zip(inputs).enumerate() {
        let ty = ctx.value_type(param);
        if !tensors::matches_type(input, ty) {
            return Err(InterpretError::InputType {
                name,
                index,
                expected: ty.to_string(),
                got: describe(input),
            });
        }
        if last_use.contains_key(&param) {
            env.insert(param, input.clone());
        }
    }
    let mut stats = RunStats {
        ops: 0,
        peak_live_bytes: live_bytes(&env),
    };
    for (index, &op) in ops.iter().enumerate() {
        if ctx.name_str(op) == func::RETURN {
            let outputs = ctx
                .operands(op)
                .iter()
                .map(|v| {
                    env.get(v)
                        .cloned()
                        .expect("operands are defined before use")
                })
                .collect();
            return Ok((outputs, stats));
        }
        if !ctx.regions(op).is_empty() {
            return Err(InterpretError::at(
                ctx,
                op,
                "has regions, which the reference executor does not run",
            ));
        }
        let _span = tracing::debug_span!("op", name = ctx.name_str(op)).entered();
        let results = {
            let args: Vec<&HostTensor> = ctx
                .operands(op)
                .iter()
                .map(|v| {
                    env.get(v).ok_or_else(|| {
                        InterpretError::at(ctx, op, "uses a value defined outside the function")
                    })
                })
                .collect::<Result<_, _>>()?;
            ops::execute(ctx, op, &args).map_err(|e| match e {
                OpError::Unsupported => InterpretError::at(
                    ctx,
                    op,
                    "is not supported by the reference executor (it runs nn ops and func.return)",
                ),
                OpError::Failed(message) => InterpretError::at(ctx, op, message),
            })?
        };
        let declared = ctx.results(op);
        if results.len() != declared.len() {
            return Err(InterpretError::at(
                ctx,
                op,
                format!(
                    "produced {} result(s) for {} declared",
                    results.len(),
                    declared.len()
                ),
            ));
        }
        for (i, (&value, tensor)) in declared.iter().zip(results).enumerate() {
            let ty = ctx.value_type(value);
            if !tensors::matches_type(&tensor, ty) {
                return Err(InterpretError::at(
                    ctx,
                    op,
                    format!(
                        "result #{i} is declared '{ty}', but the kernel produced {}",
                        describe(&tensor)
                    ),
                ));
            }
            // Unused results are dropped at once.
            if last_use.contains_key(&value) {
                env.insert(value, tensor);
            }
        }
        stats.ops += 1;
        stats.peak_live_bytes = stats.peak_live_bytes.max(live_bytes(&env));
        // Free every operand whose last use this was.
        for v in ctx.operands(op) {
            if last_use.get(v) == Some(&index) {
                env.remove(v);
            }
        }
    }
    Err(InterpretError::NoBody(format!(
        "{name} (its body does not end in func.return)"
    )))
}

/// Asks the allocator to keep freed tensor memory for the next op (as
/// onnxruntime's arena does), once per process: by default glibc maps every
/// large block afresh and unmaps it on free, and page faults on the new
/// mappings then cost a quarter of a whole so400m run. Peak memory is
/// unchanged (freed blocks are reused, not added to).
fn keep_freed_tensor_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // glibc's largest mmap threshold (32 MiB on 64-bit targets).
            const LARGEST: libc::c_int = 32 << 20;
            // SAFETY: mallopt only changes allocator thresholds.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, LARGEST);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 4 * LARGEST);
            }
        });
    }
}

/// For each value used in `ops`, the position of its last user.
fn last_uses(ctx: &Context, ops: &[OpId]) -> HashMap<Value, usize> {
    let mut last = HashMap::new();
    for (i, &op) in ops.iter().enumerate() {
        for &v in ctx.operands(op) {
            last.insert(v, i);
        }
    }
    last
}
