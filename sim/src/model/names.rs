//! The sets of names a run is described with (operations, flaws, fault
//! knobs), each written once; serde, parsing, help text and reports use them.

use std::fmt;

use serde::{Deserialize, Deserializer, Serializer};

/// A word that is not one of a name list's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What the list names, e.g. `operation`.
    pub what: &'static str,
    /// The word given.
    pub given: String,
    /// Every name the list knows, in its order.
    pub known: Vec<&'static str>,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} {:?}; known: {}",
            self.what,
            self.given,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// An enum whose variants each have one name: written once in
/// [`named!`], read by serde, [`FromStr`], [`fmt::Display`] and the CLI.
pub trait Named: Copy + Sized + 'static {
    /// What the names name, for errors (`operation`, `flaw`).
    const WHAT: &'static str;
    /// Every variant, in the list's order.
    const ALL: &'static [Self];
    /// This variant's name.
    fn name(self) -> &'static str;

    /// Every name, in the list's order.
    fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|item| item.name()).collect()
    }

    /// The variant called `name`.
    fn from_name(name: &str) -> Result<Self, UnknownName> {
        Self::ALL
            .iter()
            .copied()
            .find(|item| item.name() == name)
            .ok_or_else(|| UnknownName {
                what: Self::WHAT,
                given: name.to_owned(),
                known: Self::names(),
            })
    }
}

/// Defines an enum from one list of `Variant => "name"` pairs, with
/// [`Named`], `FromStr`, `Display` and serde as that name.
macro_rules! named {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $crate::model::Named for $name {
            const WHAT: &'static str = $what;
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }
        }

        impl $name {
            /// Every variant, in the list's order.
            pub const ALL: &'static [Self] = <Self as $crate::model::Named>::ALL;

            /// This variant's name.
            pub fn name(self) -> &'static str {
                $crate::model::Named::name(self)
            }

            /// The variant called `name`; the error lists every name.
            pub fn from_name(name: &str) -> Result<Self, $crate::model::UnknownName> {
                <Self as $crate::model::Named>::from_name(name)
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::model::UnknownName;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                <Self as $crate::model::Named>::from_name(text)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $crate::model::names::serialize_name(*self, s)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::model::names::deserialize_name(d)
            }
        }
    };
}
pub(crate) use named;

#[doc(hidden)]
pub fn serialize_name<T: Named, S: Serializer>(item: T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(item.name())
}

#[doc(hidden)]
pub fn deserialize_name<'de, T: Named, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    let text = String::deserialize(deserializer)?;
    T::from_name(&text).map_err(serde::de::Error::custom)
}

named! {
    /// The four dependency operations.
    pub enum OpKind ("operation") {
        /// `acquire(owner)`.
        Acquire => "acquire",
        /// `renew(lease)`.
        Renew => "renew",
        /// `release(lease)`.
        Release => "release",
        /// `delete_batch(older_than, limit, token)`.
        Delete => "delete",
    }
}

named! {
    /// Mistakes a worker's author makes: the review's five findings, then
    /// the project's own catalogue. The variant worker carries exactly one
    /// of them (`WorkerUnderTest::Variant`).
    pub enum Flaw ("flaw") {
        /// Renewals on an interval timer: they overlap, a late reply
        /// overwrites a newer lease, and a rejected renewal goes unobserved
        /// (finding 1).
        OverlappingRenewals => "overlapping-renewals",
        /// Release with the lease acquire granted, not the renewed one
        /// (finding 2).
        StaleRelease => "stale-release",
        /// A new cutoff for every batch (finding 3).
        MovingCutoff => "moving-cutoff",
        /// No 1,000-row cap per term (finding 4).
        UncappedTerm => "uncapped-term",
        /// `stop()` only sets a flag: no join, no release of a lease acquired
        /// after it, no release after a failed delete (finding 5).
        FlagOnlyStop => "flag-only-stop",
        /// The reviewed design of the cutoff: taken from the worker's own
        /// clock after the grant, and the delete bounded by nothing else (no
        /// bound on the database's clock): a clock ahead of the database's,
        /// skewed or stepped, deletes rows early. Not one of the five
        /// findings: what CUT-1's choice of clock and the adapter's bound
        /// exist to prevent.
        OwnClockCutoff => "own-clock-cutoff",
        /// Trusts NTP to keep clocks within a second: the cutoff from its
        /// own clock less a second's margin, with no bound on the
        /// database's clock. Safe until a clock is more than a second
        /// ahead (a skew, a step).
        TrustsNtpWithinASecond => "trusts-ntp-within-a-second",
        /// Waits for a renewal in flight before each batch by polling its
        /// clock in a loop that never awaits: the renewal can never land.
        SpinWhileRenewing => "spin-while-renewing",
        /// Every batch asks for a full `batch_size`, the last one too: a
        /// cap that is not a multiple of the batch is overshot.
        CapOvershoot => "cap-overshoot",
        /// Deletes until a batch comes back empty instead of stopping at
        /// the first short batch.
        ContinueAfterShortBatch => "continue-after-short-batch",
        /// Retries a delete the repository refused for its token, with the
        /// same token.
        RetryFencedDelete => "retry-fenced-delete",
        /// A renewal that failed (refused, timed out, lost) is ignored and
        /// the term carries on with the old lease.
        FailedRenewalIgnored => "failed-renewal-ignored",
        /// A null renewal is ignored and the term carries on with the old
        /// lease.
        NullRenewalIgnored => "null-renewal-ignored",
        /// Unwraps the renewal's reply, sure that a lease it holds always
        /// renews: a null renewal (revoked, expired, taken) panics the
        /// worker mid-term.
        UnwrapsNullRenewal => "unwraps-null-renewal",
        /// A failed renewal is retried once at once before it counts as a
        /// loss.
        RetryFailedRenewal => "retry-failed-renewal",
        /// The cutoff from the acquired lease's expiry, forgetting to take
        /// the TTL off: the grant's instant is expiry less the TTL.
        CutoffFromExpiry => "cutoff-from-expiry",
        /// The retention truncated to whole seconds: a cutoff up to 999 ms
        /// late unless the retention is a whole number of seconds.
        RetentionInWholeSeconds => "retention-in-whole-seconds",
        /// `serve()` looks at the stop flag only before its pause between
        /// terms: a stop during the pause is missed and the next term
        /// acquires.
        StopUnseenBetweenTerms => "stop-unseen-between-terms",
        /// The term counts as settled once its deletes end, before its
        /// release answers: `stop()` resolves with the release in flight.
        StopReturnsBeforeRelease => "stop-returns-before-release",
        /// `stop()` abandons the delete in flight (a `select!` on the stop
        /// signal drops it) instead of waiting for it.
        StopDropsDelete => "stop-drops-delete",
        /// The renewal loop watches only for a loss: neither `stop()` nor
        /// the end of the deletes ends it.
        RenewalOutlivesStop => "renewal-outlives-stop",
        /// Keeps the last term's lease and releases it at the end of every
        /// term, one that acquired nothing too.
        ReleaseStaleTermLease => "release-stale-term-lease",
        /// The term's report counts the rows each batch asked for, not the
        /// rows it deleted.
        ReportCountsRequestedRows => "report-counts-requested-rows",
        /// Canary: once the worker has refused a corrupt reply (a
        /// lease not its own, or not newer), had a null renewal and had
        /// two deletes refused that its own renewal did not explain, a delete
        /// refused for its token while a renewal was in flight, when that
        /// renewal does not move the token, is sent again with the refused
        /// token.
        CanaryResendAfterACorruptReply => "canary-resend-after-a-corrupt-reply",
        /// Canary: once the worker has refused a corrupt reply and had a
        /// delete refused that its own renewal did not explain, a delete
        /// refused because its own renewal moved the token restarts the
        /// term's row count at zero.
        CanaryRecountAfterACorruptReply => "canary-recount-after-a-corrupt-reply",
        /// Canary: once the worker has had a delete refused that its own
        /// renewal did not explain, a corrupt renewal reply arriving while
        /// a delete is in flight is kept as the term's lease.
        CanaryCorruptReplyKeptAfterAFence => "canary-corrupt-reply-kept-after-a-fence",
        /// Canary: once the worker has refused a corrupt reply, a term
        /// whose clock jumped forward by more than the TTL between two
        /// batches, a renewal landing between them, takes its cutoff again.
        CanaryRecutAfterAJumpAndACorruptReply => "canary-recut-after-a-jump-and-a-corrupt-reply",
        /// Canary: once the worker has lost a term to a null renewal, a
        /// renewal granted after its lease expired by the worker's clock,
        /// in a term whose clock jumped, is followed at once by a second
        /// renewal that is not awaited.
        CanaryOverlapAfterANullRenewalAndAJump => "canary-overlap-after-a-null-renewal-and-a-jump",
        /// Canary: a term whose clock jumped and which had a delete refused
        /// because its own renewal moved the token, in which `stop()` was
        /// called during a delete and which then lost its lease to a null
        /// renewal, forgets the stop: the next term acquires.
        CanaryStopForgottenAfterAJump => "canary-stop-forgotten-after-a-jump",
    }
}

impl Flaw {
    /// The clauses the review says this flaw breaks.
    pub fn clauses(self) -> &'static [&'static str] {
        match self {
            Self::OverlappingRenewals => &["REN-1", "REN-2", "REN-3"],
            Self::StaleRelease => &["REL-1"],
            Self::MovingCutoff => &["CUT-1"],
            Self::UncappedTerm => &["CAP-1"],
            Self::FlagOnlyStop => &[
                "STP-1", "STP-2", "STP-3", "STP-4", "STP-5", "STP-6", "REL-3",
            ],
            Self::OwnClockCutoff => &["DATA-4"],
            Self::TrustsNtpWithinASecond => &["DATA-4", "CUT-1"],
            Self::SpinWhileRenewing => &["LIVE-3"],
            Self::CapOvershoot => &["CAP-1"],
            Self::ContinueAfterShortBatch => &["CAP-1"],
            Self::RetryFencedDelete => &["FEN-1"],
            Self::FailedRenewalIgnored | Self::NullRenewalIgnored => &["REN-3"],
            Self::UnwrapsNullRenewal => &["LIVE-4"],
            // The retry can go out after stop() too.
            Self::RetryFailedRenewal => &["REN-3", "STP-2"],
            Self::CutoffFromExpiry | Self::RetentionInWholeSeconds => &["CUT-1", "DATA-4"],
            Self::StopUnseenBetweenTerms => &["STP-1", "STP-6"],
            Self::StopReturnsBeforeRelease => &["STP-5"],
            Self::StopDropsDelete => &["STP-3"],
            Self::RenewalOutlivesStop => &["STP-2", "LIVE-1", "LIVE-2"],
            Self::ReleaseStaleTermLease => &["REL-1"],
            Self::ReportCountsRequestedRows => &["RPT-1"],
            // A resent token can follow a loss, and a second renewal can
            // outlive its term: the canaries break what those break too.
            Self::CanaryResendAfterACorruptReply => &["FEN-1", "REN-3", "STP-1"],
            Self::CanaryRecountAfterACorruptReply => &["CAP-1"],
            Self::CanaryCorruptReplyKeptAfterAFence => &["FEN-1", "REN-2", "REL-1"],
            Self::CanaryRecutAfterAJumpAndACorruptReply => &["CUT-1"],
            Self::CanaryOverlapAfterANullRenewalAndAJump => &["REN-1", "REN-3", "STP-2", "ACQ-1"],
            Self::CanaryStopForgottenAfterAJump => &["STP-1", "STP-2", "STP-6"],
        }
    }

    /// Whether this is a rare-bug canary: a mistake that shows only when
    /// two or three unlikely conditions meet in one term, kept to measure
    /// how fast a search finds such a bug (`sim bench --guided`), not
    /// part of the catalogue every plain search must find.
    pub fn is_canary(self) -> bool {
        self.name().starts_with("canary-")
    }

    /// The review's findings and the project's catalogue: every flaw but
    /// the canaries.
    pub fn catalogue() -> impl Iterator<Item = Flaw> {
        Self::ALL.iter().copied().filter(|flaw| !flaw.is_canary())
    }

    /// The rare-bug canaries.
    pub fn canaries() -> impl Iterator<Item = Flaw> {
        Self::ALL.iter().copied().filter(|flaw| flaw.is_canary())
    }

    /// Whether the flaw stands for a design without the adapter's bound on
    /// the database's clock: the world then runs its database without it.
    pub fn drops_database_bound(self) -> bool {
        matches!(self, Self::OwnClockCutoff | Self::TrustsNtpWithinASecond)
    }
}

named! {
    /// The probabilistic fault knobs of [`FaultConfig`](super::FaultConfig),
    /// in the order reports print and the swarm draws them.
    pub enum FaultKnob ("fault") {
        /// Extra delay before each request and each reply.
        LatencyMsMax => "latency_ms_max",
        /// Chance a renewal's reply is held past the next renewal tick.
        RenewReplyDelayPermille => "renew_reply_delay_permille",
        /// Chance a call is refused before it is applied.
        RejectPermille => "reject_permille",
        /// Chance a call is applied and its reply lost.
        AmbiguousPermille => "ambiguous_permille",
        /// Chance a renewal revokes the lease and answers null.
        NullRenewPermille => "null_renew_permille",
        /// Chance the network loses a packet (TCP retransmits it, late).
        PacketLossPermille => "packet_loss_permille",
        /// Bound of each replica's fixed clock skew.
        ClockSkewMsMax => "clock_skew_ms_max",
    }
}
