//! The tools' allocator: mimalloc, tuned for a compiler's allocations.
//!
//! A compile allocates and frees millions of small IR objects in waves
//! (a block's tile programs, then their assembly). mimalloc's default
//! returns a freed page to the OS 10 ms later (its *purge delay*), so each
//! wave faults its pages back in and the kernel zeroes them again: on
//! siglip-small's compile that was a third of the run (perf:
//! `clear_page_erms`), and timing-dependent (8 to 20 s for the same
//! compile). [`keep_freed_memory`] turns purging off: freed pages stay
//! with the process for its next allocations. The peak resident memory
//! is the same (measured: 4.35 GB either way on siglip-small); memory is
//! returned when the process exits.

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_t`,
/// which the Rust bindings do not name).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Turns mimalloc's purging of freed memory off (see the module doc).
/// Call it first thing in `main`, in a binary whose global allocator is
/// `mimalloc::MiMalloc`; `MIMALLOC_PURGE_DELAY` in the environment still
/// overrides it.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an option mimalloc reads on its next purge; any
        // value is valid for this option.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
}
