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
//! ipuc_passes::register_passes(&mut registry);
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
use ipuc_ir::pass::{Pass, PassInfo, PassOptionDecl, PassOptionKind, PassOptions, Statistic};
use ipuc_ir::{Context, Diagnostic, OpId};

pub use cost::{CostModel, DefaultCostModel, OpCostQuery};
pub use rules::RuleGroup;

use analysis::NnAnalysis;
use convert::FunctionGraph;
use cost::ExtractionCost;

/// The pass name.
pub const NAME: &str = "eqsat-fuse";

/// The pass.
pub struct EqsatFuse {
    max_iterations: usize,
    max_nodes: usize,
    timeout: Duration,
    groups: Vec<RuleGroup>,
    dump_dot: Option<PathBuf>,
    model: Arc<dyn CostModel>,
    rules: Arc<Vec<egg::Rewrite<language::Node, NnAnalysis>>>,
    options_text: String,
    counters: BTreeMap<&'static str, u64>,
}

/// The declared options.
pub fn options() -> Vec<PassOptionDecl> {
    vec![
        PassOptionDecl {
            name: "max-iterations",
            kind: PassOptionKind::UInt,
            default: "30",
            description: "Stop rewriting after this many iterations",
        },
        PassOptionDecl {
            name: "max-nodes",
            kind: PassOptionKind::UInt,
            default: "200000",
            description: "Stop rewriting once the e-graph has this many e-nodes",
        },
        PassOptionDecl {
            name: "timeout-ms",
            kind: PassOptionKind::UInt,
            default: "10000",
            description: "Stop rewriting after this many milliseconds per block (not deterministic when reached)",
        },
        PassOptionDecl {
            name: "rules",
            kind: PassOptionKind::StringList,
            default: "algebra,gelu,layernorm,softmax,linear,attention,qkv",
            description: "Rule groups to run (algebra, gelu, layernorm, softmax, linear, attention, qkv)",
        },
        PassOptionDecl {
            name: "dump-dot",
            kind: PassOptionKind::String,
            default: "",
            description: "Write each saturated e-graph to DIR/<function>.<block>.dot",
        },
    ]
}

/// Registration with the target-independent [`DefaultCostModel`].
pub fn info() -> PassInfo {
    PassInfo {
        name: NAME,
        description: "Fuse nn subgraphs (GELU, LayerNorm, softmax, linear, attention, QKV) by equality saturation",
        options: options(),
        create: |o| {
            EqsatFuse::from_options(o, Arc::new(DefaultCostModel))
                .map(|p| Box::new(p) as Box<dyn Pass>)
        },
    }
}

impl EqsatFuse {
    /// The pass with validated `options` and extraction costs from `model`.
    pub fn from_options(o: &PassOptions, model: Arc<dyn CostModel>) -> Result<EqsatFuse, String> {
        let mut groups = Vec::new();
        for g in o.string_list("rules") {
            if g.is_empty() {
                continue;
            }
            let group = RuleGroup::from_name(&g).ok_or_else(|| {
                let known: Vec<&str> = RuleGroup::ALL.iter().map(|g| g.name()).collect();
                format!(
                    "unknown rule group '{g}' for pass '{NAME}' (groups: {})",
                    known.join(", ")
                )
            })?;
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        groups.sort();
        let dump = o.string("dump-dot");
        Ok(EqsatFuse {
            max_iterations: o.uint("max-iterations").min(usize::MAX as u64) as usize,
            max_nodes: o.uint("max-nodes").min(usize::MAX as u64) as usize,
            timeout: Duration::from_millis(o.uint("timeout-ms")),
            rules: Arc::new(groups.iter().flat_map(|g| g.rules()).collect()),
            groups,
            dump_dot: (!dump.is_empty()).then(|| PathBuf::from(dump)),
            model,
            options_text: o.to_text(),
            counters: BTreeMap::new(),
        })
    }

    fn count(&mut self, name: &'static str, n: u64) {
        *self.counters.entry(name).or_default() += n;
    }

    fn run_block(
        &mut self,
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
        let stop = match &runner.stop_reason {
            Some(StopReason::Saturated) => "stop-saturated",
            Some(StopReason::IterationLimit(_)) => "stop-iteration-limit",
            Some(StopReason::NodeLimit(_)) => "stop-node-limit",
            Some(StopReason::TimeLimit(_)) => "stop-time-limit",
            _ => "stop-other",
        };
        tracing::debug!(
            "eqsat-fuse: {} iterations, {} e-nodes, {} e-classes, {stop}",
            runner.iterations.len(),
            runner.egraph.total_number_of_nodes(),
            runner.egraph.number_of_classes()
        );
        self.count(stop, 1);
        self.count("iterations", runner.iterations.len() as u64);
        self.count("egraph-nodes", runner.egraph.total_number_of_nodes() as u64);
        self.count("egraph-classes", runner.egraph.number_of_classes() as u64);
        self.count("ops-converted", fg.num_converted() as u64);
        let mut applied: BTreeMap<String, u64> = BTreeMap::new();
        for it in &runner.iterations {
            for (name, n) in &it.applied {
                *applied.entry(name.to_string()).or_default() += *n as u64;
            }
        }
        for g in self.groups.clone() {
            for &name in g.rule_names() {
                let n = applied.get(name).copied().unwrap_or(0);
                self.count(name, n);
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
                self.count("ops-created", created as u64);
                Ok(true)
            }
            Err(e) => {
                tracing::warn!("eqsat-fuse: left a block unchanged: {e:?}");
                self.count("blocks-unchanged", 1);
                Ok(false)
            }
        }
    }
}

const STAT_DESCRIPTIONS: &[(&str, &str)] = &[
    ("egraph-nodes", "E-nodes in the saturated e-graphs"),
    ("egraph-classes", "E-classes in the saturated e-graphs"),
    ("iterations", "Rewrite iterations"),
    ("stop-saturated", "Blocks whose e-graph saturated"),
    ("stop-iteration-limit", "Blocks stopped by max-iterations"),
    ("stop-node-limit", "Blocks stopped by max-nodes"),
    ("stop-time-limit", "Blocks stopped by timeout-ms"),
    ("stop-other", "Blocks stopped for another reason"),
    ("ops-converted", "Ops turned into e-nodes"),
    ("ops-created", "Ops built from the extracted terms"),
    (
        "blocks-unchanged",
        "Blocks left as they were (cyclic or misplaced extraction)",
    ),
];

impl Pass for EqsatFuse {
    fn name(&self) -> &str {
        NAME
    }
    fn anchor(&self) -> Option<&str> {
        Some("func.func")
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        _am: &mut AnalysisManager,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        let mut changed = false;
        let mut index = 0;
        for r in ctx.regions(op).to_vec() {
            for b in ctx.region_blocks(r).to_vec() {
                changed |= self.run_block(ctx, op, b, index)?;
                index += 1;
            }
        }
        Ok(if changed {
            PreservedAnalyses::none()
        } else {
            PreservedAnalyses::all()
        })
    }
    fn clone_pass(&self) -> Box<dyn Pass> {
        Box::new(EqsatFuse {
            max_iterations: self.max_iterations,
            max_nodes: self.max_nodes,
            timeout: self.timeout,
            groups: self.groups.clone(),
            dump_dot: self.dump_dot.clone(),
            model: self.model.clone(),
            rules: self.rules.clone(),
            options_text: self.options_text.clone(),
            counters: BTreeMap::new(),
        })
    }
    fn options_text(&self) -> String {
        self.options_text.clone()
    }
    fn statistics(&self) -> Vec<Statistic> {
        let mut out: Vec<Statistic> = STAT_DESCRIPTIONS
            .iter()
            .map(|&(name, description)| Statistic {
                name,
                description,
                value: self.counters.get(name).copied().unwrap_or(0),
            })
            .collect();
        for g in &self.groups {
            for &name in g.rule_names() {
                out.push(Statistic {
                    name,
                    description: "Times this rule changed the e-graph",
                    value: self.counters.get(name).copied().unwrap_or(0),
                });
            }
        }
        out
    }
    fn merge_statistics(&mut self, other: &dyn Pass) {
        for s in other.statistics() {
            self.count(s.name, s.value);
        }
    }
}
