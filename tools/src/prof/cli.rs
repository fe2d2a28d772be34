//! Command-line flags and dispatch of `ipu-prof`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::schema::ProfileData;
use super::views;

/// Answer questions about a profile written by `ipu-run --profile DIR`.
#[derive(Parser, Debug)]
#[command(
    name = "ipu-prof",
    about = "Read a profile written by `ipu-run MODEL --device sim --profile DIR`",
    after_help = "Without a command: the top ops, the superstep table and the cost model's error."
)]
pub struct Cli {
    /// The profile directory (holding profile.json).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Print JSON (one value on one line) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to show.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `ipu-prof`'s questions.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// The `nn` ops by simulated cycles, with their codelets.
    Top {
        /// How many ops.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
    /// Per superstep: its step, cycles, the busiest tile's compute,
    /// exchange and sync wait, bytes exchanged and its codelets.
    Supersteps,
    /// One tile's memory map at a superstep: what lives where, the free
    /// ranges and the fragmentation.
    Memory {
        /// The tile.
        #[arg(long)]
        tile: u32,
        /// The superstep.
        #[arg(long, default_value_t = 0)]
        superstep: usize,
    },
    /// The cost model's estimate against the simulated cycles, per step
    /// and per op kind.
    Error,
    /// Each step that runs products: its multiply-accumulates against the
    /// chip's AMP peak over its simulated cycles.
    Gemms,
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("views serialize") + "\n"
}

/// Runs `ipu-prof`; the text to print, or the error. The text of a
/// truncated profile starts with a line that says so
/// ([`super::schema::Truncated::note`]); its JSON without a command has
/// the `truncated` object.
pub fn run(cli: Cli) -> Result<String, String> {
    let p = super::read(&cli.dir)?;
    let note = match (&p.truncated, cli.json) {
        (Some(t), false) => format!("note: {}\n", t.note()),
        _ => String::new(),
    };
    Ok(note + &answer(&p, cli.command, cli.json)?)
}

/// The answer to `command` about `p`, as text or JSON.
fn answer(p: &ProfileData, command: Option<Command>, as_json: bool) -> Result<String, String> {
    Ok(match (command, as_json) {
        (None, false) => format!(
            "{}\n{}\n{}",
            views::top_ops_text(p, 10),
            views::supersteps_text(p),
            views::cost_error_text(p)
        ),
        (None, true) => json(&serde_json::json!({
            "top": views::top_ops(p),
            "supersteps": views::supersteps(p),
            "error": cost_error_json(p),
            "truncated": p.truncated,
        })),
        (Some(Command::Top { limit }), false) => views::top_ops_text(p, limit),
        (Some(Command::Top { limit }), true) => json(
            &views::top_ops(p)
                .into_iter()
                .take(limit)
                .collect::<Vec<_>>(),
        ),
        (Some(Command::Supersteps), false) => views::supersteps_text(p),
        (Some(Command::Supersteps), true) => json(&views::supersteps(p)),
        (Some(Command::Memory { tile, superstep }), j) => {
            let m = views::memory(p, tile, superstep)?;
            if j {
                json(&m)
            } else {
                views::memory_text(&m, p.memory_base, p.memory_end)
            }
        }
        (Some(Command::Error), false) => views::cost_error_text(p),
        (Some(Command::Error), true) => json(&cost_error_json(p)),
        (Some(Command::Gemms), false) => views::gemms_text(p),
        (Some(Command::Gemms), true) => json(&views::gemms(p)),
    })
}

fn cost_error_json(p: &ProfileData) -> serde_json::Value {
    let (steps, kinds) = views::cost_error(p);
    serde_json::json!({"steps": steps, "kinds": kinds})
}
