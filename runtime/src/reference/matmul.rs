//! Matrix products: ONNX `MatMul` (batched, broadcast batch dimensions), `Gemm`,
//! and the dense layer `linear` (`x[..., K]·w[K, N] + b[N]`, the fusion target of
//! MatMul + Add).
//!
//! Float operands may differ in format (f16 activations times f8 weights): the
//! product computes in the domain of the first operand's kind and takes its
//! kind, except that an 8-bit float first operand gives an f16 product
//! ([`product_kind`], the `nn` dialect's `contraction_element`): FP8 is a
//! storage format of operands, and the FP8 AMP's products come out in f16.
//! FP8 codes (and FP8 codes times a power-of-two scale) are exact in f32,
//! and so are their pairwise products (4-bit significands), so an FP8
//! product's only roundings are the f32 accumulation and the final f16.
//!
//! f32 and f64 products run on `gemm`'s blocked kernels (arbitrary strides, so
//! transposes cost nothing; AVX-512 or AVX2/FMA as the CPU has), one product on
//! all threads, batches of products one per thread. Integer products are exact (i128 accumulation, wrapping on store).

use ipuc_ir::numeric::ElementKind;
use rayon::prelude::*;

use super::elementwise::{binary, cast, BinaryKind};
use super::error::{shape_error, KernelError, KernelResult};
use super::fast_f32::{f32_elements, f32_tensor_with};
use super::host_tensor::{HostTensor, Values};
use super::shape::{broadcast_indices, broadcast_shapes};

/// The element kind of a contraction whose first operand has kind `lhs`:
/// `lhs`, except f16 for 8-bit floats.
pub fn product_kind(lhs: ElementKind) -> ElementKind {
    if lhs.float8_format().is_some() {
        ElementKind::F16
    } else {
        lhs
    }
}

/// One 2-D product `C[m×n] = A[m×k] · B[k×n]` with element strides
/// (row stride, column stride) for A and B; C is dense row-major.
#[derive(Clone, Copy)]
pub(super) struct Product {
    pub(super) m: usize,
    pub(super) k: usize,
    pub(super) n: usize,
    pub(super) a_strides: (isize, isize),
    pub(super) b_strides: (isize, isize),
}

impl Product {
    /// A product of dense row-major operands.
    pub(super) fn dense(m: usize, k: usize, n: usize) -> Product {
        Product {
            m,
            k,
            n,
            a_strides: (k as isize, 1),
            b_strides: (n as isize, 1),
        }
    }
}

/// Products below this many multiply-adds run on the calling thread: the
/// GEMM's own threading costs more than it saves there, and batched products
/// (attention heads, convolution groups) are already spread over threads.
const PARALLEL_MACS: usize = 1 << 22;

/// The threading of one product: the whole rayon pool for large ones.
fn parallelism(p: &Product) -> gemm::Parallelism {
    let threads = rayon::current_num_threads();
    if threads > 1 && p.m * p.k * p.n >= PARALLEL_MACS && rayon::current_thread_index().is_none() {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    }
}

/// `C = A · B` on `gemm`'s kernels (AVX-512 where the CPU has it, chosen at
/// run time), which take arbitrary strides, so transposed operands cost
/// nothing. Only products issued from outside a rayon task use the pool:
/// inside one (batched heads, groups) they already run in parallel.
macro_rules! product {
    ($name:ident, $t:ty) => {
        pub(super) fn $name(p: Product, a: &[$t], b: &[$t], c: &mut [$t]) {
            if p.m == 0 || p.n == 0 {
                return;
            }
            if p.k == 0 {
                c.fill(0.0);
                return;
            }
            assert!(c.len() >= p.m * p.n, "C holds the m x n result");
            // SAFETY: the strides describe in-bounds views of `a` (m x k),
            // `b` (k x n) and the dense row-major m x n `c`, which the call
            // writes without reading (`read_dst` false).
            unsafe {
                gemm::gemm(
                    p.m,
                    p.n,
                    p.k,
                    c.as_mut_ptr(),
                    1,
                    p.n as isize,
                    false,
                    a.as_ptr(),
                    p.a_strides.1,
                    p.a_strides.0,
                    b.as_ptr(),
                    p.b_strides.1,
                    p.b_strides.0,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    parallelism(&p),
                );
            }
        }
    };
}

product!(product_f32, f32);
product!(product_f64, f64);

fn product_int(p: Product, a: &[i128], b: &[i128], c: &mut [i128]) {
    let at =
        |i: usize, j: usize| a[(i as isize * p.a_strides.0 + j as isize * p.a_strides.1) as usize];
    let bt =
        |i: usize, j: usize| b[(i as isize * p.b_strides.0 + j as isize * p.b_strides.1) as usize];
    for i in 0..p.m {
        for j in 0..p.n {
            c[i * p.n + j] = (0..p.k).fold(0i128, |acc, l| {
                acc.wrapping_add(at(i, l).wrapping_mul(bt(l, j)))
            });
        }
    }
}

/// Runs `ia.len()` 2-D products into `out`: operand `a` batch `ia[t]`, `b`
/// batch `ib[t]`, with `product` (one of the typed products above).
fn batched_into<T: Send + Sync>(
    p: Product,
    x: &[T],
    y: &[T],
    ia: &[usize],
    ib: &[usize],
    out: &mut [T],
    product: fn(Product, &[T], &[T], &mut [T]),
) {
    let (a_size, b_size, c_size) = (p.m * p.k, p.k * p.n, p.m * p.n);
    if let ([i], [j]) = (ia, ib) {
        // One product: issued from this thread, so it may use the pool.
        product(
            p,
            &x[i * a_size..(i + 1) * a_size],
            &y[j * b_size..(j + 1) * b_size],
            out,
        );
    } else if c_size > 0 {
        out.par_chunks_mut(c_size)
            .zip(ia.par_iter().zip(ib.par_iter()))
            .for_each(|(c, (&i, &j))| {
                product(
                    p,
                    &x[i * a_size..(i + 1) * a_size],
                    &y[j * b_size..(j + 1) * b_size],
                    c,
                )
            });
    }
}

/// Runs `products` 2-D products: operand `a` batch `ia[t]`, `b` batch `ib[t]`.
fn batched(p: Product, a: &Values, b: &Values, ia: &[usize], ib: &[usize]) -> Values {
    let c_size = p.m * p.n;
    macro_rules! run {
        ($x:expr, $y:expr, $zero:expr, $f:ident, $wrap:path) => {{
            let mut out = vec![$zero; ia.len() * c_size];
            batched_into(p, $x, $y, ia, ib, &mut out, $f);
            $wrap(out)
        }};
    }
    match (a, b) {
        (Values::F32(x), Values::F32(y)) => run!(x, y, 0f32, product_f32, Values::F32),
        (Values::F64(x), Values::F64(y)) => run!(x, y, 0f64, product_f64, Values::F64),
        (Values::Int(x), Values::Int(y)) => run!(x, y, 0i128, product_int, Values::Int),
        _ => unreachable!("operands share an element kind"),
    }
}

/// Whether a contraction takes the f32 fast path: every operand f32, read
/// in place from the tensors' bytes, the result written into its own
/// buffer (no widening copies of activations or weights).
fn all_f32(operands: &[Option<&HostTensor>]) -> bool {
    operands
        .iter()
        .flatten()
        .all(|t| t.kind == ElementKind::F32)
}

/// ONNX `MatMul` (numpy `matmul`): 1-D operands are promoted to a row/column and
/// the promoted dimension removed from the result; batch dimensions broadcast.
pub fn matmul(a: &HostTensor, b: &HostTensor) -> KernelResult<HostTensor> {
    check_contractable("matmul", a, b)?;
    if a.rank() == 0 || b.rank() == 0 {
        return Err(shape_error("matmul", "operands must have rank >= 1"));
    }
    let a_shape = if a.rank() == 1 {
        vec![1, a.shape[0]]
    } else {
        a.shape.clone()
    };
    let b_shape = if b.rank() == 1 {
        vec![b.shape[0], 1]
    } else {
        b.shape.clone()
    };
    let (m, k) = (a_shape[a_shape.len() - 2], a_shape[a_shape.len() - 1]);
    let (k2, n) = (b_shape[b_shape.len() - 2], b_shape[b_shape.len() - 1]);
    if k != k2 {
        return Err(shape_error(
            "matmul",
            format!("inner dimensions differ: {:?} x {:?}", a.shape, b.shape),
        ));
    }
    let a_batch = &a_shape[..a_shape.len() - 2];
    let b_batch = &b_shape[..b_shape.len() - 2];
    let batch = broadcast_shapes("matmul", &[a_batch, b_batch])?;
    let ia = broadcast_indices(a_batch, &batch);
    let ib = broadcast_indices(b_batch, &batch);
    let p = Product::dense(m, k, n);
    let mut shape = batch;
    if a.rank() > 1 {
        shape.push(m);
    }
    if b.rank() > 1 {
        shape.push(n);
    }
    if all_f32(&[Some(a), Some(b)]) {
        let (x, y) = (f32_elements(a), f32_elements(b));
        return Ok(f32_tensor_with(shape, |out| {
            batched_into(p, &x, &y, &ia, &ib, out, product_f32)
        }));
    }
    let values = batched(p, &a.values(), &b.values_in(a.kind), &ia, &ib);
    Ok(HostTensor::from_values(product_kind(a.kind), shape, values))
}

/// ONNX `Gemm` attributes: the `nn` dialect's, which the kernel computes.
pub use ipuc_dialects::nn::GemmParams;

/// ONNX `Gemm`: `alpha · op(A) · op(B) + beta · C`, with `C` (optional)
/// unidirectionally broadcast to `[M, N]`.
pub fn gemm(
    a: &HostTensor,
    b: &HostTensor,
    c: Option<&HostTensor>,
    params: GemmParams,
) -> KernelResult<HostTensor> {
    if a.rank() != 2 || b.rank() != 2 {
        return Err(shape_error(
            "gemm",
            format!("A and B must be 2-D, got {:?} and {:?}", a.shape, b.shape),
        ));
    }
    check_contractable("gemm", a, b)?;
    let (m, k) = if params.trans_a {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (k2, n) = if params.trans_b {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if k != k2 {
        return Err(shape_error(
            "gemm",
            format!("inner dimensions differ: {k} vs {k2}"),
        ));
    }
    let a_strides = if params.trans_a {
        (1, m as isize)
    } else {
        (k as isize, 1)
    };
    let b_strides = if params.trans_b {
        (1, k as isize)
    } else {
        (n as isize, 1)
    };
    let p = Product {
        m,
        k,
        n,
        a_strides,
        b_strides,
    };
    let kind = product_kind(a.kind);
    let product = HostTensor::from_values(
        kind,
        vec![m, n],
        batched(p, &a.values(), &b.values_in(a.kind), &[0], &[0]),
    );
    let scalar = |v: f32| HostTensor::from_values(kind, vec![], scale_values(kind, v));
    let mut y = if params.alpha == 1.0 {
        product
    } else {
        binary(BinaryKind::Mul, &product, &scalar(params.alpha))?
    };
    if let Some(c) = c {
        if broadcast_shapes("gemm", &[&c.shape, &[m, n]])? != [m, n] {
            return Err(shape_error(
                "gemm",
                format!("C of shape {:?} does not broadcast to [{m}, {n}]", c.shape),
            ));
        }
        // A C of another float format joins the result's format first.
        let c = if c.kind != kind && c.kind.is_float() && kind.is_float() {
            cast(c, kind, true)
        } else {
            c.clone()
        };
        let c = if params.beta == 1.0 {
            c
        } else {
            binary(BinaryKind::Mul, &c, &scalar(params.beta))?
        };
        y = binary(BinaryKind::Add, &y, &c)?;
    }
    Ok(y)
}

fn scale_values(kind: ElementKind, v: f32) -> Values {
    match HostTensor::domain_of(kind) {
        Values::F32(_) => Values::F32(vec![v]),
        Values::F64(_) => Values::F64(vec![f64::from(v)]),
        Values::Int(_) => Values::Int(vec![v as i128]),
    }
}

/// Two operands may be contracted together when both are floats (of any
/// formats) or both have the same integer kind.
fn check_contractable(op: &'static str, a: &HostTensor, b: &HostTensor) -> KernelResult<()> {
    let both_float = a.kind.is_float() && b.kind.is_float();
    let same_int = a.kind == b.kind && a.kind.is_integer();
    if both_float || same_int {
        Ok(())
    } else {
        Err(KernelError::ElementType {
            op,
            kind: format!("{} with {}", a.kind, b.kind),
        })
    }
}

/// A dense layer: `x[..., K] · w[K, N] (+ b[N])`, the fusion target of
/// MatMul + Add. All leading dimensions of `x` form one `[M, K]` product. The
/// bias is added in the compute domain and the sum rounded once to the
/// [`product_kind`] of `x` (a fused kernel rounds once, where MatMul then Add
/// would round twice).
pub fn linear(x: &HostTensor, w: &HostTensor, b: Option<&HostTensor>) -> KernelResult<HostTensor> {
    check_contractable("linear", x, w)?;
    if x.rank() == 0 || w.rank() != 2 {
        return Err(shape_error(
            "linear",
            format!(
                "input must have rank >= 1 and weight rank 2, got {:?} and {:?}",
                x.shape, w.shape
            ),
        ));
    }
    let k = x.shape[x.rank() - 1];
    let (k2, n) = (w.shape[0], w.shape[1]);
    if k != k2 {
        return Err(shape_error(
            "linear",
            format!("inner dimensions differ: {:?} x {:?}", x.shape, w.shape),
        ));
    }
    let m: usize = x.shape[..x.rank() - 1].iter().product();
    if let Some(b) = b {
        if b.shape != [n] {
            return Err(shape_error(
                "linear",
                format!("bias must have shape [{n}], got {:?}", b.shape),
            ));
        }
        if b.kind.is_float() != x.kind.is_float() {
            return Err(KernelError::ElementType {
                op: "linear",
                kind: format!("{} with bias {}", x.kind, b.kind),
            });
        }
    }
    let mut shape = x.shape.clone();
    *shape.last_mut().expect("rank >= 1") = n;
    let rows_per_task = (1usize << 14).div_ceil(n.max(1));
    if all_f32(&[Some(x), Some(w), b]) {
        let (xs, ws) = (f32_elements(x), f32_elements(w));
        let bias = b.map(f32_elements);
        return Ok(f32_tensor_with(shape, |out| {
            product_f32(Product::dense(m, k, n), &xs, &ws, out);
            if let (Some(bias), true) = (bias, n > 0) {
                out.par_chunks_mut(n * rows_per_task).for_each(|rows| {
                    for row in rows.chunks_mut(n) {
                        row.iter_mut().zip(bias.iter()).for_each(|(o, b)| *o += b);
                    }
                })
            }
        }));
    }
    let mut values = batched(
        Product::dense(m, k, n),
        &x.values(),
        &w.values_in(x.kind),
        &[0],
        &[0],
    );
    let kind = product_kind(x.kind);
    if let Some(b) = b {
        let n = n.max(1);
        match (&mut values, b.values_in(kind)) {
            (Values::F32(v), Values::F32(bias)) => v
                .par_chunks_mut(n)
                .for_each(|row| row.iter_mut().zip(&bias).for_each(|(o, b)| *o += b)),
            (Values::F64(v), Values::F64(bias)) => v
                .par_chunks_mut(n)
                .for_each(|row| row.iter_mut().zip(&bias).for_each(|(o, b)| *o += b)),
            (Values::Int(v), Values::Int(bias)) => v.chunks_mut(n).for_each(|row| {
                row.iter_mut()
                    .zip(&bias)
                    .for_each(|(o, b)| *o = o.wrapping_add(*b))
            }),
            _ => unreachable!("bias widened into the product's domain"),
        }
    }
    Ok(HostTensor::from_values(kind, shape, values))
}
