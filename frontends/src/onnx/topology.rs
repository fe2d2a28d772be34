//! Graph structure checks and topological ordering.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

use super::error::{OnnxError, Result};
use super::graph::{Graph, Node};

impl Graph {
    /// Checks the graph's wiring: every node input and graph output is defined
    /// (graph input, initializer or node output), no value is defined twice, the
    /// nodes can be ordered (no cycle), and the same holds for subgraphs, which may
    /// also use values of enclosing graphs.
    pub fn check(&self) -> Result<()> {
        self.check_in_scope(&HashSet::new())
    }

    fn check_in_scope(&self, outer: &HashSet<&str>) -> Result<()> {
        let mut defined: HashSet<&str> = outer.clone();
        let mut local: HashSet<&str> = HashSet::new();
        for name in self
            .inputs
            .iter()
            .map(|v| v.name.as_str())
            .chain(self.initializers.iter().map(|i| i.name.as_str()))
        {
            // Inputs may repeat initializer names (IR < 4 convention).
            local.insert(name);
            defined.insert(name);
        }
        for node in &self.nodes {
            for output in node.outputs.iter().filter(|o| !o.is_empty()) {
                if !local.insert(output) {
                    return Err(node.error(format!(
                        "output `{output}` is already defined elsewhere in the graph"
                    )));
                }
                defined.insert(output);
            }
        }
        for node in &self.nodes {
            if let Some(missing) = node
                .inputs
                .iter()
                .find(|i| !i.is_empty() && !defined.contains(i.as_str()))
            {
                return Err(node.error(format!(
                    "input `{missing}` is not a graph input, initializer or output of any node"
                )));
            }
            for subgraph in node.subgraphs() {
                subgraph
                    .check_in_scope(&defined)
                    .map_err(|e| node.error(format!("in subgraph `{}`: {e}", subgraph.name)))?;
            }
        }
        if let Some(missing) = self
            .outputs
            .iter()
            .find(|o| !defined.contains(o.name.as_str()))
        {
            return Err(OnnxError::Value {
                value: missing.name.clone(),
                detail: "graph output is not produced by any node, input or initializer"
                    .to_string(),
            });
        }
        self.topological_order().map(|_| ())
    }

    /// Node indices in an order where every node comes after the producers of its
    /// inputs (including values its subgraphs use). Among ready nodes the one
    /// earliest in the file goes first, so a file already in topological order
    /// keeps its order. A cycle is an error naming a node on it.
    pub fn topological_order(&self) -> Result<Vec<usize>> {
        let producer: HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| {
                n.outputs
                    .iter()
                    .filter(|o| !o.is_empty())
                    .map(move |o| (o.as_str(), i))
            })
            .collect();
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        let mut pending: Vec<usize> = vec![0; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            let deps: BTreeSet<usize> = used_names(node)
                .iter()
                .filter_map(|name| producer.get(name.as_str()).copied())
                .collect();
            for d in deps {
                consumers[d].push(i);
                pending[i] += 1;
            }
        }
        let mut ready: BinaryHeap<Reverse<usize>> = (0..self.nodes.len())
            .filter(|&i| pending[i] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(Reverse(i)) = ready.pop() {
            order.push(i);
            for &c in &consumers[i] {
                pending[c] -= 1;
                if pending[c] == 0 {
                    ready.push(Reverse(c));
                }
            }
        }
        if order.len() < self.nodes.len() {
            let stuck = (0..self.nodes.len())
                .find(|&i| pending[i] > 0)
                .expect("some node is unordered");
            return Err(OnnxError::Cycle {
                node: self.nodes[stuck].name.clone(),
                others: self.nodes.len() - order.len() - 1,
            });
        }
        Ok(order)
    }

    /// Names this graph uses but does not define (values of enclosing graphs).
    fn free_names(&self) -> BTreeSet<String> {
        let mut defined: HashSet<&str> = self.inputs.iter().map(|v| v.name.as_str()).collect();
        defined.extend(self.initializers.iter().map(|i| i.name.as_str()));
        defined.extend(
            self.nodes
                .iter()
                .flat_map(|n| n.outputs.iter().map(String::as_str)),
        );
        let mut free = BTreeSet::new();
        for node in &self.nodes {
            free.extend(
                used_names(node)
                    .into_iter()
                    .filter(|n| !defined.contains(n.as_str())),
            );
        }
        free.extend(
            self.outputs
                .iter()
                .map(|o| o.name.clone())
                .filter(|n| !defined.contains(n.as_str())),
        );
        free
    }
}

/// Values a node reads: its inputs and the free names of its subgraphs.
fn used_names(node: &Node) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = node
        .inputs
        .iter()
        .filter(|i| !i.is_empty())
        .cloned()
        .collect();
    for subgraph in node.subgraphs() {
        names.extend(subgraph.free_names());
    }
    names
}
