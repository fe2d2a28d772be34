//! `cse` takes dominance from the analysis manager and declares what it
//! preserves truthfully: the pass manager (with `verify_analyses`)
//! recomputes every analysis a pass claims to keep and fails the pipeline
//! on a false claim, so these tests fail if CSE claims too much; and the
//! computation counts fail if it claims too little or computes dominance
//! itself.

use std::sync::{Arc, Mutex};

use ipuc_ir::analysis::{AnalysisManager, DominanceInfo, Liveness, PreservedAnalyses};
use ipuc_ir::pass::{
    parse_pipeline, DeclaredPass, PassHook, PassHooks, PassManager, PassManagerOptions,
    PassRegistry,
};
use ipuc_ir::{parse_source, print_op, Context, Diagnostic, OpId, PrintOptions};

/// Where the probe writes the manager's computation count at each run.
const LOG: PassHook<Mutex<Vec<u64>>> =
    PassHook::new("probe-log", "Receives the computation counts", "no log");

/// Asks for dominance and liveness, changes nothing.
#[derive(Clone)]
struct Probe {
    log: Option<Arc<Mutex<Vec<u64>>>>,
}

ipuc_ir::declare_pass! {
    Probe => "probe-analyses" {
        summary: "Request dominance and liveness; log how many analyses were computed so far",
        hooks: [LOG],
    }
}

impl DeclaredPass for Probe {
    fn create(_options: &(), hooks: &PassHooks) -> Result<Self, ipuc_ir::pass::PassCreateError> {
        Ok(Probe {
            log: hooks.get(&LOG),
        })
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
        _stats: &mut (),
    ) -> Result<PreservedAnalyses, Diagnostic> {
        am.get::<DominanceInfo>(ctx, op);
        am.get::<Liveness>(ctx, op);
        if let Some(log) = &self.log {
            log.lock().unwrap().push(am.computations);
        }
        Ok(PreservedAnalyses::all())
    }
}

/// `%x` in the entry block dominates `%y` in `^bb1`: CSE replaces `%y`,
/// which makes `%x` live out of `^bb0` (liveness changes, dominance not).
const ACROSS_BLOCKS: &str = r#"
func.func @f(%a: i32, %c: i1) -> i64 {
  %x = builtin.unrealized_conversion_cast %a : i32 to i64
  "test.cond_br"(%c)[^bb1, ^bb2] : (i1) -> ()
^bb1:
  %y = builtin.unrealized_conversion_cast %a : i32 to i64
  "test.use"(%y) : (i64) -> ()
  "test.br"()[^bb2] : () -> ()
^bb2:
  return %x : i64
}
"#;

/// Nothing to eliminate.
const NOTHING: &str = r#"
func.func @g(%a: i32, %c: i1) -> i64 {
  %x = builtin.unrealized_conversion_cast %a : i32 to i64
  "test.cond_br"(%c)[^bb1, ^bb2] : (i1) -> ()
^bb1:
  "test.br"()[^bb2] : () -> ()
^bb2:
  return %x : i64
}
"#;

fn run(src: &str) -> (String, Vec<u64>) {
    let mut registry = PassRegistry::new();
    ipuc_passes::register_passes(&mut registry).unwrap();
    registry.register::<Probe>().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    registry.install_hook(&LOG, "test", log.clone()).unwrap();
    let mut dialects = ipuc_ir::DialectRegistry::new();
    ipuc_dialects::register_all(&mut dialects);
    dialects.register(ipuc_ir::test_dialect::dialect());
    let mut ctx = Context::new(Arc::new(dialects));
    ctx.allow_unregistered = true;
    let module = parse_source(&mut ctx, "f.mlir", src).unwrap().module;
    let mut pm = PassManager::new(PassManagerOptions {
        verify_analyses: true,
        ..PassManagerOptions::default()
    });
    let pipeline =
        parse_pipeline("builtin.module(func.func(probe-analyses,cse,probe-analyses))").unwrap();
    pm.add_pipeline(&registry, &pipeline).unwrap();
    if let Err(e) = pm.run(&mut ctx, module) {
        panic!("pipeline failed: {e:?}");
    }
    let text = print_op(&ctx, module, &PrintOptions::default());
    let counts = log.lock().unwrap().clone();
    (text, counts)
}

#[test]
fn cse_keeps_dominance_and_drops_liveness_when_it_changes_the_ir() {
    let (text, counts) = run(ACROSS_BLOCKS);
    assert!(text.contains("\"test.use\"(%0)"), "{text}");
    assert_eq!(
        text.matches("unrealized_conversion_cast").count(),
        1,
        "{text}"
    );
    // First probe: dominance and liveness (2). CSE reuses the cached
    // dominance; afterwards only liveness is computed again (3).
    assert_eq!(counts, [2, 3]);
}

#[test]
fn cse_preserves_everything_when_it_changes_nothing() {
    let (_, counts) = run(NOTHING);
    assert_eq!(counts, [2, 2]);
}
