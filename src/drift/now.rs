//! How a fact compiled stands on this host now, read once for both who ask:
//! `sealc exec`'s host check ([`super::host_drift`], which refuses on what
//! does not hold) and `sealc verify --live` (which reports each fact). Two
//! readings of one fact could disagree, one passing what the other refuses;
//! here there is one.

use crate::facts::{Facts, PathKind, StandIn};
use crate::ir::is_within;

/// A protected path absent when compiled: what holds its place now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StandInNow<'a> {
    /// The same stand-in (or object on the way) as when compiled.
    Same,
    /// A directory made at the stand-in's place since, holding it: it is
    /// used as the stand-in.
    DirAtPlace,
    /// The path is there now, inside the stand-in's place (a directory
    /// made there since): it is used.
    InsidePlace,
    /// Another stand-in holds it.
    HeldBy(&'a StandIn),
    /// The path is there now, not inside a directory at the place.
    There(&'a str),
    /// Nothing in a write root can hold it.
    Nowhere,
}

/// Where the protected path `p` (held by `was` when compiled) stands in
/// the facts gathered now; `dir_at` says whether a directory is at a path.
pub fn stand_in_now<'a>(
    p: &str,
    was: &StandIn,
    here: &'a Facts,
    dir_at: &dyn Fn(&str) -> bool,
) -> StandInNow<'a> {
    let now = here.stand_ins.get(p);
    let real = here.realpaths.get(p);
    if now == Some(was) {
        return StandInNow::Same;
    }
    let place = was.kind == PathKind::Dir && dir_at(&was.at);
    if place && now.is_some_and(|n| n.kind == PathKind::Dir && is_within(&n.at, &was.at)) {
        return StandInNow::DirAtPlace;
    }
    if place && real.is_some_and(|r| is_within(r, &was.at)) {
        return StandInNow::InsidePlace;
    }
    match (now, real) {
        (Some(n), _) => StandInNow::HeldBy(n),
        (None, Some(r)) => StandInNow::There(r),
        (None, None) => StandInNow::Nowhere,
    }
}

/// Whether `real`, not in the record, is there now only because the run's
/// preparation made it: a write root absent when compiled, made since (a
/// directory) where the record says; or a path inside a directory made at
/// a stand-in's place. Its kind is then no drift.
pub fn made_since(
    recorded: &Facts,
    real: &str,
    now: Option<PathKind>,
    dir_at: &dyn Fn(&str) -> bool,
) -> bool {
    !recorded.kinds.contains_key(real)
        && (now == Some(PathKind::Dir) && recorded.absent_writes.values().any(|a| a == real)
            || recorded
                .stand_ins
                .values()
                .any(|s| s.kind == PathKind::Dir && is_within(real, &s.at) && dir_at(&s.at)))
}

/// A write root absent when compiled, to be made at `at`: where it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbsentWriteNow<'a> {
    /// Still absent, and would be made at the same place.
    ToBeMade,
    /// There now, where the record says it is made.
    Made,
    /// There now, somewhere else.
    There(&'a str),
    /// Still absent, and would be made elsewhere (`None`: nowhere, as
    /// nothing can be made under its nearest existing ancestor).
    MadeElsewhere(Option<&'a str>),
}

/// Where the write root `p`, absent when compiled and to be made at `at`,
/// stands in the facts gathered now.
pub fn absent_write_now<'a>(p: &str, at: &str, here: &'a Facts) -> AbsentWriteNow<'a> {
    match here.realpaths.get(p) {
        Some(r) if r == at => AbsentWriteNow::Made,
        Some(r) => AbsentWriteNow::There(r),
        None if here.absent_writes.get(p).is_some_and(|a| a == at) => AbsentWriteNow::ToBeMade,
        None => AbsentWriteNow::MadeElsewhere(here.absent_writes.get(p).map(String::as_str)),
    }
}
