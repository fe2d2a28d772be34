//! Op-type counts of a graph (for summaries and "unsupported ops" errors).

use std::collections::BTreeMap;

use super::error::{OnnxError, Result};
use super::graph::Graph;

/// How often one op type occurs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpCount {
    /// Domain (`""` for the default ONNX domain).
    pub domain: String,
    /// Op type.
    pub op_type: String,
    /// Number of nodes.
    pub count: usize,
    /// Name of the first such node in file order (depth first through subgraphs).
    pub first_node: String,
}

impl Graph {
    /// Every (domain, op type) with its node count and first node, including nodes
    /// of subgraphs; sorted by count (descending), then domain and op type.
    pub fn op_histogram(&self) -> Vec<OpCount> {
        let mut counts: BTreeMap<(String, String), OpCount> = BTreeMap::new();
        self.count_ops(&mut counts);
        let mut list: Vec<OpCount> = counts.into_values().collect();
        list.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (&a.domain, &a.op_type).cmp(&(&b.domain, &b.op_type)))
        });
        list
    }

    /// Checks every node (subgraphs included) against `is_supported(domain, op_type)`
    /// and reports all unsupported op types at once, most frequent first.
    pub fn check_supported(&self, is_supported: impl Fn(&str, &str) -> bool) -> Result<()> {
        let unsupported: Vec<OpCount> = self
            .op_histogram()
            .into_iter()
            .filter(|o| !is_supported(&o.domain, &o.op_type))
            .collect();
        if unsupported.is_empty() {
            Ok(())
        } else {
            Err(OnnxError::UnsupportedOps(unsupported))
        }
    }

    fn count_ops(&self, counts: &mut BTreeMap<(String, String), OpCount>) {
        for node in &self.nodes {
            counts
                .entry((node.domain.clone(), node.op_type.clone()))
                .or_insert_with(|| OpCount {
                    domain: node.domain.clone(),
                    op_type: node.op_type.clone(),
                    count: 0,
                    first_node: node.name.clone(),
                })
                .count += 1;
            for subgraph in node.subgraphs() {
                subgraph.count_ops(counts);
            }
        }
    }
}
