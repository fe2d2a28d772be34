//! Simulating tiles on several host threads.
//!
//! Between two chip-wide syncs the tiles do not interact: exchange words
//! are only resolved at the sync. Each tile's run over a superstep is
//! therefore a function of its own state, and running the tiles on any
//! number of threads gives the same results as running them one after the
//! other, provided that whatever is gathered from them afterwards (faults,
//! arrivals, statistics) is read in tile order. [`TileThreads::map`] keeps
//! that order: its result holds one entry per tile, in the tiles' order,
//! whatever thread ran each.

use std::num::NonZeroUsize;

use rayon::prelude::*;

/// Where the tiles of a superstep run.
pub enum TileThreads {
    /// On the calling thread, in tile order.
    Calling,
    /// On rayon's global pool (sized by `RAYON_NUM_THREADS`, else the
    /// machine's available parallelism).
    Global,
    /// On a pool of its own.
    Pool(rayon::ThreadPool),
}

impl TileThreads {
    /// Threads for `threads` host threads (`None`: rayon's global pool).
    /// A pool that cannot start leaves the work on the calling thread,
    /// which changes the speed only.
    pub fn new(threads: Option<NonZeroUsize>) -> Self {
        match threads.map(NonZeroUsize::get) {
            None if rayon::current_num_threads() == 1 => TileThreads::Calling,
            None => TileThreads::Global,
            Some(1) => TileThreads::Calling,
            Some(n) => match rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("ipuc-sim-{i}"))
                .build()
            {
                Ok(pool) => TileThreads::Pool(pool),
                Err(e) => {
                    tracing::warn!("cannot start {n} simulator threads ({e}): simulating on one");
                    TileThreads::Calling
                }
            },
        }
    }

    /// `f` applied to every tile, results in tile order. A superstep with
    /// fewer than two tiles to run stays on the calling thread.
    pub fn map<T: Send, R: Send>(
        &self,
        tiles: &mut [T],
        f: impl Fn(&mut T) -> R + Sync + Send,
    ) -> Vec<R> {
        match self {
            _ if tiles.len() < 2 => tiles.iter_mut().map(f).collect(),
            TileThreads::Calling => tiles.iter_mut().map(f).collect(),
            // One task per tile: supersteps differ in length from tile to
            // tile, and work stealing evens them out.
            TileThreads::Global => tiles.par_iter_mut().with_max_len(1).map(f).collect(),
            TileThreads::Pool(pool) => {
                pool.install(|| tiles.par_iter_mut().with_max_len(1).map(f).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TileThreads;
    use std::num::NonZeroUsize;

    /// Results come back in tile order on every kind of threads.
    #[test]
    fn results_are_in_tile_order_whatever_the_threads() {
        for threads in [None, Some(1), Some(2), Some(5)] {
            let t = TileThreads::new(threads.and_then(NonZeroUsize::new));
            let mut tiles: Vec<u64> = (0..1000).collect();
            let out = t.map(&mut tiles, |x| {
                *x *= 3;
                *x + 1
            });
            assert_eq!(out, (0..1000).map(|x| 3 * x + 1).collect::<Vec<u64>>());
            assert_eq!(tiles, (0..1000).map(|x| 3 * x).collect::<Vec<u64>>());
        }
    }
}
