//! Feeds arbitrary text to the parser, then verifies and prints whatever
//! parses (both with and without unregistered dialects). Any panic is a
//! bug, and so is valid IR whose printout does not parse back to the same
//! printout, and so is a difference between pest's parse of each operation
//! whole (the grammar of record) and the other ways of reading: every
//! region body in pieces, and common generic ops by the hand-written reader.
//!
//! Run: `cargo +nightly fuzz run parse fuzz/corpus/parse` from the repository root.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../ir/tests/support/readers.rs"]
mod readers;
use readers::{check_parse_and_print, check_readers_agree};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for allow in [false, true] {
        check_readers_agree(allow, text);
        check_parse_and_print(allow, text);
    }
});
