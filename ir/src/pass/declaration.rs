//! Declarative passes: a pass states its name, summary, anchor, hooks,
//! typed options and statistics once, with [`declare_pass!`](crate::declare_pass); parsing of
//! `{opt=val}`, printing in `--dump-pass-pipeline`, `--list-passes`,
//! statistics reports and the merging of statistics across parallel copies
//! all come from that declaration. The author then writes only what the
//! pass does ([`DeclaredPass`]).
//!
//! ```
//! use ipuc_ir::analysis::{AnalysisManager, PreservedAnalyses};
//! use ipuc_ir::pass::{DeclaredPass, PassCreateError, PassHooks, PassRegistry};
//! use ipuc_ir::{Context, Diagnostic, OpId, WalkOrder};
//!
//! /// Counts the ops of one name.
//! #[derive(Clone)]
//! pub struct CountOps {
//!     name: String,
//! }
//!
//! ipuc_ir::declare_pass! {
//!     CountOps => "count-ops" {
//!         summary: "Count the operations of one name",
//!         options CountOpsOptions {
//!             /// The op name to count
//!             op_name: String = "test.add".into() => "op-name",
//!         }
//!         statistics CountOpsStatistics {
//!             /// Operations with the name
//!             seen: u64 => "num-seen",
//!         }
//!     }
//! }
//!
//! impl DeclaredPass for CountOps {
//!     fn create(options: &CountOpsOptions, _hooks: &PassHooks) -> Result<Self, PassCreateError> {
//!         Ok(CountOps { name: options.op_name.clone() })
//!     }
//!     fn run(
//!         &mut self,
//!         ctx: &mut Context,
//!         op: OpId,
//!         _am: &mut AnalysisManager,
//!         stats: &mut CountOpsStatistics,
//!     ) -> Result<PreservedAnalyses, Diagnostic> {
//!         ctx.walk(op, WalkOrder::PreOrder, &mut |ctx, o| {
//!             stats.seen += u64::from(ctx.name_str(o) == self.name);
//!         });
//!         Ok(PreservedAnalyses::all())
//!     }
//! }
//!
//! let mut registry = PassRegistry::new();
//! registry.register::<CountOps>().unwrap();
//! assert!(registry.help().contains("op-name=<string> - The op name to count (default: test.add)"));
//! let pass = registry.create("count-ops", &[("op-name".into(), "test.mul".into())]).unwrap();
//! assert_eq!(pass.options_text(), "op-name=test.mul");
//! // A second registration under the same name is an error, not a replacement.
//! assert!(registry.register::<CountOps>().is_err());
//! ```

use std::any::Any;

use super::hooks::{HookInfo, PassHooks};
use super::options::{PassCreateError, PassOptionSet};
use super::statistics::{PassStatisticSet, Statistic};
use super::Pass;
use crate::analysis::{AnalysisManager, PreservedAnalyses};
use crate::context::{Context, OpId};
use crate::diagnostics::Diagnostic;

/// What [`declare_pass!`](crate::declare_pass) states about a pass.
pub trait PassDeclaration: Sized + Send + Sync + 'static {
    /// The pipeline name (`canonicalize`).
    const NAME: &'static str;
    /// One line for `--list-passes`.
    const SUMMARY: &'static str;
    /// The op kind the pass runs on (`None`: any op).
    const ANCHOR: Option<&'static str>;
    /// The hooks the pass reads when it is built.
    const HOOKS: &'static [HookInfo];
    /// The typed options.
    type Options: PassOptionSet;
    /// The counters.
    type Statistics: PassStatisticSet;
}

/// What the author of a declared pass writes: how to build it from its
/// options, and what it does to one op.
///
/// Copies for parallel execution are made with `Clone` (statistics are
/// kept apart by the pass manager, so a clone starts them at zero).
pub trait DeclaredPass: PassDeclaration + Clone {
    /// Builds the pass from validated options and the installed hooks;
    /// errors (e.g. an option value outside its set,
    /// [`PassCreateError::InvalidValue`]) say what to write instead.
    fn create(options: &Self::Options, hooks: &PassHooks) -> Result<Self, PassCreateError>;

    /// Runs on `op`, counting into `stats`. Returns the analyses that are
    /// still valid (they stay cached for the next pass), or an error.
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
        stats: &mut Self::Statistics,
    ) -> Result<PreservedAnalyses, Diagnostic>;
}

/// A declared pass with its options and statistics: the [`Pass`] object
/// the pass manager runs.
pub struct PassInstance<P: DeclaredPass> {
    pass: P,
    options: P::Options,
    statistics: P::Statistics,
}

impl<P: DeclaredPass> PassInstance<P> {
    /// Builds `P` with `options`.
    pub fn new(options: P::Options, hooks: &PassHooks) -> Result<Self, PassCreateError> {
        Ok(PassInstance {
            pass: P::create(&options, hooks)?,
            options,
            statistics: P::Statistics::default(),
        })
    }
    /// The counters so far.
    pub fn statistics(&self) -> &P::Statistics {
        &self.statistics
    }
}

impl<P: DeclaredPass> Pass for PassInstance<P> {
    fn name(&self) -> &str {
        P::NAME
    }
    fn anchor(&self) -> Option<&str> {
        P::ANCHOR
    }
    fn run(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        am: &mut AnalysisManager,
    ) -> Result<PreservedAnalyses, Diagnostic> {
        self.pass.run(ctx, op, am, &mut self.statistics)
    }
    fn clone_pass(&self) -> Box<dyn Pass> {
        Box::new(PassInstance::<P> {
            pass: self.pass.clone(),
            options: self.options.clone(),
            statistics: P::Statistics::default(),
        })
    }
    fn options_text(&self) -> String {
        self.options.to_text()
    }
    fn statistics(&self) -> Vec<Statistic> {
        self.statistics.report()
    }
    fn merge_statistics(&mut self, other: &dyn Pass) {
        if let Some(other) = other.as_any().downcast_ref::<PassInstance<P>>() {
            self.statistics.merge(&other.statistics);
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Declares a pass: its pipeline name, summary, optional anchor and hooks,
/// and optional typed options and statistics, each field documented by its
/// doc comment. Generates the options struct (with `Default` from the
/// declared defaults), the statistics struct, and the [`PassDeclaration`]
/// impl; the pass type itself implements [`DeclaredPass`].
///
/// ```text
/// declare_pass! {
///     PassType => "pipeline-name" {
///         summary: "One line for --list-passes",
///         anchor: "func.func",                 // optional
///         hooks: [SOME_HOOK],                  // optional
///         options OptionsStruct {              // optional
///             /// Doc (the --list-passes help)
///             field: Type = default_expr => "option-name",
///         }
///         statistics StatisticsStruct {        // optional
///             /// Doc (the statistics report)
///             field: u64 => "statistic-name",
///         }
///     }
/// }
/// ```
///
/// Option types implement [`PassOptionValue`](super::PassOptionValue)
/// (`bool`, integers, `String`, `Vec<String>`); statistic types implement
/// [`StatisticValue`](super::StatisticValue) (`u64`,
/// [`KeyedCounters`](super::KeyedCounters)). See the
/// [module documentation](self) for a complete pass.
#[macro_export]
macro_rules! declare_pass {
    (
        $pass:ty => $name:literal {
            summary: $summary:literal
            $(, anchor: $anchor:literal)?
            $(, hooks: [$($hook:path),* $(,)?])?
            $(,)?
            $(options $opts:ident {
                $(
                    $(#[doc = $odoc:literal])+
                    $ofield:ident : $oty:ty = $odefault:expr => $oname:literal
                ),* $(,)?
            })?
            $(statistics $stats:ident {
                $(
                    $(#[doc = $sdoc:literal])+
                    $sfield:ident : $sty:ty => $sname:literal
                ),* $(,)?
            })?
        }
    ) => {
        $(
            #[doc = concat!("Options of the `", $name, "` pass.")]
            #[derive(Clone, Debug, PartialEq)]
            pub struct $opts {
                $( $(#[doc = $odoc])+ pub $ofield: $oty, )*
            }

            impl ::core::default::Default for $opts {
                fn default() -> Self {
                    $opts { $( $ofield: $odefault, )* }
                }
            }

            impl $crate::pass::PassOptionSet for $opts {
                fn declarations() -> ::std::vec::Vec<$crate::pass::PassOptionDecl> {
                    let defaults = <Self as ::core::default::Default>::default();
                    ::std::vec![$(
                        $crate::pass::PassOptionDecl {
                            name: $oname,
                            kind: <$oty as $crate::pass::PassOptionValue>::KIND,
                            default: $crate::pass::PassOptionValue::print_option(&defaults.$ofield),
                            description: concat!($($odoc),+).trim(),
                        },
                    )*]
                }
                fn set(&mut self, key: &str, value: &str) -> ::core::result::Result<bool, $crate::pass::OptionValueError> {
                    match key {
                        $( $oname => {
                            self.$ofield = <$oty as $crate::pass::PassOptionValue>::parse_option(value)?;
                            Ok(true)
                        } )*
                        _ => {
                            let _ = value;
                            Ok(false)
                        }
                    }
                }
                fn values(&self) -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                    ::std::vec![$(
                        ($oname, $crate::pass::PassOptionValue::print_option(&self.$ofield)),
                    )*]
                }
            }
        )?

        $(
            #[doc = concat!("Statistics of the `", $name, "` pass.")]
            #[derive(Clone, Debug, Default)]
            pub struct $stats {
                $( $(#[doc = $sdoc])+ pub $sfield: $sty, )*
            }

            impl $crate::pass::PassStatisticSet for $stats {
                fn report(&self) -> ::std::vec::Vec<$crate::pass::Statistic> {
                    let mut out = ::std::vec::Vec::new();
                    $(
                        $crate::pass::StatisticValue::report(
                            &self.$sfield,
                            $sname,
                            concat!($($sdoc),+).trim_ascii_start(),
                            &mut out,
                        );
                    )*
                    out
                }
                fn merge(&mut self, other: &Self) {
                    $( $crate::pass::StatisticValue::merge(&mut self.$sfield, &other.$sfield); )*
                }
            }
        )?

        impl $crate::pass::PassDeclaration for $pass {
            const NAME: &'static str = $name;
            const SUMMARY: &'static str = $summary;
            const ANCHOR: ::core::option::Option<&'static str> =
                $crate::declare_pass!(@anchor $($anchor)?);
            const HOOKS: &'static [$crate::pass::HookInfo] = &[$($($hook.info),*)?];
            type Options = $crate::declare_pass!(@type $($opts)?);
            type Statistics = $crate::declare_pass!(@type $($stats)?);
        }
    };
    (@anchor) => { ::core::option::Option::None };
    (@anchor $anchor:literal) => { ::core::option::Option::Some($anchor) };
    (@type) => { () };
    (@type $t:ident) => { $t };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::{PassHook, PassOptionKind, PassRegistry, RegistrationError};
    use std::sync::Arc;

    trait Flavour: Send + Sync {
        fn name(&self) -> &'static str;
    }
    struct Sweet;
    impl Flavour for Sweet {
        fn name(&self) -> &'static str {
            "sweet"
        }
    }
    const FLAVOUR: PassHook<dyn Flavour> = PassHook::new("flavour", "Picks a flavour", "plain");

    /// Counts the ops it runs on; remembers the flavour it was built with.
    #[derive(Clone)]
    struct Probe {
        flavour: &'static str,
    }

    crate::declare_pass! {
        Probe => "probe" {
            summary: "A pass for testing declarations",
            anchor: "test.isolated",
            hooks: [FLAVOUR],
            options ProbeOptions {
                /// A limit
                /// over two doc lines
                limit: u32 = 4 => "limit",
                /// Names to skip
                skip: Vec<String> = vec!["a".into()] => "skip",
                /// Be loud
                loud: bool = false => "loud",
            }
            statistics ProbeStatistics {
                /// Ops visited
                visited: u64 => "num-visited",
                /// Ops by name
                by_name: crate::pass::KeyedCounters => "by-name",
            }
        }
    }

    impl DeclaredPass for Probe {
        fn create(_options: &ProbeOptions, hooks: &PassHooks) -> Result<Self, PassCreateError> {
            Ok(Probe {
                flavour: hooks.get(&FLAVOUR).map_or("plain", |f| f.name()),
            })
        }
        fn run(
            &mut self,
            ctx: &mut Context,
            op: OpId,
            _am: &mut AnalysisManager,
            stats: &mut ProbeStatistics,
        ) -> Result<PreservedAnalyses, Diagnostic> {
            stats.visited += 1;
            stats.by_name.add(self.flavour, 1);
            let _ = (ctx, op);
            Ok(PreservedAnalyses::all())
        }
    }

    #[test]
    fn the_declaration_gives_options_help_and_defaults() {
        let decls = ProbeOptions::declarations();
        let names: Vec<&str> = decls.iter().map(|d| d.name).collect();
        assert_eq!(names, ["limit", "skip", "loud"]);
        assert_eq!(decls[0].kind, PassOptionKind::UInt);
        assert_eq!(decls[0].description, "A limit over two doc lines");
        assert_eq!(decls[1].default, "a");
        let mut r = PassRegistry::new();
        r.register::<Probe>().unwrap();
        let help = r.help();
        assert!(help.contains("  --probe "), "{help}");
        assert!(
            help.contains("limit=<uint> - A limit over two doc lines (default: 4)"),
            "{help}"
        );
        assert!(
            help.contains("hook flavour = none installed: plain - Picks a flavour"),
            "{help}"
        );
        assert_eq!(r.get("probe").unwrap().anchor, Some("test.isolated"));
    }

    #[test]
    fn options_parse_print_only_what_differs_and_report_bad_values() {
        let o = ProbeOptions::parse(
            "probe",
            &[
                ("loud".into(), "".into()),
                ("limit".into(), "4".into()),
                ("skip".into(), "x,y".into()),
            ],
        )
        .unwrap();
        assert!(o.loud);
        assert_eq!(o.skip, ["x", "y"]);
        // Declaration order; `limit` equals its default and is left out.
        assert_eq!(o.to_text(), "skip=x,y loud=true");
        let e = ProbeOptions::parse("probe", &[("limit".into(), "-2".into())]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid value '-2' for option 'limit' of pass 'probe': expected uint (from 0 to 4294967295)"
        );
        let e = ProbeOptions::parse("probe", &[("limits".into(), "2".into())]).unwrap_err();
        assert_eq!(
            e,
            crate::pass::PassCreateError::UnknownOption {
                pass: "probe".into(),
                key: "limits".into(),
                known: vec!["limit", "skip", "loud"],
            }
        );
        assert_eq!(
            e.to_string(),
            "unknown option 'limits' for pass 'probe' (options: limit, skip, loud)"
        );
    }

    #[test]
    fn a_name_or_hook_registered_twice_is_an_error() {
        let mut r = PassRegistry::new();
        r.register::<Probe>().unwrap();
        let e = r.register::<Probe>().unwrap_err();
        assert!(matches!(
            e,
            RegistrationError::DuplicatePass { name: "probe", .. }
        ));
        assert!(e
            .to_string()
            .starts_with("pass 'probe' is registered twice (by "));
        r.install_hook(&FLAVOUR, "sweet", Arc::new(Sweet)).unwrap();
        let e = r
            .install_hook(&FLAVOUR, "sour", Arc::new(Sweet))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "hook 'flavour' already has the implementation 'sweet'; cannot install 'sour' as well"
        );
    }

    #[test]
    fn installed_hooks_reach_the_pass_and_the_listing() {
        let mut r = PassRegistry::new();
        r.register::<Probe>().unwrap();
        r.install_hook(&FLAVOUR, "sweet", Arc::new(Sweet)).unwrap();
        assert!(r.help().contains("hook flavour = sweet - Picks a flavour"));
        let mut ctx = Context::new(Arc::new(crate::DialectRegistry::new()));
        let module = crate::parse_source(&mut ctx, "m.mlir", "").unwrap().module;
        let mut pass = r.create("probe", &[]).unwrap();
        pass.run(&mut ctx, module, &mut AnalysisManager::new())
            .unwrap();
        let stats = pass.statistics();
        assert_eq!((stats[1].name, stats[1].value), ("sweet", 1));
    }

    #[test]
    fn clones_start_from_zero_and_merge_back() {
        let r = {
            let mut r = PassRegistry::new();
            r.register::<Probe>().unwrap();
            r
        };
        let mut ctx = Context::new(Arc::new(crate::DialectRegistry::new()));
        let module = crate::parse_source(&mut ctx, "m.mlir", "").unwrap().module;
        let mut am = AnalysisManager::new();
        let mut a = r.create("probe", &[]).unwrap();
        a.run(&mut ctx, module, &mut am).unwrap();
        let mut b = a.clone_pass();
        assert_eq!(b.statistics()[0].value, 0, "a clone starts at zero");
        b.run(&mut ctx, module, &mut am).unwrap();
        b.run(&mut ctx, module, &mut am).unwrap();
        a.merge_statistics(b.as_ref());
        let got: Vec<(&str, u64)> = a.statistics().iter().map(|s| (s.name, s.value)).collect();
        assert_eq!(got, [("num-visited", 3), ("plain", 3)]);
    }
}
