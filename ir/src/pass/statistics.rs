//! Pass statistics: counters a pass declares (with
//! [`declare_pass!`](crate::declare_pass)) and bumps while it runs. The
//! pass manager reports them (`--mlir-pass-statistics`) and merges the
//! counters of the copies that ran in parallel.

/// A named counter a pass reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statistic {
    /// Short name (`num-cse'd`).
    pub name: &'static str,
    /// What it counts.
    pub description: &'static str,
    /// The value.
    pub value: u64,
}

/// The type of one declared statistic field.
pub trait StatisticValue: Default + Clone + Send + Sync + 'static {
    /// Appends the reported counters of this field (declared as `name`).
    fn report(&self, name: &'static str, description: &'static str, out: &mut Vec<Statistic>);
    /// Adds the counts of `other` (a copy that ran in parallel).
    fn merge(&mut self, other: &Self);
}

impl StatisticValue for u64 {
    fn report(&self, name: &'static str, description: &'static str, out: &mut Vec<Statistic>) {
        out.push(Statistic {
            name,
            description,
            value: *self,
        });
    }
    fn merge(&mut self, other: &Self) {
        *self += other;
    }
}

/// A family of counters whose names are known only when the pass runs
/// (e.g. one per rewrite rule), reported in the order they were first
/// counted, each under its own name with the field's description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyedCounters {
    counters: Vec<(&'static str, u64)>,
}

impl KeyedCounters {
    /// Adds `n` to the counter `key` (created at zero if new).
    pub fn add(&mut self, key: &'static str, n: u64) {
        match self.counters.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v += n,
            None => self.counters.push((key, n)),
        }
    }
    /// The counter `key` (zero if never counted).
    pub fn get(&self, key: &str) -> u64 {
        self.counters
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0, |(_, v)| *v)
    }
}

impl StatisticValue for KeyedCounters {
    fn report(&self, _name: &'static str, description: &'static str, out: &mut Vec<Statistic>) {
        out.extend(self.counters.iter().map(|&(name, value)| Statistic {
            name,
            description,
            value,
        }));
    }
    fn merge(&mut self, other: &Self) {
        for &(k, v) in &other.counters {
            self.add(k, v);
        }
    }
}

/// The statistics struct of a pass. [`declare_pass!`](crate::declare_pass)
/// implements it; `()` is the set of passes without statistics.
pub trait PassStatisticSet: Default + Send + Sync + 'static {
    /// Every counter, in declaration order.
    fn report(&self) -> Vec<Statistic>;
    /// Adds the counts of `other`.
    fn merge(&mut self, other: &Self);
}

impl PassStatisticSet for () {
    fn report(&self) -> Vec<Statistic> {
        Vec::new()
    }
    fn merge(&mut self, _other: &Self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_counters_merge_by_key_in_first_seen_order() {
        let mut a = KeyedCounters::default();
        a.add("gelu", 1);
        a.add("linear", 0);
        let mut b = KeyedCounters::default();
        b.add("softmax", 2);
        b.add("gelu", 3);
        a.merge(&b);
        let mut out = Vec::new();
        a.report("rules", "applied", &mut out);
        let got: Vec<(&str, u64)> = out.iter().map(|s| (s.name, s.value)).collect();
        assert_eq!(got, [("gelu", 4), ("linear", 0), ("softmax", 2)]);
        assert_eq!(a.get("softmax"), 2);
        assert_eq!(a.get("none"), 0);
    }
}
