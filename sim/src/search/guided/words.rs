//! A feature of the guided search's signature in words, for a person
//! reading why a failure happened (`sim explore --hints`).

use super::signature::{
    CONTEXTS, Feature, NOTICED, SEQUENCES, STATES, is_probe, is_sequence, is_state,
};
use crate::checker::PROBES;

/// What each [`Noticed`] kind is, in words.
const NOTICED_WORDS: [&str; NOTICED] = [
    "a corrupt reply",
    "a null renewal",
    "a fenced delete",
    "a failed call",
    "stop()",
    "its clock stepped forward",
    "its clock stepped back",
    "a late grant",
    "a pause",
    "a cut",
    "a capped term",
    "its clock stepped forward while it led",
];

const CONTEXT_WORDS: [&str; CONTEXTS] = [
    "",
    " (a delete out)",
    " (a renewal out)",
    " (a delete and a renewal out)",
];

/// Each event code's name (see `signature::event_code`).
const EVENT_WORDS: [&str; 27] = [
    "another event",
    "acquire sent",
    "renew sent",
    "release sent",
    "delete sent",
    "acquire answered",
    "renew answered",
    "release answered",
    "delete answered",
    "lease granted",
    "lease refused",
    "lease revoked",
    "lease released",
    "rows deleted",
    "delete fenced",
    "a lock wait",
    "a rollback",
    "a statement aborted",
    "a term ended",
    "stop() called",
    "stop() returned",
    "a pause",
    "a cut",
    "a crash",
    "a restart",
    "a clock step",
    "the standby stalled",
];

/// `feature` in words, for a person reading why a failure happened;
/// `None` for a pair of probes (too many to be a useful hint).
pub(crate) fn describe(feature: Feature) -> Option<String> {
    if is_probe(feature) {
        let (name, _) = PROBES.get(usize::try_from(feature).ok()?)?;
        return Some(format!("probe {name}"));
    }
    if is_state(feature) {
        let code = feature - STATES;
        let event = EVENT_WORDS.get((code & 63) as usize).copied()?;
        let believers = ["none", "one", "two or more"][((code >> 6) & 3).min(2) as usize];
        let row = [
            "no holder",
            "an expired holder",
            "held by a believer",
            "held by a replica that does not believe it",
        ][((code >> 8) & 3) as usize];
        let ops: Vec<&str> = ["acquire", "renew", "release", "delete"]
            .iter()
            .enumerate()
            .filter(|(bit, _)| (code >> 10) & (1 << bit) != 0)
            .map(|(_, op)| *op)
            .collect();
        let in_flight = if ops.is_empty() {
            "nothing".to_owned()
        } else {
            ops.join("+")
        };
        let orphan = if (code >> 14) & 1 == 1 {
            "; a delete out from a replica that no longer leads"
        } else {
            ""
        };
        return Some(format!(
            "state at {event}: replicas that believe they lead: {believers}; lease row: {row}; in flight: {in_flight}{orphan}"
        ));
    }
    if !is_sequence(feature) {
        return None;
    }
    let code = feature - SEQUENCES;
    let kind = |k: u64| NOTICED_WORDS.get(k as usize).copied();
    let noticed = |n: u64| {
        Some(format!(
            "{}{}",
            kind(n / CONTEXTS as u64)?,
            CONTEXT_WORDS[(n % CONTEXTS as u64) as usize]
        ))
    };
    if code >= 1 << 20 {
        let code = code - (1 << 20);
        let times = if code % 16 >= 4 {
            "4 or more times".to_owned()
        } else {
            format!("{} times", code % 16)
        };
        Some(format!("one life: {} {times}", kind(code / 16)?))
    } else if code >= 1 << 16 {
        let code = code - (1 << 16);
        Some(format!(
            "one life: {}, then {}, then {}",
            kind(code / 256)?,
            kind(code / 16 % 16)?,
            kind(code % 16)?
        ))
    } else {
        Some(format!(
            "one life: {}, then {}",
            noticed(code / 64)?,
            noticed(code % 64)?
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::guided::signature::{Noticed, PAIRS, pair, repeat, triple};

    #[test]
    fn every_family_has_words_and_pairs_of_probes_have_none() {
        let probe = describe(0).expect("a probe");
        assert!(probe.starts_with("probe "), "{probe}");
        assert_eq!(describe(PAIRS), None);
        let corrupt_during_delete = Noticed::CorruptReply as usize * CONTEXTS + 1;
        let null = Noticed::NullRenewal as usize * CONTEXTS;
        assert_eq!(
            describe(pair(null, corrupt_during_delete)).as_deref(),
            Some("one life: a null renewal, then a corrupt reply (a delete out)")
        );
        assert_eq!(
            describe(triple(0, 1, 10)).as_deref(),
            Some("one life: a corrupt reply, then a null renewal, then a capped term")
        );
        assert_eq!(
            describe(repeat(Noticed::Paused as usize, 9)).as_deref(),
            Some("one life: a pause 4 or more times")
        );
        // An expired holder, a renew and a delete in flight, an orphan.
        let code = 13 | (1 << 6) | (1 << 8) | (0b1010 << 10) | (1 << 14);
        assert_eq!(
            describe(STATES + code).as_deref(),
            Some(
                "state at rows deleted: replicas that believe they lead: one; \
                 lease row: an expired holder; in flight: renew+delete; \
                 a delete out from a replica that no longer leads"
            )
        );
    }
}
