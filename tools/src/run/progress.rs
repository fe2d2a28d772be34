//! What a compiled run is doing, on stderr: one line with a spinner, the
//! phase (`importing`, `lowering`, `simulating`, ...), the phases done of
//! the run's total and the time spent, so that a long compile or simulation
//! (so400m: minutes) shows where it is. Drawn by `indicatif`, which draws
//! only on a terminal: with stderr redirected (CI, `2>file`) nothing is
//! written, and stdout (the report, or `--json`'s one line) is never
//! touched. The line is cleared when the run ends.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The phases of one run.
pub struct Phases {
    bar: ProgressBar,
}

impl Phases {
    /// `total` phases, drawn on stderr (when it is a terminal).
    pub fn new(total: u64) -> Self {
        Self::with_target(total, ProgressDrawTarget::stderr())
    }

    /// `total` phases, drawn on `target`.
    pub fn with_target(total: u64, target: ProgressDrawTarget) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({pos}/{len} done, {elapsed})")
                .expect("the template is valid"),
        );
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Phases { bar }
    }

    /// Marks the previous phase done (if any) and starts `what`.
    pub fn start(&self, what: &'static str) {
        if !self.bar.message().is_empty() {
            self.bar.inc(1);
        }
        tracing::info!(phase = what, "ipu-run");
        self.bar.set_message(what);
    }

    /// Writes `text` to stderr with the phase's line cleared meanwhile
    /// (redrawn after it), so the two do not interleave.
    pub fn print(&self, text: &str) {
        self.bar.suspend(|| eprint!("{text}"));
    }

    /// Ends the last phase and clears the line.
    pub fn finish(&self) {
        self.bar.inc(1);
        self.bar.finish_and_clear();
    }
}

impl Drop for Phases {
    fn drop(&mut self) {
        // A run that fails midway clears its line too.
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use indicatif::{InMemoryTerm, TermLike};

    #[test]
    fn each_phase_shows_its_name_and_the_count_done() {
        let term = InMemoryTerm::new(4, 80);
        let phases = Phases::with_target(
            3,
            ProgressDrawTarget::term_like(Box::new(term.clone()) as Box<dyn TermLike>),
        );
        phases.start("importing");
        phases.bar.tick();
        assert!(
            term.contents().contains("importing (0/3 done"),
            "{}",
            term.contents()
        );
        phases.start("lowering");
        phases.bar.tick();
        assert!(
            term.contents().contains("lowering (1/3 done"),
            "{}",
            term.contents()
        );
        phases.finish();
        assert_eq!(term.contents().trim(), "", "the line is cleared at the end");
    }

    #[test]
    fn without_a_terminal_nothing_is_drawn() {
        let phases = Phases::with_target(2, ProgressDrawTarget::hidden());
        phases.start("importing");
        assert!(phases.bar.is_hidden());
    }
}
