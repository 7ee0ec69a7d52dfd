//! The checker on hand-written histories: a correct one passes (with the
//! contract's three non-findings in it), and one small change per clause is
//! flagged with exactly that clause.

use retention_sim::check;
use retention_sim::model::{
    Actor, Event, EventKind, FailureKind, Header, History, Invocation, LeaseRec, OpKind, Outcome,
    ReleaseRec, RowRec, TermEndRec,
};

pub(crate) fn lease(owner: &str, token: u64, expires_at_ms: i64) -> LeaseRec {
    LeaseRec {
        owner: owner.into(),
        token,
        expires_at_ms,
    }
}

/// A replica's call `call` sent with `invocation`.
fn invoked(call: u64, invocation: Invocation) -> EventKind {
    EventKind::Invoke { call, invocation }
}

/// The answer to `call` (an `op`) reaching its replica: `outcome`.
fn returned(call: u64, op: OpKind, outcome: Outcome) -> EventKind {
    EventKind::Return { call, op, outcome }
}

/// Builds a history event by event; calls are numbered in order.
pub(crate) struct Script {
    events: Vec<Event>,
    now_ms: i64,
    header: Header,
}

impl Script {
    pub(crate) fn new() -> Self {
        let header = Header {
            seed: 7,
            replicas: 2,
            retention_ms: 1_000,
            batch_size: 200,
            term_row_cap: 1_000,
            skews_ms: vec![0, 0],
            initial_rows: 500,
            faults_off: false,
            drain_owed: false,
            stop_bound_ms: 10_000,
            lock_timeout_ms: 0,
            plan: None,
        };
        Self {
            events: Vec::new(),
            now_ms: 0,
            header,
        }
    }

    pub(crate) fn at(&mut self, now_ms: i64) -> &mut Self {
        self.now_ms = now_ms;
        self
    }

    pub(crate) fn push(&mut self, actor: Actor, term: u32, kind: EventKind) -> &mut Self {
        self.events.push(Event {
            at_ms: self.now_ms,
            actor,
            term,
            kind,
        });
        self
    }

    pub(crate) fn call(
        &mut self,
        replica: u32,
        term: u32,
        call: u64,
        invocation: Invocation,
    ) -> &mut Self {
        self.push(
            Actor::Replica(replica),
            term,
            EventKind::Invoke { call, invocation },
        )
    }

    pub(crate) fn reply(
        &mut self,
        replica: u32,
        term: u32,
        call: u64,
        op: OpKind,
        outcome: Outcome,
    ) -> &mut Self {
        self.push(
            Actor::Replica(replica),
            term,
            EventKind::Return { call, op, outcome },
        )
    }

    fn service(&mut self, actor: Actor, term: u32, kind: EventKind) -> &mut Self {
        self.push(actor, term, kind)
    }

    fn rows(first_id: u64, count: u64) -> Vec<RowRec> {
        (first_id..first_id + count)
            .map(|id| RowRec {
                id,
                created_at_ms: -5_000 + id as i64,
            })
            .collect()
    }

    /// The lease service grants r1's `call` in term 1 `lease`, and r1 hears it.
    pub(crate) fn granted_to_r1(&mut self, call: u64, op: OpKind, lease: LeaseRec) -> &mut Self {
        let grant = EventKind::Granted {
            call,
            lease: lease.clone(),
        };
        self.service(Actor::Lease, 1, grant);
        self.reply(1, 1, call, op, Outcome::Lease(Some(lease)))
    }

    /// r1's delete `call` in term 1 under `token` now, by the cutoff -990:
    /// invoked, applied (`rows` removed) and answered.
    fn delete_of_r1(&mut self, call: u64, token: u64, rows: Vec<RowRec>) -> &mut Self {
        let count = rows.len() as u64;
        let (older_than_ms, fenced_at_ms) = (-990, self.now_ms);
        let asked = Invocation::Delete {
            older_than_ms,
            limit: 200,
            token,
        };
        self.call(1, 1, call, asked);
        let applied = EventKind::Deleted {
            call,
            token,
            fenced_at_ms,
            older_than_ms,
            rows,
            deleted_clock_ms: None,
            fenced_clock_ms: None,
        };
        self.service(Actor::Db, 1, applied);
        self.reply(1, 1, call, OpKind::Delete, Outcome::Deleted(count))
    }

    /// r1's term 1: acquire (token 1), one delete of 200, renew (token 2),
    /// a short delete of 37 (a non-finding), release, end; then a final.
    fn correct() -> Self {
        let mut s = Self::new();
        let (l1, l2) = (lease("r1", 1, 3_000), lease("r1", 2, 4_000));
        s.at(0).call(1, 1, 1, Invocation::Acquire);
        s.granted_to_r1(1, OpKind::Acquire, l1.clone());
        s.at(10).delete_of_r1(2, 1, Self::rows(1, 200));
        s.at(1_000)
            .call(1, 1, 3, Invocation::Renew { lease: l1.clone() });
        s.granted_to_r1(3, OpKind::Renew, l2.clone());
        // The repository enforcing tokens (a non-finding): a stale delete refused.
        s.at(1_010).service(
            Actor::Db,
            0,
            EventKind::Fenced {
                call: 99,
                token: 1,
                reason: "stale".into(),
            },
        );
        s.at(1_020).delete_of_r1(4, 2, Self::rows(201, 37));
        s.at(1_030)
            .call(1, 1, 5, Invocation::Release { lease: l2.clone() });
        s.service(
            Actor::Lease,
            1,
            EventKind::Released {
                call: 5,
                lease: l2,
                cleared: true,
            },
        );
        s.reply(1, 1, 5, OpKind::Release, Outcome::Done);
        s.push(Actor::Replica(1), 1, term_ended());
        s.at(2_000).push(
            Actor::World,
            0,
            EventKind::Final {
                rows_left: 263,
                rows_inserted: 0,
                stale_rows_left: 0,
                rows_early_by_true_time: 0,
            },
        );
        s
    }

    pub(crate) fn history(&self) -> History {
        History {
            header: self.header.clone(),
            events: self.events.clone(),
        }
    }

    /// The clauses flagged, deduplicated, in report order.
    fn flagged(&self) -> Vec<&'static str> {
        let mut clauses: Vec<_> = check(&self.history())
            .violations
            .iter()
            .map(|v| v.clause)
            .collect();
        clauses.dedup();
        clauses
    }

    fn edit(mut self, seq: usize, f: impl FnOnce(&mut EventKind)) -> Self {
        f(&mut self.events[seq].kind);
        self
    }

    fn replaced(self, seq: usize, kind: EventKind) -> Self {
        self.edit(seq, |k| *k = kind)
    }

    fn without(mut self, seqs: &[usize]) -> Self {
        for &seq in seqs.iter().rev() {
            self.events.remove(seq);
        }
        self
    }

    /// Inserts `kind` by replica 1 (term 1) just before event `seq`.
    fn insert(mut self, seq: usize, actor: Actor, kind: EventKind) -> Self {
        let at_ms = self.events[seq].at_ms;
        self.events.insert(
            seq,
            Event {
                at_ms,
                actor,
                term: 1,
                kind,
            },
        );
        self
    }
}

pub(crate) fn term_ended() -> EventKind {
    EventKind::TermEnded {
        end: TermEndRec::Completed,
        rows: 237,
        batches: 2,
        renewals: 1,
        release: ReleaseRec::Released,
    }
}

/// Makes a term's report say `rows` in `batches`, with no renewal if none.
fn set_counts(kind: &mut EventKind, report_rows: u64, report_batches: u32) {
    if let EventKind::TermEnded {
        rows,
        batches,
        renewals,
        ..
    } = kind
    {
        *rows = report_rows;
        *batches = report_batches;
        *renewals = u32::from(report_batches > 0);
    }
}

fn set_delete(kind: &mut EventKind, older: Option<i64>, limit: Option<u32>, tok: Option<u64>) {
    if let EventKind::Invoke {
        invocation:
            Invocation::Delete {
                older_than_ms,
                limit: l,
                token,
            },
        ..
    } = kind
    {
        *older_than_ms = older.unwrap_or(*older_than_ms);
        *l = limit.unwrap_or(*l);
        *token = tok.unwrap_or(*token);
    }
}

#[test]
fn a_correct_history_with_the_three_non_findings_passes() {
    let verdict = check(&Script::correct().history());
    assert!(verdict.passed(), "{:#?}", verdict.violations);
}

#[test]
fn acq_1_delete_before_a_granted_acquire() {
    // The acquire answered null, yet a delete followed.
    let s = Script::correct().replaced(2, returned(1, OpKind::Acquire, Outcome::Lease(None)));
    assert!(s.flagged().contains(&"ACQ-1"), "{:?}", s.flagged());
}

#[test]
fn ren_1_overlapping_renewals() {
    let second = Invocation::Renew {
        lease: lease("r1", 1, 3_000),
    };
    let null = Outcome::Lease(None);
    let s = Script::correct()
        .insert(7, Actor::Replica(1), invoked(50, second))
        .insert(16, Actor::Replica(1), returned(50, OpKind::Renew, null));
    assert_eq!(s.flagged(), vec!["REN-1"]);
}

#[test]
fn ren_3_a_renewal_left_unobserved() {
    let second = Invocation::Renew {
        lease: lease("r1", 2, 4_000),
    };
    let s = Script::correct().insert(13, Actor::Replica(1), invoked(50, second));
    assert_eq!(s.flagged(), vec!["REN-3"]);
}

#[test]
fn ren_2_renewing_an_older_lease() {
    let stale = Invocation::Renew {
        lease: lease("r1", 1, 3_000),
    };
    let s = Script::correct()
        .insert(12, Actor::Replica(1), invoked(60, stale))
        .insert(
            13,
            Actor::Replica(1),
            returned(60, OpKind::Renew, Outcome::Lease(None)),
        );
    assert!(s.flagged().contains(&"REN-2"), "{:?}", s.flagged());
}

#[test]
fn ren_3_deleting_after_a_null_renewal() {
    let s = Script::correct().replaced(8, returned(3, OpKind::Renew, Outcome::Lease(None)));
    assert!(s.flagged().contains(&"REN-3"), "{:?}", s.flagged());
}

#[test]
fn fen_1_deleting_with_a_superseded_token() {
    let s = Script::correct()
        .edit(10, |k| set_delete(k, None, None, Some(1)))
        .edit(11, |k| {
            if let EventKind::Deleted { token, .. } = k {
                *token = 2;
            }
        });
    assert_eq!(s.flagged(), vec!["FEN-1"]);
}

#[test]
fn fen_2_the_database_accepting_a_stale_token() {
    let s = Script::correct().edit(11, |k| {
        if let EventKind::Deleted { token, .. } = k {
            *token = 1;
        }
    });
    assert_eq!(s.flagged(), vec!["FEN-2"]);
}

/// A revoked lease is no lease: a delete fenced after the revocation
/// under its token is FEN-2, and the release that clears it is REL-2.
#[test]
fn fen_2_a_delete_fenced_after_its_lease_was_revoked() {
    let revoked = EventKind::Revoked {
        call: 3,
        lease: lease("r1", 2, 4_000),
    };
    let s = Script::correct().insert(10, Actor::Lease, revoked);
    assert_eq!(s.flagged(), vec!["FEN-2", "REL-2"]);
}

/// FEN-2 as PostgreSQL keeps it: the token is judged when the fence takes
/// the lease row's share lock, and nothing may change the row until the
/// delete commits; a commit after the lease's expiry is fine. Times are
/// whole milliseconds, so a grant in the fence's own millisecond counts as
/// before it: the token is then judged against that grant, and a grant that
/// really came after the fence is still caught.
/// FEN-2's messages for r1's delete under token 1 (expiring at 3,000 ms
/// by the database's clock), fenced at `fenced_at_ms` and committed at
/// 3,500 ms; with r2 granted token 2 at `grant_at_ms`, and with the
/// database's clock stepped `(at_ms, from_ms, to_ms)`. The history does not
/// record the clock at the fence, so the checker rebuilds it from the steps.
fn fen_2_of_a_late_commit(
    fenced_at_ms: i64,
    grant_at_ms: Option<i64>,
    db_clock_step: Option<(i64, i64, i64)>,
) -> Vec<String> {
    let mut s = Script::new();
    let l1 = lease("r1", 1, 3_000);
    s.at(0).call(1, 1, 1, Invocation::Acquire);
    let granted = EventKind::Granted {
        call: 1,
        lease: l1.clone(),
    };
    s.service(Actor::Lease, 1, granted);
    s.reply(1, 1, 1, OpKind::Acquire, Outcome::Lease(Some(l1)));
    if let Some((at_ms, from_ms, to_ms)) = db_clock_step {
        let step = EventKind::DbClockStepped { from_ms, to_ms };
        s.at(at_ms).service(Actor::Db, 0, step);
    }
    let delete = Invocation::Delete {
        older_than_ms: -990,
        limit: 200,
        token: 1,
    };
    s.at(2_900).call(1, 1, 2, delete);
    if let Some(at_ms) = grant_at_ms {
        let successor = EventKind::Granted {
            call: 3,
            lease: lease("r2", 2, at_ms + 3_000),
        };
        s.at(at_ms).service(Actor::Lease, 1, successor);
    }
    let deleted = EventKind::Deleted {
        call: 2,
        token: 1,
        fenced_at_ms,
        older_than_ms: -990,
        rows: Script::rows(1, 200),
        deleted_clock_ms: None,
        fenced_clock_ms: None,
    };
    s.at(3_500).service(Actor::Db, 1, deleted);
    s.reply(1, 1, 2, OpKind::Delete, Outcome::Deleted(200));
    check(&s.history())
        .violations
        .into_iter()
        .filter(|v| v.clause == "FEN-2")
        .map(|v| v.message)
        .collect()
}

/// FEN-2 as PostgreSQL keeps it: the token is judged when the fence takes
/// the lease row's share lock, and nothing may change the row until the
/// delete commits; a commit after the lease's expiry is fine. Times are
/// whole milliseconds, so a grant in the fence's own millisecond counts as
/// before it: the token is then judged against that grant, and a grant that
/// really came after the fence is still caught.
#[test]
fn fen_2_is_judged_at_the_fence_and_forbids_a_grant_before_the_commit() {
    let committed_late =
        |fenced_at_ms, grant_at_ms| fen_2_of_a_late_commit(fenced_at_ms, grant_at_ms, None);
    assert_eq!(committed_late(2_950, None), Vec::<String>::new());
    let expired = committed_late(3_000, None);
    assert!(
        expired[0].contains("fenced at 3000 ms while the lease was r1#1"),
        "{expired:?}"
    );
    let granted = committed_late(2_950, Some(3_100));
    assert!(
        granted[0].contains("changed at 3100 ms, between the delete's fence"),
        "{granted:?}"
    );
    let same_ms = committed_late(2_950, Some(2_950));
    assert!(
        same_ms[0].contains("fenced at 2950 ms while the lease was r2#2"),
        "{same_ms:?}"
    );
}

/// The expiry is read on the database's clock as it was at the fence. Set
/// back 1,000 ms at 2,000 ms, it read 2,000 ms at a fence at 3,000 ms, so
/// the lease had not expired; set forward instead, it had, a millisecond
/// before the fence.
#[test]
fn fen_2_reads_the_expiry_on_the_database_clock_rebuilt_from_its_steps() {
    assert_eq!(
        fen_2_of_a_late_commit(3_000, None, Some((2_000, 2_000, 1_000))),
        Vec::<String>::new()
    );
    let stepped_forward = fen_2_of_a_late_commit(2_000, None, Some((1_999, 1_999, 3_000)));
    assert!(
        stepped_forward[0].contains("fenced at 2000 ms while the lease was r1#1"),
        "{stepped_forward:?}"
    );
}

#[test]
fn cut_1_a_moving_cutoff() {
    let s = Script::correct()
        .edit(10, |k| set_delete(k, Some(0), None, None))
        .edit(11, |k| {
            if let EventKind::Deleted { older_than_ms, .. } = k {
                *older_than_ms = 0;
            }
        });
    assert_eq!(s.flagged(), vec!["CUT-1"]);
}

/// The clauses flagged when every delete of the correct history uses
/// `cutoff_ms`, r1's clock running at `rate_permille` from 0 ms (from a
/// reading of 0), if given.
fn flagged_with_cutoff(cutoff_ms: i64, rate_permille: Option<u64>) -> Vec<&'static str> {
    let mut s = Script::correct();
    if let Some(rate_permille) = rate_permille {
        let rate = EventKind::ClockRateSet {
            rate_permille,
            reading_ms: 0,
        };
        s = s.insert(0, Actor::Replica(1), rate);
    }
    for seq in 0..s.events.len() {
        s = s.edit(seq, |k| {
            set_delete(k, Some(cutoff_ms), None, None);
            if let EventKind::Deleted { older_than_ms, .. } = k {
                *older_than_ms = cutoff_ms;
            }
        });
    }
    s.flagged()
}

/// The term's cutoff is some clock's reading between its acquire (0 ms)
/// and its first delete (10 ms), less the retention. A clock that keeps
/// true time is judged to the millisecond: a reading one millisecond
/// before the acquire or after the delete was not taken in the term.
#[test]
fn cut_1_a_cutoff_read_a_millisecond_outside_the_term() {
    let none: Vec<&str> = Vec::new();
    assert_eq!(
        flagged_with_cutoff(-1_000, None),
        none,
        "read at the acquire"
    );
    assert_eq!(flagged_with_cutoff(-990, None), none, "at the first delete");
    assert_eq!(flagged_with_cutoff(-1_001, None), vec!["CUT-1"]);
    assert_eq!(flagged_with_cutoff(-989, None), vec!["CUT-1"]);
}

/// A clock at another rate is judged with slack, as the history floors its
/// readings and instants to whole milliseconds: 2 ms, plus 1 ms per whole
/// or started 1,000 permille of rate. At half speed r1's clock read 0..5
/// during the term (the database's read 0..10): 3 ms of slack either side
/// admits a reading of -3 and no earlier one.
#[test]
fn cut_1_a_clock_at_half_speed_is_judged_within_three_milliseconds() {
    let none: Vec<&str> = Vec::new();
    assert_eq!(flagged_with_cutoff(-1_003, Some(500)), none);
    assert_eq!(flagged_with_cutoff(-1_004, Some(500)), vec!["CUT-1"]);
}

#[test]
fn cap_1_an_oversized_batch() {
    let s = Script::correct().edit(3, |k| set_delete(k, None, Some(201), None));
    assert_eq!(s.flagged(), vec!["CAP-1"]);
}

#[test]
fn cap_1_a_delete_after_the_short_batch() {
    let again = Invocation::Delete {
        older_than_ms: -990,
        limit: 200,
        token: 2,
    };
    let s = Script::correct()
        .insert(13, Actor::Replica(1), invoked(70, again))
        .insert(
            14,
            Actor::Replica(1),
            returned(
                70,
                OpKind::Delete,
                Outcome::Failed {
                    kind: FailureKind::Rejected,
                    detail: String::new(),
                },
            ),
        );
    assert_eq!(s.flagged(), vec!["CAP-1"]);
}

#[test]
fn rel_1_releasing_the_acquisition_lease() {
    let s = Script::correct()
        .edit(13, |k| {
            *k = EventKind::Invoke {
                call: 5,
                invocation: Invocation::Release {
                    lease: lease("r1", 1, 3_000),
                },
            }
        })
        .edit(14, |k| {
            *k = EventKind::Released {
                call: 5,
                lease: lease("r1", 1, 3_000),
                cleared: false,
            }
        });
    assert_eq!(s.flagged(), vec!["REL-1"]);
}

#[test]
fn rel_2_a_release_clearing_another_lease() {
    let s = Script::correct().edit(14, |k| {
        *k = EventKind::Released {
            call: 5,
            lease: lease("r2", 9, 4_000),
            cleared: true,
        }
    });
    assert_eq!(s.flagged(), vec!["REL-2"]);
}

#[test]
fn rel_3_ending_a_term_without_releasing() {
    let s = Script::correct().without(&[13, 14, 15]);
    assert_eq!(s.flagged(), vec!["REL-3"]);
}

#[test]
fn stp_1_deleting_after_stop() {
    let s = Script::correct().insert(10, Actor::Replica(1), EventKind::StopCalled { caller: 1 });
    assert!(s.flagged().contains(&"STP-1"), "{:?}", s.flagged());
}

#[test]
fn stp_2_renewing_after_stop() {
    let s = Script::correct().insert(6, Actor::Replica(1), EventKind::StopCalled { caller: 1 });
    assert!(s.flagged().contains(&"STP-2"), "{:?}", s.flagged());
}

#[test]
fn stp_3_ending_with_a_call_abandoned_after_stop() {
    // Stop arrives while the second delete is in flight; the term ends
    // without its answer.
    let s = Script::correct()
        .insert(11, Actor::Replica(1), EventKind::StopCalled { caller: 1 })
        .without(&[13])
        .edit(16, |k| set_counts(k, 200, 1))
        .insert(17, Actor::Replica(1), EventKind::StopResolved { caller: 1 });
    assert_eq!(s.flagged(), vec!["STP-3"]);
}

#[test]
fn stp_4_stop_racing_acquire_leaves_the_lease_held() {
    let s = Script::correct()
        .insert(1, Actor::Replica(1), EventKind::StopCalled { caller: 1 })
        .without(&[4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])
        .edit(4, |k| set_counts(k, 0, 0))
        .insert(5, Actor::Replica(1), EventKind::StopResolved { caller: 1 })
        .edit(6, |k| {
            *k = EventKind::Final {
                rows_left: 500,
                rows_inserted: 0,
                stale_rows_left: 0,
                rows_early_by_true_time: 0,
            }
        });
    assert_eq!(s.flagged(), vec!["STP-4"]);
}

#[test]
fn stp_5_stop_resolving_before_the_term_settles() {
    let s = Script::correct()
        .insert(4, Actor::Replica(1), EventKind::StopCalled { caller: 1 })
        .insert(5, Actor::Replica(1), EventKind::StopResolved { caller: 1 })
        .without(&[6, 7, 8, 9, 10, 11, 12, 13, 14]);
    assert!(s.flagged().contains(&"STP-5"), "{:?}", s.flagged());
}

#[test]
fn stp_6_a_term_starting_after_stop_resolved() {
    let mut s = Script::correct();
    let final_seq = s.events.len() - 1;
    s = s
        .insert(
            final_seq,
            Actor::Replica(1),
            EventKind::StopCalled { caller: 1 },
        )
        .insert(
            final_seq + 1,
            Actor::Replica(1),
            EventKind::StopResolved { caller: 1 },
        );
    s.events.insert(
        final_seq + 2,
        Event {
            at_ms: 1_500,
            actor: Actor::Replica(1),
            term: 2,
            kind: invoked(80, Invocation::Acquire),
        },
    );
    assert!(s.flagged().contains(&"STP-6"), "{:?}", s.flagged());
}

#[test]
fn data_1_deleting_a_row_newer_than_the_cutoff() {
    let s = Script::correct().edit(4, |k| {
        if let EventKind::Deleted { rows, .. } = k {
            rows[0].created_at_ms = 0;
        }
    });
    // Written at 0 and gone at 10 ms, it is also far short of the 1 s
    // retention by the database's clock.
    assert_eq!(s.flagged(), vec!["DATA-1", "DATA-4"]);
}

/// A worker whose clock runs 90 ms ahead takes its cutoff 90 ms too late:
/// every row it deletes is older than that cutoff (DATA-1 holds) and the
/// cutoff was taken once, after acquiring, on its clock (CUT-1 holds), yet
/// one row is gone before its retention by the database's clock.
#[test]
fn data_4_a_cutoff_from_a_clock_running_ahead() {
    let mut s = Script::correct();
    s.header.skews_ms = vec![90, 0];
    let mut s = s.edit(4, |k| {
        if let EventKind::Deleted { rows, .. } = k {
            rows[0].created_at_ms = -950;
        }
    });
    for seq in 0..s.events.len() {
        s = s.edit(seq, |k| {
            set_delete(k, Some(-900), None, None);
            if let EventKind::Deleted { older_than_ms, .. } = k {
                *older_than_ms = -900;
            }
        });
    }
    assert_eq!(s.flagged(), vec!["DATA-4"]);
    let verdict = check(&s.history());
    assert!(
        verdict.violations[0]
            .message
            .contains("the youngest, row 1, was written at -950 ms (960 ms old)"),
        "{:?}",
        verdict.violations
    );
}

/// DATA-4 at its boundary: a row exactly its retention old by the clock
/// the delete read is not early; a millisecond younger is. The youngest of
/// the first batch was written at -4,800 ms, with 1,000 ms of retention.
#[test]
fn data_4_a_row_exactly_its_retention_old_is_not_early() {
    let read_at = |clock_ms: i64| {
        Script::correct()
            .edit(4, |k| {
                if let EventKind::Deleted {
                    deleted_clock_ms, ..
                } = k
                {
                    *deleted_clock_ms = Some(clock_ms);
                }
            })
            .flagged()
    };
    assert_eq!(read_at(-3_800), Vec::<&str>::new());
    assert_eq!(read_at(-3_801), vec!["DATA-4"]);
}

#[test]
fn data_2_deleting_a_row_twice() {
    let s = Script::correct().edit(11, |k| {
        if let EventKind::Deleted { rows, .. } = k {
            rows[0].id = 1;
        }
    });
    assert_eq!(s.flagged(), vec!["DATA-2"]);
}

#[test]
fn data_3_a_count_the_database_does_not_back() {
    let s = Script::correct().replaced(5, returned(2, OpKind::Delete, Outcome::Deleted(150)));
    assert!(s.flagged().contains(&"DATA-3"), "{:?}", s.flagged());
}

#[test]
fn live_1_a_fault_free_run_leaving_stale_rows() {
    let mut s = Script::correct();
    s.header.drain_owed = true;
    let last = s.events.len() - 1;
    let s = s.edit(last, |k| {
        *k = EventKind::Final {
            rows_left: 263,
            rows_inserted: 0,
            stale_rows_left: 12,
            rows_early_by_true_time: 0,
        }
    });
    assert_eq!(s.flagged(), vec!["LIVE-1"]);
}

#[test]
fn live_2_a_stop_that_never_resolves_or_takes_too_long() {
    let mut s = Script::correct();
    let last = s.events.len() - 1;
    s = s.insert(last, Actor::Replica(2), EventKind::StopCalled { caller: 1 });
    assert_eq!(s.flagged(), vec!["LIVE-2"]);
    let mut slow = Script::correct();
    slow.header.stop_bound_ms = 100;
    let slow = slow
        .insert(0, Actor::Replica(1), EventKind::StopCalled { caller: 1 })
        .insert(17, Actor::Replica(1), EventKind::StopResolved { caller: 1 });
    assert!(slow.flagged().contains(&"LIVE-2"), "{:?}", slow.flagged());
}

/// LIVE-2's bound is inclusive: a stop that takes exactly the bound keeps
/// the clause, one millisecond more breaks it.
#[test]
fn live_2_a_stop_that_takes_exactly_the_bound_is_in_time() {
    let with_bound = |slack_ms: i64| {
        let mut s = Script::correct()
            .insert(0, Actor::Replica(1), EventKind::StopCalled { caller: 1 })
            .insert(17, Actor::Replica(1), EventKind::StopResolved { caller: 1 });
        let took_ms = s.events[17].at_ms - s.events[0].at_ms;
        assert!(took_ms > 1, "the stop takes some time: {took_ms} ms");
        s.header.stop_bound_ms = u64::try_from(took_ms + slack_ms).unwrap();
        s.flagged().contains(&"LIVE-2")
    };
    assert!(!with_bound(0), "a stop of exactly the bound");
    assert!(with_bound(-1), "a stop of the bound and 1 ms");
}

#[test]
fn rpt_1_a_report_that_does_not_match_the_replies() {
    let last_term_end = 16;
    let s = Script::correct().edit(last_term_end, |k| {
        if let EventKind::TermEnded { rows, .. } = k {
            *rows = 300;
        }
    });
    assert_eq!(s.flagged(), vec!["RPT-1"]);
}
