//! `TfIdfVectorizer` over integer tokens, built of `nn` ops as the ONNX
//! reference counts (`op_tfidf_vectorizer.py`): an n-gram of the pool is
//! counted at every start where its `n` tokens appear `skip + 1` apart, for
//! each skip up to `max_skip_count` (unigrams once, whatever the skip), for
//! `n` from `min_gram_length` to `max_gram_length`. Per size and skip, the
//! token windows are compared with every pool n-gram of that size at once
//! (`[rows, starts, n-grams]` booleans, and-ed over the n positions) and
//! summed over the starts; one matmul by a constant 0/1 matrix moves each
//! n-gram's count to its `ngram_indexes` column, and `mode` weighs them.
//! String pools are refused: ipuc has no string tensors.

use ipuc_dialects::nn::{BinaryKind, CompareKind, ReduceKind};
use ipuc_ir::{Type, Value};

use super::body::{Body, Built};
use super::{Importer, NodeResult};
use crate::onnx::Node;

/// The ops of this family.
pub(super) const OPS: &[&str] = &["TfIdfVectorizer"];

pub(super) fn import(imp: &mut Importer<'_>, node: &Node) -> NodeResult {
    let mut b = Body::new(imp, node);
    let x = b.input(0)?;
    if node.attribute("pool_strings").is_some() {
        return Err(b.error(
            "`pool_strings` needs string tensors, which ipuc does not support; use token ids \
             (`pool_int64s`)",
        ));
    }
    let pool = node.ints_attr("pool_int64s")?.unwrap_or(&[]).to_vec();
    let counts = node.ints_attr("ngram_counts")?.unwrap_or(&[]).to_vec();
    let indexes = node.ints_attr("ngram_indexes")?.unwrap_or(&[]).to_vec();
    let (min_n, max_n) = (
        node.int_attr("min_gram_length", 0)?,
        node.int_attr("max_gram_length", 0)?,
    );
    let max_skip = node.int_attr("max_skip_count", 0)?;
    let mode = node.string_attr("mode", "")?.to_string();
    if !matches!(mode.as_str(), "TF" | "IDF" | "TFIDF") {
        return Err(b.error(format!("`mode` \"{mode}\" must be TF, IDF or TFIDF")));
    }
    if min_n < 1 || max_n < min_n || max_skip < 0 || indexes.iter().any(|&i| i < 0) {
        return Err(b.error(format!(
            "needs 1 <= min_gram_length ({min_n}) <= max_gram_length ({max_n}), a \
             non-negative max_skip_count ({max_skip}) and ngram_indexes"
        )));
    }
    let elem = b.element(x)?;
    if !elem.is_integer() || elem.is_integer_of_width(1) {
        return Err(b.error(format!(
            "the input must hold integer tokens, but is '{elem}'"
        )));
    }
    let shape = b.shape(x);
    let (rows, width, flat) = match shape[..] {
        [c] => (1, c, true),
        [r, c] => (r, c, false),
        _ => return Err(b.error(format!("the input must be [C] or [B, C], but is {shape:?}"))),
    };
    let x2 = b.reshape(x, &[rows, width])?;

    // The pool's n-grams in order: (size, tokens, entry number).
    let mut grams: Vec<(i64, Vec<i64>)> = Vec::new();
    for (k, &start) in counts.iter().enumerate() {
        let end = counts.get(k + 1).copied().unwrap_or(pool.len() as i64);
        let size = k as i64 + 1;
        if start < 0 || end < start || end as usize > pool.len() || (end - start) % size != 0 {
            return Err(b.error(format!(
                "`ngram_counts` {counts:?} does not split the pool of {} tokens into n-grams",
                pool.len()
            )));
        }
        for g in (start..end).step_by(size as usize) {
            grams.push((size, pool[g as usize..(g + size) as usize].to_vec()));
        }
    }
    if indexes.len() != grams.len() {
        return Err(b.error(format!(
            "{} ngram_indexes for {} pool n-grams",
            indexes.len(),
            grams.len()
        )));
    }
    let output = indexes.iter().max().map_or(0, |&m| m + 1);

    // Counts of the n-grams that can occur, [rows, counted], in the order of
    // `counted` (pool entry numbers).
    let mut columns: Vec<Value> = Vec::new();
    let mut counted: Vec<usize> = Vec::new();
    for size in min_n..=max_n {
        let entries: Vec<usize> = (0..grams.len()).filter(|&e| grams[e].0 == size).collect();
        if entries.is_empty() {
            continue;
        }
        let skips = if size == 1 { 0 } else { max_skip };
        let mut total: Option<Value> = None;
        for skip in 0..=skips {
            let distance = skip + 1;
            let starts = width - (size - 1) * distance;
            if starts <= 0 {
                continue;
            }
            let mut hit: Option<Value> = None;
            for p in 0..size {
                let window = b.slice(x2, 1, p * distance, p * distance + starts)?;
                let window = b.unsqueeze(window, &[2])?;
                let tokens: Vec<f64> = entries
                    .iter()
                    .map(|&e| grams[e].1[p as usize] as f64)
                    .collect();
                let tokens = b.constant(&[entries.len() as i64], &elem, &tokens)?;
                let same = b.compare(CompareKind::Equal, window, tokens)?;
                hit = Some(match hit {
                    None => same,
                    Some(h) => b.binary(BinaryKind::And, h, same)?,
                });
            }
            let hit = b.cast(hit.expect("an n-gram has a token"), &Type::f32())?;
            let found = b.reduce(ReduceKind::Sum, hit, Some(&[1]), false)?;
            total = Some(match total {
                None => found,
                Some(t) => b.binary(BinaryKind::Add, t, found)?,
            });
        }
        // With no start that fits, these n-grams count zero and add nothing.
        if let Some(t) = total {
            columns.push(t);
            counted.extend(entries);
        }
    }
    // A repeated pool n-gram is counted under its last entry (the reference's
    // n-gram tree keeps the last id).
    let mut placement = vec![0.0; counted.len() * output as usize];
    for (row, &e) in counted.iter().enumerate() {
        let later = counted[row + 1..].iter().any(|&f| grams[f] == grams[e]);
        if !later {
            placement[row * output as usize + indexes[e] as usize] = 1.0;
        }
    }
    let frequencies = if columns.is_empty() {
        b.constant(
            &[rows, output],
            &Type::f32(),
            &vec![0.0; (rows * output) as usize],
        )?
    } else {
        let counts = b.concat(&columns, 1)?;
        let placement = b.constant(&[counted.len() as i64, output], &Type::f32(), &placement)?;
        b.matmul(counts, placement)?
    };
    let y = weigh(
        &mut b,
        frequencies,
        &mode,
        node.floats_attr("weights")?,
        output,
    )?;
    if flat {
        b.reshape(y, &[output]).map(|y| vec![y])
    } else {
        Ok(vec![y])
    }
}

/// `mode`: TF keeps the counts; IDF gives each found column its weight (1
/// without weights); TFIDF multiplies the counts by the weights.
fn weigh(
    b: &mut Body<'_, '_, '_>,
    frequencies: Value,
    mode: &str,
    weights: Option<&[f32]>,
    output: i64,
) -> Built {
    let weights = match weights {
        Some(w) if !w.is_empty() => {
            if w.len() as i64 != output {
                return Err(b.error(format!("{} weights for {output} output columns", w.len())));
            }
            let values: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
            Some(b.constant(&[output], &Type::f32(), &values)?)
        }
        _ => None,
    };
    match (mode, weights) {
        ("TF", _) | ("TFIDF", None) => Ok(frequencies),
        ("TFIDF", Some(w)) => b.binary(BinaryKind::Mul, frequencies, w),
        (_, w) => {
            let zero = b.scalar_like(frequencies, 0.0)?;
            let found = b.compare(CompareKind::Greater, frequencies, zero)?;
            let one = b.scalar_like(frequencies, 1.0)?;
            let weight = w.unwrap_or(one);
            b.select(found, weight, zero)
        }
    }
}
