//! ipuc command-line tools: the shared driver code behind `ipu-opt`,
//! `ipu-run`, `ipu-bench`, `ipu-prof`, `ipu-lit` and `filecheck`.

pub mod alloc;
/// `ipu-bench`: AMP throughput and simulator speed, measured on the simulator.
pub mod bench;
pub mod import;
/// The `ipu-lit` test runner: lit-style RUN lines, features, parallel runs,
/// and regeneration of CHECK lines.
pub mod lit;
pub mod opt;
/// Profiles of simulated runs (`ipu-run --profile`) and `ipu-prof`.
pub mod prof;
pub mod registry;
pub mod run;
pub mod upstream;

/// Sends `tracing`'s logs to stderr, as `IPUC_LOG` selects (e.g.
/// `IPUC_LOG=debug`). A process that set up its own subscriber keeps it.
/// Spans log their time when they close (`time.busy`): the compiler's
/// phases are spans at `info` (`IPUC_LOG=ipu-lower=info` times the
/// lowering's planning, blocks, archive and encoding).
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("IPUC_LOG"))
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .try_init();
}
