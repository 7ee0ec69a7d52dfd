//! One shard of a sweep: which seeds of a range it runs, so that N
//! machines split one sweep and a merge knows what each one ran.

use std::fmt;

/// Shard `index` (1-based) of `count`: the seeds whose index in the range
/// (from its start) is `index - 1` modulo `count`. `1/1` is the whole range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shard {
    /// Which shard, 1-based.
    pub index: u64,
    /// How many shards split the range.
    pub count: u64,
}

impl Shard {
    /// The whole range as one shard.
    pub const ALL: Self = Self { index: 1, count: 1 };

    /// Reads `I/N` as `--shard` takes it; the error quotes the text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not I/N"))?;
        let number = |part: &str| {
            part.parse::<u64>()
                .map_err(|_| format!("{text:?}: {part:?} is not a number"))
        };
        let (index, count) = (number(i)?, number(n)?);
        if count == 0 || !(1..=count).contains(&index) {
            return Err(format!("{text:?}: need 1 <= I <= N"));
        }
        Ok(Self { index, count })
    }

    /// Whether the seed at `seed_index` (from the range's start) is this
    /// shard's.
    pub fn contains(self, seed_index: u64) -> bool {
        seed_index % self.count == self.index - 1
    }

    /// How many of this shard's seeds lie in the first `visited` of the
    /// range.
    pub fn seeds_in(self, visited: u64) -> u64 {
        let offset = self.index - 1;
        if visited <= offset {
            0
        } else {
            (visited - offset).div_ceil(self.count)
        }
    }

    /// The index (from the range's start) of this shard's `k`-th seed,
    /// from 0; none past 2^64 - 1. A sweep steps through its own seeds
    /// this way, so one shard of many costs what it runs, not the range.
    pub fn nth_index(self, k: u64) -> Option<u64> {
        k.checked_mul(self.count)?.checked_add(self.index - 1)
    }

    /// This shard's seed indices among the first `visited` of the range,
    /// lowest first.
    pub fn indices(self, visited: u64) -> impl Iterator<Item = u64> {
        let step = usize::try_from(self.count).unwrap_or(usize::MAX);
        (self.index - 1..visited).step_by(step)
    }

    /// The summary file a shard plan names for this shard.
    pub fn summary_file(self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn a_shard_holds_every_count_th_seed_from_its_index() {
        let shard = Shard::parse("2/3").unwrap();
        let mine: Vec<u64> = (0..10).filter(|i| shard.contains(*i)).collect();
        assert_eq!(mine, [1, 4, 7]);
        assert_eq!(shard.indices(10).collect::<Vec<_>>(), mine);
        assert_eq!(shard.seeds_in(10), 3);
        assert_eq!(shard.seeds_in(1), 0);
        assert_eq!(shard.seeds_in(2), 1);
        assert_eq!(shard.to_string(), "2/3");
        assert_eq!(shard.summary_file(), "shard-2-of-3.json");
    }

    #[test]
    fn bad_shards_are_refused_quoting_the_text() {
        assert_eq!(
            Shard::parse("3/2").unwrap_err(),
            "\"3/2\": need 1 <= I <= N"
        );
        assert_eq!(
            Shard::parse("0/0").unwrap_err(),
            "\"0/0\": need 1 <= I <= N"
        );
        assert_eq!(Shard::parse("x").unwrap_err(), "\"x\" is not I/N");
        assert_eq!(
            Shard::parse("1/y").unwrap_err(),
            "\"1/y\": \"y\" is not a number"
        );
    }
}
