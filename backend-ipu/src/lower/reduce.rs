//! Reducing the partial products of a K split: the `size` tiles that
//! computed the same block of Y over different parts of K sum their
//! partials by recursive halving, which moves each partial element once in
//! total and needs one sender per receiver in every round.
//!
//! The tiles of a group are numbered by their K part `0..size` (a power of
//! two). Every tile starts owning all `rows` rows of the block. In round
//! `t` a tile and its partner (its position with bit `t` flipped) own the
//! same rows `[lo, hi)`; they split them at `mid = lo + ceil((hi - lo) / 2)`:
//! the tile whose bit `t` is 0 keeps `[lo, mid)`, the other `[mid, hi)`.
//! Each sends the partner the rows the partner keeps (all output groups of
//! those rows) and adds what it receives to the rows it keeps. After
//! `log2(size)` rounds the rows are partitioned over the group and each
//! tile holds the full sums of its rows.
//!
//! A round is one superstep: after a sync, the exchange (each tile arms
//! its receive window, then sends once the partner is sure to be armed),
//! then, once the partner's last word is sure to have landed
//! ([`super::exchange::received_by`]), the adds, with no sync between
//! (a fence, see the simulator's module doc); the next round's sync
//! closes them.

/// Syncs a reduction round takes, on every tile of the program (those
/// outside the product's K split too).
pub const SYNCS_PER_ROUND: u32 = 1;

/// One round of one tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Round {
    /// The partner's position in the group.
    pub partner: u32,
    /// Rows owned before the round.
    pub before: (u32, u32),
    /// Rows kept: the partner's partials of them arrive and are added.
    pub keep: (u32, u32),
    /// Rows given: sent to the partner.
    pub give: (u32, u32),
}

/// Rows in a half-open range.
pub fn len((lo, hi): (u32, u32)) -> u32 {
    hi - lo
}

/// The rounds of the tile at `position` of a group of `size` tiles (a
/// power of two) reducing a block of `rows` rows.
pub fn rounds(position: u32, size: u32, rows: u32) -> Vec<Round> {
    debug_assert!(size.is_power_of_two() && position < size);
    let mut owned = (0, rows);
    (0..size.trailing_zeros())
        .map(|t| {
            let (lo, hi) = owned;
            let mid = lo + (hi - lo).div_ceil(2);
            let (keep, give) = if position & (1 << t) == 0 {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            owned = keep;
            Round {
                partner: position ^ (1 << t),
                before: (lo, hi),
                keep,
                give,
            }
        })
        .collect()
}

/// The rows the tile at `position` owns after the reduction.
pub fn owned(position: u32, size: u32, rows: u32) -> (u32, u32) {
    rounds(position, size, rows)
        .last()
        .map_or((0, rows), |r| r.keep)
}

/// The largest number of rows any tile keeps in any round (the receive and
/// result buffers are sized for it).
pub fn max_keep(size: u32, rows: u32) -> u32 {
    if size == 1 {
        0
    } else {
        rows.div_ceil(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partners_agree_and_the_rows_end_partitioned() {
        for size in [1u32, 2, 4, 8, 16] {
            for rows in [1u32, 3, 7, 16, 46] {
                let mut seen = vec![0u32; rows as usize];
                for p in 0..size {
                    let rs = rounds(p, size, rows);
                    assert_eq!(rs.len(), size.trailing_zeros() as usize);
                    for (t, r) in rs.iter().enumerate() {
                        let q = rounds(r.partner, size, rows)[t];
                        // Same rows before; each gives what the other keeps.
                        assert_eq!(q.before, r.before);
                        assert_eq!(q.give, r.keep);
                        assert_eq!(q.keep, r.give);
                        assert!(len(r.keep) <= max_keep(size, rows));
                    }
                    let (lo, hi) = owned(p, size, rows);
                    for r in lo..hi {
                        seen[r as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "{size} {rows}: {seen:?}");
            }
        }
    }

    #[test]
    fn every_partial_element_moves_once_in_total() {
        // Each round a tile sends what it gives; over the group each row of
        // each tile's partial leaves it at most once, and the totals sum to
        // rows * (size - 1).
        let (size, rows) = (8u32, 46u32);
        let sent: u32 = (0..size)
            .flat_map(|p| rounds(p, size, rows))
            .map(|r| len(r.give))
            .sum();
        assert_eq!(sent, rows * (size - 1));
    }
}
