//! Strided copies: the data movement of transposes and slices, done as
//! contiguous runs and cache-sized blocks over the view instead of one
//! computed index per element.
//!
//! A view is `shape` over a source with element strides `view` from
//! `offset` (negative strides walk backwards, as slices with negative steps
//! do). Dimensions of size 1 are dropped and neighbours that are contiguous
//! in the source are merged first. Then:
//! - a unit innermost stride copies whole rows (`copy_from_slice`);
//! - otherwise, when another dimension has unit stride (a transpose), each
//!   plane of that dimension and the innermost one is copied in square
//!   blocks, so both the reads and the writes stay within a few cache lines;
//! - anything else (strided slices) walks element by element.

/// Elements per side of a transpose block (32 × 32 four-byte elements are
/// 4 KiB: both the source rows and the destination rows stay in L1).
const BLOCK: usize = 32;

/// One dimension of the merged view: its size, its source stride and its
/// destination stride (in elements).
#[derive(Clone, Copy, Debug)]
struct Dim {
    size: usize,
    src: isize,
    dst: usize,
}

/// Copies the view into `dst` (row-major over `shape`, `size`-byte elements).
pub(super) fn copy_view(
    src: &[u8],
    size: usize,
    shape: &[usize],
    view: &[isize],
    offset: isize,
    dst: &mut [u8],
) {
    let count: usize = shape.iter().product();
    debug_assert_eq!(dst.len(), count * size);
    if count == 0 {
        return;
    }
    let dims = merged(shape, view);
    macro_rules! typed {
        ($t:ty) => {
            if let (Ok(s), Ok(d)) = (
                bytemuck::try_cast_slice::<u8, $t>(src),
                bytemuck::try_cast_slice_mut::<u8, $t>(dst),
            ) {
                return copy_typed(s, &dims, offset, d);
            }
        };
    }
    match size {
        1 => typed!(u8),
        2 => typed!(u16),
        4 => typed!(u32),
        8 => typed!(u64),
        _ => {}
    }
    // Unaligned buffers (or an unusual width): byte chunks.
    walk(&dims, offset, |from, to| {
        let (from, to) = (from as usize * size, to * size);
        dst[to..to + size].copy_from_slice(&src[from..from + size]);
    });
}

/// The view without unit dimensions, with source-contiguous neighbours
/// merged, and each dimension's row-major destination stride.
fn merged(shape: &[usize], view: &[isize]) -> Vec<Dim> {
    let mut dims: Vec<Dim> = Vec::new();
    for (&size, &src) in shape.iter().zip(view) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(last) if last.src == src * size as isize => {
                last.size *= size;
                last.src = src;
            }
            _ => dims.push(Dim { size, src, dst: 0 }),
        }
    }
    if dims.is_empty() {
        dims.push(Dim {
            size: 1,
            src: 0,
            dst: 0,
        });
    }
    let mut stride = 1;
    for d in dims.iter_mut().rev() {
        d.dst = stride;
        stride *= d.size;
    }
    dims
}

/// Calls `f(source index, destination index)` for every element of `dims`
/// in row-major order.
fn walk(dims: &[Dim], offset: isize, mut f: impl FnMut(isize, usize)) {
    let count: usize = dims.iter().map(|d| d.size).product();
    let mut counter = vec![0usize; dims.len()];
    let (mut from, mut to) = (offset, 0usize);
    for _ in 0..count {
        f(from, to);
        for (k, d) in dims.iter().enumerate().rev() {
            counter[k] += 1;
            from += d.src;
            to += d.dst;
            if counter[k] < d.size {
                break;
            }
            from -= d.src * d.size as isize;
            to -= d.dst * d.size;
            counter[k] = 0;
        }
    }
}

fn copy_typed<T: Copy>(src: &[T], dims: &[Dim], offset: isize, dst: &mut [T]) {
    let (inner, outer) = dims.split_last().expect("at least one dimension");
    if inner.src == 1 {
        // Whole rows.
        let n = inner.size;
        walk(outer, offset, |s, o| {
            let s = s as usize;
            dst[o..o + n].copy_from_slice(&src[s..s + n]);
        });
        return;
    }
    let Some(unit) = outer.iter().position(|d| d.src == 1) else {
        walk(dims, offset, |s, o| dst[o] = src[s as usize]);
        return;
    };
    // A transpose: planes of (`rows` along the source-contiguous dimension,
    // `inner` along the destination-contiguous one), copied in blocks.
    let rows = outer[unit];
    let others: Vec<Dim> = outer
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != unit)
        .map(|(_, d)| *d)
        .collect();
    walk(&others, offset, |s, o| {
        for r0 in (0..rows.size).step_by(BLOCK) {
            for c0 in (0..inner.size).step_by(BLOCK) {
                for r in r0..(r0 + BLOCK).min(rows.size) {
                    let row_out = o + r * rows.dst;
                    let row_src = s + r as isize;
                    for c in c0..(c0 + BLOCK).min(inner.size) {
                        dst[row_out + c] = src[(row_src + c as isize * inner.src) as usize];
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: element `i` of the result is the source element at
    /// `offset + Σ index[d] · view[d]`.
    fn naive(src: &[u32], shape: &[usize], view: &[isize], offset: isize) -> Vec<u32> {
        let n: usize = shape.iter().product();
        (0..n)
            .map(|flat| {
                let mut rest = flat;
                let mut at = offset;
                for d in (0..shape.len()).rev() {
                    at += (rest % shape[d]) as isize * view[d];
                    rest /= shape[d];
                }
                src[at as usize]
            })
            .collect()
    }

    fn check(src_len: usize, shape: &[usize], view: &[isize], offset: isize) {
        let indices: Vec<u32> = (0..src_len as u32).collect();
        let want = naive(&indices, shape, view, offset);
        for size in [4usize, 1, 2, 8, 3] {
            // Element k of the source holds bytes derived from its position,
            // so every width checks which element landed where.
            let bytes: Vec<u8> = (0..src_len * size).map(|b| (b * 31 % 251) as u8).collect();
            let mut out = vec![0u8; want.len() * size];
            copy_view(&bytes, size, shape, view, offset, &mut out);
            let want_bytes: Vec<u8> = want
                .iter()
                .flat_map(|&k| bytes[k as usize * size..(k as usize + 1) * size].to_vec())
                .collect();
            assert_eq!(out, want_bytes, "{shape:?} {view:?} {offset} size {size}");
        }
    }

    #[test]
    fn transposes_match_the_definition() {
        // [2, 3, 4] with every permutation, and the shapes a model transposes.
        let base = [2usize, 3, 4];
        let strides = [12isize, 4, 1];
        for perm in [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            let shape: Vec<usize> = perm.iter().map(|&p| base[p]).collect();
            let view: Vec<isize> = perm.iter().map(|&p| strides[p]).collect();
            check(24, &shape, &view, 0);
        }
        // [1, 729, 16, 72] -> [1, 16, 729, 72] and -> [1, 16, 72, 729].
        check(729 * 16 * 72, &[1, 16, 729, 72], &[0, 72, 1152, 1], 0);
        check(729 * 16 * 72, &[1, 16, 72, 729], &[0, 72, 1, 1152], 0);
        // Blocks that do not divide the plane.
        check(45 * 67, &[67, 45], &[1, 67], 0);
    }

    #[test]
    fn slices_match_the_definition() {
        // Rows of a [6, 10] matrix, columns 2..7; every other row reversed.
        check(60, &[6, 5], &[10, 1], 2);
        check(60, &[3, 5], &[-20, 1], 42);
        check(60, &[6, 3], &[10, 3], 1);
        check(60, &[0, 3], &[10, 1], 0);
        check(60, &[], &[], 17);
        check(60, &[1, 1], &[10, 1], 33);
    }
}
