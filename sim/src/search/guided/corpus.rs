//! The guided search's corpus: the plans that reached something no run
//! before them had (a probe, a pair of probes, an abstract state) or set
//! a record on a guidance figure, each with energy from how rare what it
//! reached still is.

use std::collections::BTreeMap;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::signature::{FIGURES, Feature, Feedback, is_probe, is_sequence, is_state};
use crate::model::RunSpec;
use crate::search::shrink::plan_size;

/// One kept plan.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The plan.
    pub spec: RunSpec,
    /// Its features, as the corpus numbers them, with each one's first
    /// instant in the run.
    features: Vec<(u32, i64)>,
}

/// The odds of drawing a parent for a probe, a pair of probes, or an
/// abstract state, in thousandths: the probes are few and each names a
/// situation the contract cares about, so they get odds of their own
/// rather than being outnumbered by the states.
/// The last share goes to the plans holding a guidance figure's record,
/// which the search keeps pushing.
const CLASS_ODDS_PERMILLE: [u32; 5] = [200, 100, 150, 400, 150];

/// Probes, pairs of probes, states, sequences; the records are class 4.
fn class_of(feature: Feature) -> usize {
    if is_state(feature) {
        2
    } else if is_sequence(feature) {
        3
    } else if is_probe(feature) {
        0
    } else {
        1
    }
}

/// Each class's features that a kept plan reached, with their rarity's
/// running sum, for drawing parents (built once a batch).
#[derive(Debug, Default)]
pub(crate) struct Chooser {
    classes: [(Vec<u32>, Vec<f64>); 4],
}

/// Kept plans that reached one feature, the newest few.
const HOLDERS_MAX: usize = 32;

/// Plans kept, and how often each feature has been reached over every run
/// the corpus observed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Corpus {
    entries: Vec<Entry>,
    /// A dense number per feature, in the order first reached.
    numbers: BTreeMap<Feature, u32>,
    /// Runs that reached each feature, by its dense number.
    hits: Vec<u64>,
    /// Each feature by its dense number.
    features: Vec<Feature>,
    /// The most extreme value of each figure so far.
    best: [Option<i64>; FIGURES],
    /// For each feature by its dense number, the newest kept plans that
    /// reached it (a figure's record holders are kept under its own).
    holders: Vec<Vec<u32>>,
    /// The plan holding each figure's record.
    record_holders: [Option<u32>; FIGURES],
}

impl Corpus {
    /// Plans kept.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The kept plans, oldest first.
    pub(crate) fn specs(&self) -> impl Iterator<Item = &RunSpec> {
        self.entries.iter().map(|entry| &entry.spec)
    }

    /// Distinct features of every kind reached so far.
    pub(crate) fn features_reached(&self) -> usize {
        self.features.len()
    }

    /// Distinct abstract states reached so far.
    pub(crate) fn states_reached(&self) -> usize {
        self.features.iter().filter(|&&f| is_state(f)).count()
    }

    /// The most extreme value of each guidance figure so far, as measured
    /// (a margin's smallest, an overlap's longest).
    pub(crate) fn records(&self) -> BTreeMap<&'static str, i64> {
        let names = super::signature::Figures::default()
            .extremes()
            .map(|(name, _)| name);
        names
            .into_iter()
            .zip(self.best)
            .filter_map(|(name, best)| {
                // Margins are kept negated (larger is nearer the edge).
                let value = if name.ends_with("margin") {
                    -best?
                } else {
                    best?
                };
                Some((name, value))
            })
            .collect()
    }

    /// Counts what `spec`'s run reached, and keeps the plan when it reached
    /// a feature never seen or set a record (not when `failed`: a failing
    /// plan is a finding, and mutating it would find it again). Returns
    /// whether it was kept.
    pub(crate) fn observe(&mut self, spec: &RunSpec, feedback: &Feedback, failed: bool) -> bool {
        let mut new = false;
        let mut numbered = Vec::with_capacity(feedback.features.len());
        for (&feature, &first_ms) in &feedback.features {
            let number = *self.numbers.entry(feature).or_insert_with(|| {
                new = true;
                self.features.push(feature);
                self.hits.push(0);
                self.holders.push(Vec::new());
                u32::try_from(self.features.len() - 1).expect("fewer than 2^32 features")
            });
            self.hits[number as usize] += 1;
            numbered.push((number, first_ms));
        }
        let index = u32::try_from(self.entries.len()).expect("fewer than 2^32 plans");
        let mut records = 0;
        let extremes = feedback.figures.extremes();
        for ((best, holder), (_, value)) in self
            .best
            .iter_mut()
            .zip(&mut self.record_holders)
            .zip(extremes)
        {
            if let Some(value) = value
                && best.is_none_or(|b| value > b)
                && !failed
            {
                *best = Some(value);
                *holder = Some(index);
                records += 1;
            }
        }
        let keep = !failed && (new || records > 0);
        if keep {
            for &(number, _) in &numbered {
                let holders = &mut self.holders[number as usize];
                if holders.len() == HOLDERS_MAX {
                    holders.remove(0);
                }
                holders.push(index);
            }
            self.entries.push(Entry {
                spec: spec.clone(),
                features: numbered,
            });
        }
        keep
    }

    /// How parents are drawn until the next batch: see [`Chooser`].
    pub(crate) fn chooser(&self) -> Chooser {
        let mut classes: [(Vec<u32>, Vec<f64>); 4] = Default::default();
        for (number, &feature) in self.features.iter().enumerate() {
            if self.holders[number].is_empty() {
                continue;
            }
            let (numbers, cumulative) = &mut classes[class_of(feature)];
            let weight = 1.0 / self.hits[number] as f64;
            numbers.push(u32::try_from(number).expect("fewer than 2^32 features"));
            cumulative.push(cumulative.last().copied().unwrap_or(0.0) + weight);
        }
        Chooser { classes }
    }

    /// A parent: a class of feature by fixed odds, a feature of it with
    /// odds in proportion to its rarity (one over the runs that reached
    /// it), then one of the kept plans that reached it. Returns the plan's
    /// index and, when the feature is a state, the instant that plan's run
    /// first reached it (where a fork cuts).
    pub(crate) fn choose(&self, chooser: &Chooser, rng: &mut ChaCha8Rng) -> (usize, Option<i64>) {
        assert!(
            !self.entries.is_empty(),
            "a parent from a corpus with plans"
        );
        let mut class = CLASS_ODDS_PERMILLE.len() - 1;
        let mut point = rng.gen_range(0..1_000);
        for (at, odds) in CLASS_ODDS_PERMILLE.iter().enumerate() {
            if point < *odds {
                class = at;
                break;
            }
            point -= odds;
        }
        if class == 4 {
            let held: Vec<u32> = self.record_holders.iter().flatten().copied().collect();
            let entry = if held.is_empty() {
                rng.gen_range(0..self.entries.len())
            } else {
                held[rng.gen_range(0..held.len())] as usize
            };
            return (entry, self.rarest_state_ms(entry));
        }
        let (numbers, cumulative) = &chooser.classes[class];
        let Some(&total) = cumulative.last() else {
            return (rng.gen_range(0..self.entries.len()), None);
        };
        let point = rng.gen_range(0.0..total);
        let at = cumulative
            .partition_point(|&c| c <= point)
            .min(numbers.len() - 1);
        let number = numbers[at] as usize;
        let holders = &self.holders[number];
        // Half the time the smallest plan that reached the feature (AFL's
        // favoured input): children of ever larger plans cost ever more
        // per run, and an hour's campaign slowed threefold without it.
        let entry = if rng.gen_bool(0.5) {
            *holders
                .iter()
                .rev()
                .min_by_key(|&&index| plan_size(&self.entries[index as usize].spec))
                .expect("a chosen feature has holders") as usize
        } else {
            holders[rng.gen_range(0..holders.len())] as usize
        };
        let first_ms = (is_state(self.features[number]) || is_sequence(self.features[number]))
            .then(|| {
                self.entries[entry]
                    .features
                    .iter()
                    .find(|(n, _)| *n as usize == number)
                    .map(|&(_, first_ms)| first_ms)
            })
            .flatten();
        (entry, first_ms.or_else(|| self.rarest_state_ms(entry)))
    }

    /// The entry's plan.
    pub(crate) fn spec(&self, index: usize) -> &RunSpec {
        &self.entries[index].spec
    }

    /// The instant the entry's run first reached its rarest abstract
    /// state: where a fork keeps the plan and redraws what follows.
    pub(crate) fn rarest_state_ms(&self, index: usize) -> Option<i64> {
        self.entries[index]
            .features
            .iter()
            .filter(|(number, _)| is_state(self.features[*number as usize]))
            .min_by_key(|(number, first_ms)| (self.hits[*number as usize], *first_ms))
            .map(|&(_, first_ms)| first_ms)
    }
}
