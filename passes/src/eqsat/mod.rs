//! `eqsat-fuse`: graph optimisation of the `nn` dialect by equality
//! saturation (egg).
//!
//! For each block of a function, the pure `nn` dataflow becomes an e-graph
//! ([`convert`]) over a language mirroring the `nn` ops ([`language`]),
//! with an analysis carrying types and splat constants ([`analysis`]). The
//! rules ([`rules`]) run until saturation or a limit; then the cheapest
//! term of every value the rest of the function uses is extracted under a
//! [`CostModel`] ([`cost`]) and rebuilt as IR, each new op carrying the
//! fused locations of the ops it replaces.
//!
//! Options: `max-iterations`, `max-nodes`, `timeout-ms` (limits),
//! `rules=algebra,gelu,...` (rule groups), `dump-dot=DIR` (write each
//! saturated e-graph as Graphviz). The output depends only on the input and
//! the options, with one exception: a run stopped by `timeout-ms` stops at
//! a point that depends on the machine's speed (the statistics say so).
//!
//! Extraction prices ops with the [`CostModel`] installed on the
//! [`COST_MODEL`] hook (the tools install the IPU's), or with
//! [`DefaultCostModel`] when none is.
//!
//! ```
//! use ipuc_ir::pass::{parse_pipeline, PassManager, PassManagerOptions};
//! use ipuc_ir::{parse_source, print_op, Context, PrintOptions};
//!
//! let mut ctx = Context::new(ipuc_dialects::registry());
//! let src = r#"
//! func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
//!   %0 = nn.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
//!   %1 = nn.add %0, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
//!   return %1 : tensor<2x4xf32>
//! }
//! "#;
//! let module = parse_source(&mut ctx, "f.mlir", src).unwrap().module;
//! let mut registry = ipuc_ir::pass::PassRegistry::new();
//! ipuc_passes::register_passes(&mut registry).unwrap();
//! let pipeline = parse_pipeline("builtin.module(func.func(eqsat-fuse))").unwrap();
//! let mut pm = PassManager::new(PassManagerOptions::default());
//! pm.add_pipeline(&registry, &pipeline).unwrap();
//! pm.run(&mut ctx, module).unwrap();
//! assert!(print_op(&ctx, module, &PrintOptions::default()).contains("nn.linear"));
//! ```

pub mod analysis;
pub mod convert;
pub mod cost;
pub mod language;
pub mod rules;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use egg::{Extractor, Runner, SimpleScheduler, StopReason};

use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
use ipuc_ir::pass::{
    DeclaredPass, KeyedCounters, OptionValueError, PassCreateError, PassDeclaration, PassHook,
    PassHooks,
};
use ipuc_ir::{Context, Diagnostic, OpId};

pub use cost::{CostModel, DefaultCostModel, OpCostQuery};
pub use rules::RuleGroup;

use analysis::NnAnalysis;
use convert::FunctionGraph;
use cost::ExtractionCost;

/// The cost model extraction uses; a target installs its own.
pub const COST_MODEL: PassHook<dyn CostModel> = PassHook::new(
    "cost-model",
    "Prices each op of a candidate graph during extraction",
    "the target-independent DefaultCostModel",
);

/// The pass.
#[derive(Clone)]
pub struct EqsatFuse {
    max_iterations: usize,
    max_nodes: usize,
    timeout: Duration,
    groups: Vec<RuleGroup>,
    dump_dot: Option<PathBuf>,
    model: Arc<dyn CostModel>,
    rules: Arc<Vec<egg::Rewrite<language::Node, NnAnalysis>>>,
}

ipuc_ir::declare_pass! {
    EqsatFuse => "eqsat-fuse" {
        summary: "Fuse nn subgraphs (GELU, LayerNorm, softmax, linear, attention, QKV) by equality saturation",
        anchor: "func.func",
        hooks: [COST_MODEL],
        options EqsatFuseOptions {
            /// Stop rewriting after this many iterations
            max_iterations: usize = 30 => "max-iterations",
            /// Stop rewriting once the e-graph has this many e-nodes
            max_nodes: usize = 200_000 => "max-nodes",
            /// Stop rewriting after this many milliseconds per block (not deterministic when reached)
            timeout_ms: u64 = 10_000 => "timeout-ms",
            /// Rule groups to run (algebra, gelu, layernorm, softmax, linear, attention, qkv)
            rules: Vec<String> = RuleGroup::ALL.iter().map(|g| g.name().to_string()).collect() => "rules",
            /// Write each saturated e-graph to DIR/<function>.<block>.dot
            dump_dot: String = String::new() => "dump-dot",
        }
        statistics EqsatFuseStatistics {
            /// E-nodes in the saturated e-graphs
            egraph_nodes: u64 => "egraph-nodes",
            /// E-classes in the saturated e-graphs
            egraph_classes: u64 => "egraph-classes",
            /// Rewrite iterations
            iterations: u64 => "iterations",
            /// Blocks whose e-graph saturated
            stop_saturated: u64 => "stop-saturated",
            /// Blocks stopped by max-iterations
            stop_iteration_limit: u64 => "stop-iteration-limit",
            /// Blocks stopped by max-nodes
            stop_node_limit: u64 => "stop-node-limit",
            /// Blocks stopped by timeout-ms
            stop_time_limit: u64 => "stop-time-limit",
            /// Blocks stopped for another reason
            stop_other: u64 => "stop-other",
            /// Ops turned into e-nodes
            ops_converted: u64 => "ops-converted",
            /// Ops built from the extracted terms
            ops_created: u64 => "ops-created",
            /// Blocks left as they were (cyclic or misplaced extraction)
            blocks_unchanged: u64 => "blocks-unchanged",
            /// Times this rule changed the e-graph
            rules_applied: KeyedCounters => "rule",
        }
    }
}

impl EqsatFuse {
    /// The pass with validated `options` and extraction costs from `model`.
    pub fn new(
        o: &EqsatFuseOptions,
        model: Arc<dyn CostModel>,
    ) -> Result<EqsatFuse, PassCreateError> {
        let mut groups = Vec::new();
        for g in &o.rules {
            if g.is_empty() {
                continue;
            }
            let group = RuleGroup::from_name(g).ok_or_else(|| {
                let known: Vec<&str> = RuleGroup::ALL.iter().map(|g| g.name()).collect();
                PassCreateError::InvalidValue {
                    pass: <Self as PassDeclaration>::NAME.into(),
                    key: "rules".into(),
                    value: g.clone(),
                    error: OptionValueError::expected(format!(
                        "a list of rule groups ({})",
                        known.join(", ")
                    )),
                }
            })?;
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        groups.sort();
        Ok(EqsatFuse {
            max_iterations: o.max_iterations,
            max_nodes: o.max_nodes,
            timeout: Duration::from_millis(o.timeout_ms),
            rules: Arc::new(groups.iter().flat_map(|g| g.rules()).collect()),
            groups,
            dump_dot: (!o.dump_dot.is_empty()).then(|| PathBuf::from(&o.dump_dot)),
            model,
        })
    }

    fn run_block(
        &self,
        stats: &mut EqsatFuseStatistics,
        ctx: &mut Context,
        func: OpId,
        block: ipuc_ir::BlockId,
        index: usize,
    ) -> Result<bool, Diagnostic> {
        let analysis = NnAnalysis::new(ctx.resources().clone());
        let mut fg = FunctionGraph::build(ctx, block, analysis::EGraph::new(analysis));
        if fg.num_converted() == 0 {
            return Ok(false);
        }
        let egraph = std::mem::replace(
            &mut fg.egraph,
            analysis::EGraph::new(NnAnalysis::new(ctx.resources().clone())),
        );
        let runner: Runner<language::Node, NnAnalysis, ()> =
            Runner::new(NnAnalysis::new(ctx.resources().clone()))
                .with_egraph(egraph)
                .with_iter_limit(self.max_iterations)
                .with_node_limit(self.max_nodes)
                .with_time_limit(self.timeout)
                .with_scheduler(SimpleScheduler)
                .run(self.rules.iter());
        let (stop, counter) = match &runner.stop_reason {
            Some(StopReason::Saturated) => ("saturated", &mut stats.stop_saturated),
            Some(StopReason::IterationLimit(_)) => {
                ("iteration limit", &mut stats.stop_iteration_limit)
            }
            Some(StopReason::NodeLimit(_)) => ("node limit", &mut stats.stop_node_limit),
            Some(StopReason::TimeLimit(_)) => ("time limit", &mut stats.stop_time_limit),
            _ => ("other", &mut stats.stop_other),
        };
        *counter += 1;
        tracing::debug!(
            "eqsat-fuse: {} iterations, {} e-nodes, {} e-classes, stopped: {stop}",
            runner.iterations.len(),
            runner.egraph.total_number_of_nodes(),
            runner.egraph.number_of_classes()
        );
        stats.iterations += runner.iterations.len() as u64;
        stats.egraph_nodes += runner.egraph.total_number_of_nodes() as u64;
        stats.egraph_classes += runner.egraph.number_of_classes() as u64;
        stats.ops_converted += fg.num_converted() as u64;
        let mut applied: BTreeMap<String, u64> = BTreeMap::new();
        for it in &runner.iterations {
            for (name, n) in &it.applied {
                *applied.entry(name.to_string()).or_default() += *n as u64;
            }
        }
        for g in &self.groups {
            for &name in g.rule_names() {
                let n = applied.get(name).copied().unwrap_or(0);
                stats.rules_applied.add(name, n);
            }
        }
        if let Some(dir) = &self.dump_dot {
            let fname = ctx
                .attr(func, "sym_name")
                .and_then(|a| a.as_str())
                .unwrap_or("anonymous")
                .to_string();
            std::fs::create_dir_all(dir).map_err(|e| {
                Diagnostic::error(
                    ctx.loc(func).clone(),
                    format!(
                        "cannot create e-graph dump directory '{}': {e}",
                        dir.display()
                    ),
                )
            })?;
            let path = dir.join(format!("{fname}.{index}.dot"));
            runner.egraph.dot().to_dot(&path).map_err(|e| {
                Diagnostic::error(
                    ctx.loc(func).clone(),
                    format!("cannot write e-graph dump '{}': {e}", path.display()),
                )
            })?;
        }
        fg.egraph = runner.egraph;
        let cost = ExtractionCost::new(&fg.egraph, self.model.as_ref());
        let extractor = Extractor::new(&fg.egraph, cost);
        let best = |id| extractor.find_best_node(id).clone();
        match fg.rebuild(ctx, &best) {
            Ok(created) => {
                stats.ops_created += created as u64;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!("eqsat-fuse: left a block unchanged: {e:?}");
                stats.blocks_unchanged += 1;
                Ok(false)
            }
        }
    }
}

impl DeclaredPass for EqsatFuse {
    fn create(options: &EqsatFuseOptions, hooks: &PassHooks) -> Result<Self, PassCreateError> {
        let model = hooks
            .get(&COST_MODEL)
            .unwrap_or_else(|| Arc::new(DefaultCostModel));
        EqsatFuse::new(options, model)
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
        stats: &mut EqsatFuseStatistics,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let mut changed = false;
        let mut index = 0;
        for r in ctx.regions(op).to_vec() {
            for b in ctx.region_blocks(r).to_vec() {
                changed |= self.run_block(stats, ctx, op, b, index)?;
                index += 1;
            }
        }
        Ok(PreservedAnalyses::all_unless(changed))
    }
}
