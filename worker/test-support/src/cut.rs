//! A cut in the network between two hosts, as TCP lives through it: every
//! segment is dropped while it lasts, each is sent again after a
//! retransmission timeout that doubles every time, and the first copy sent
//! after the heal gets through. One rule for the simulator's kernel and
//! for the real mode's proxy, so that the two hold bytes alike.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Linux's first retransmission timeout on an established connection (its
/// `TCP_RTO_MIN`, which loopback's tiny round trips never exceed).
pub const SEGMENT_FIRST_RTO_MS: u64 = 200;
/// Linux's first retransmission of a connection's opening SYN.
pub const SYN_FIRST_RTO_MS: u64 = 1_000;
/// Linux never waits longer than this between two retransmissions.
pub const MAX_RTO_MS: u64 = 120_000;

/// How long a segment sent `heal_in_ms` before the cut heals waits before
/// a copy of it gets through: the sum of the retransmission timeouts,
/// from `first_rto_ms` and doubling, until that sum reaches the heal.
pub fn held_until_heal_ms(heal_in_ms: u64, first_rto_ms: u64) -> u64 {
    assert!(first_rto_ms > 0, "a retransmission timeout of 0 ms");
    let (mut waited_ms, mut rto_ms) = (0u64, first_rto_ms);
    while waited_ms < heal_in_ms {
        waited_ms = waited_ms.saturating_add(rto_ms);
        rto_ms = (rto_ms * 2).min(MAX_RTO_MS);
    }
    waited_ms
}

/// The latest cut of one link, shared by everything that crosses it.
#[derive(Clone, Default)]
pub struct Cut {
    window: Arc<Mutex<Option<(Instant, Instant)>>>,
}

impl Cut {
    /// Cuts the link from now for `for_ms`.
    pub fn start(&self, for_ms: u64) {
        let now = Instant::now();
        *self.window.lock().expect("cut") = Some((now, now + Duration::from_millis(for_ms)));
    }

    /// How long a segment sent at `sent` waits for the cut to heal, with
    /// its first retransmission after `first_rto_ms`; 0 outside a cut.
    pub fn held_ms(&self, sent: Instant, first_rto_ms: u64) -> u64 {
        match *self.window.lock().expect("cut") {
            Some((from, heal)) if from <= sent && sent < heal => {
                let heal_in_ms = u64::try_from((heal - sent).as_millis()).unwrap_or(u64::MAX);
                held_until_heal_ms(heal_in_ms, first_rto_ms)
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_gets_through_at_the_first_retransmission_after_the_heal() {
        // Copies at 200, 600, 1,400, 3,000 ms after the first send.
        assert_eq!(held_until_heal_ms(0, 200), 0);
        assert_eq!(held_until_heal_ms(1, 200), 200);
        assert_eq!(held_until_heal_ms(600, 200), 600);
        assert_eq!(held_until_heal_ms(601, 200), 1_400);
        assert_eq!(held_until_heal_ms(2_500, 200), 3_000);
        // A SYN: 1, 3, 7 s.
        assert_eq!(held_until_heal_ms(3_500, 1_000), 7_000);
    }

    #[test]
    fn retransmissions_stop_doubling_at_two_minutes() {
        // 200 ms doubled ten times passes 120 s: from then on, 120 s apart.
        let capped = held_until_heal_ms(600_000, 200);
        assert!(
            (600_000..600_000 + MAX_RTO_MS).contains(&capped),
            "{capped}"
        );
    }

    #[test]
    fn only_a_segment_sent_during_the_cut_is_held() {
        let cut = Cut::default();
        let before = Instant::now();
        assert_eq!(cut.held_ms(before, 200), 0);
        cut.start(60_000);
        assert_eq!(cut.held_ms(before, 200), 0);
        assert!(cut.held_ms(Instant::now(), 200) >= 59_000);
        assert_eq!(
            cut.held_ms(Instant::now() + Duration::from_secs(61), 200),
            0
        );
    }
}
