//! Host drift: does this host still hold the facts a record was compiled
//! against? `sealc exec` asks before it starts anything.
//!
//! The facts are re-resolved through [`crate::facts`] (so through the
//! [`Host`] trait) with the recorded var values, and compared with the
//! record: each root's realpath and kind, the identity of every denied root
//! inside a write root and of its ancestors there, the launcher chain, and
//! the programs that start the sandbox; and the check that no denied root
//! inside a write root holds a file with another hard link
//! ([`crate::facts::links`]) runs again. Each difference says what kind of
//! change it is, because the remedy differs: a host that changed on purpose
//! is compiled again, but a denied root inside a write root that a run
//! moved, made or linked must not be, since a new compile would hide the
//! decoy left in its place, or what a run prepared, and expose what it
//! should hide.

use std::collections::BTreeSet;
use std::fmt;

use crate::diag::quote;
use crate::facts::{ChainLink, Host, Identity, LinkKind, PathKind};
use crate::ir::is_within;
use crate::record::Record;

mod now;
pub use now::{absent_write_now, made_since, stand_in_now, AbsentWriteNow, StandInNow};

/// What kind of change a drift is; it decides the advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DriftKind {
    /// A root's realpath or kind, the launcher chain, or a fact that can no
    /// longer be read: compile again once the host is as intended.
    Host,
    /// A program that starts the sandbox (`bwrap`, `sandbox-exec`, `env`)
    /// changed, went missing or appeared.
    Builder,
    /// A denied or metadata-only root inside a write root, or an ancestor of
    /// one there, was moved or replaced. Never compile again for this:
    /// that would expose what was moved.
    Moved,
    /// A denied or metadata-only root inside a write root that was absent
    /// when compiled exists now. Nothing hid it while it was absent, so a
    /// run may have made it, with hard links to the files a host process
    /// writes there later. Never compile again for this: the new seal would
    /// hide it over whatever a run prepared in it.
    Appeared,
    /// A denied or metadata-only root inside a write root holds a file with
    /// another hard link (`sealc::root::linked`), through which the agent
    /// would read it, or cannot be walked to tell
    /// (`sealc::root::uncheckable`). Never compile again for this (a
    /// compile is refused the same way): remove the links, or start from a
    /// fresh write root.
    Linked,
}

impl DriftKind {
    /// Is compiling again the wrong remedy (a new seal would hide a decoy,
    /// or what a run prepared, and expose what it should hide)?
    pub fn never_recompile(self) -> bool {
        matches!(
            self,
            DriftKind::Moved | DriftKind::Appeared | DriftKind::Linked
        )
    }
}

/// One fact that no longer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drift {
    pub kind: DriftKind,
    pub message: String,
}

impl Drift {
    fn new(kind: DriftKind, message: String) -> Drift {
        Drift { kind, message }
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Why recompiling is no remedy, said with every [`DriftKind::Moved`] drift.
const EXPOSES: &str = "compiling again would expose what was moved";

/// Why recompiling is no remedy, said with every [`DriftKind::Appeared`]
/// drift.
const PREPARED: &str =
    "compiling again would hide it over whatever a run prepared in it (a hard link elsewhere to a file in it shows what is written there)";

/// The record's facts gathered again on this host, with the var values it
/// recorded (so the same paths are looked at), past errors; and what those
/// errors say: a file linked out of a denied root is [`DriftKind::Linked`].
/// What `host_drift` and `verify --live` both compare with the record.
pub struct Regathered {
    pub spec: crate::spec::Spec,
    pub here: crate::facts::Facts,
    pub errors: Vec<Drift>,
}

/// See [`Regathered`]; `None` when the recorded spec does not parse.
pub fn regather(record: &Record, host: &dyn Host) -> Option<Regathered> {
    let recorded = &record.facts;
    let src = &record.spec.text;
    let spec = crate::spec::parse(src).ok()?;
    let flags: Vec<(String, String)> = recorded
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (here, diags) = crate::facts::gather_all(&spec, src, &flags, recorded.platform, host);
    let errors = diags
        .0
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let kind = match d.code {
                crate::diag::code::ROOT_LINKED | crate::diag::code::ROOT_UNCHECKABLE => {
                    DriftKind::Linked
                }
                _ => DriftKind::Host,
            };
            Drift::new(kind, d.message.clone())
        })
        .collect();
    Some(Regathered { spec, here, errors })
}

/// The filesystem facts the seal was compiled against that no longer hold on
/// this host: each root's realpath (absent stays absent) and kind, the
/// identity of each denied root inside a write root and of its ancestors
/// there, the launcher chain, and the programs that start the sandbox. A
/// seal is only as good as these: a write root swapped for a symlink to
/// `/etc`, a denied root that appeared since, a denied directory renamed by
/// the last run and replaced by a decoy, or a replaced `bwrap` would make
/// the compiled mounts or rules mean something else. Env facts may differ.
pub fn host_drift(record: &Record, host: &dyn Host) -> Vec<Drift> {
    let recorded = &record.facts;
    let src = &record.spec.text;
    let Some(Regathered {
        spec,
        here,
        errors: mut drift,
    }) = regather(record, host)
    else {
        return vec![Drift::new(
            DriftKind::Host,
            "the recorded spec does not parse".into(),
        )];
    };

    let denied_reals: BTreeSet<&String> = reach_denied(&spec, src, recorded)
        .into_iter()
        .filter_map(|d| recorded.realpaths.get(&d))
        .collect();
    let dir_at = |at: &str| host.lstat(at) == Some(crate::facts::Kind::Dir);
    let mut appeared_reals: BTreeSet<String> = BTreeSet::new();
    let show = |r: Option<&String>| r.map_or("absent".to_string(), |r| quote(r));
    for at in realpaths_now(record, &spec, &here, &dir_at) {
        let (p, was, now) = (at.path, at.was, at.now);
        match at.verdict {
            RealpathNow::Same | RealpathNow::MadeWhereRecorded | RealpathNow::InStandIn => {}
            RealpathNow::Appeared => {
                let now = now.map_or_else(String::new, String::clone);
                drift.push(Drift::new(
                    DriftKind::Appeared,
                    format!(
                        "{}: the denied root inside a write root was absent when compiled and exists now (at {}): a run may have made it, since nothing hid it while it was absent; {PREPARED}",
                        quote(p),
                        quote(&now)
                    ),
                ));
                appeared_reals.insert(now);
            }
            RealpathNow::Moved => drift.push(Drift::new(
                DriftKind::Moved,
                format!(
                    "{}: the denied root was compiled as {}, now {}: it or an ancestor was moved or replaced since compiling; {EXPOSES}",
                    quote(p),
                    show(was),
                    show(now)
                ),
            )),
            RealpathNow::Gone | RealpathNow::Changed => drift.push(Drift::new(
                DriftKind::Host,
                format!("{}: compiled as {}, now {}", quote(p), show(was), show(now)),
            )),
        }
    }

    // Kinds; a pinned path's kind is part of its identity, compared below.
    let reals: BTreeSet<&String> = recorded.kinds.keys().chain(here.kinds.keys()).collect();
    for real in reals {
        if recorded.identities.contains_key(real) || appeared_reals.contains(real.as_str()) {
            continue;
        }
        let (was, now) = (recorded.kinds.get(real), here.kinds.get(real));
        if was != now && !made_since(recorded, real, now.copied(), &dir_at) {
            let show = |k: Option<&PathKind>| {
                k.map_or("nothing".to_string(), |k| format!("a {}", k.as_str()))
            };
            drift.push(Drift::new(
                DriftKind::Host,
                format!(
                    "{}: compiled as {}, now {}",
                    quote(real),
                    show(was),
                    show(now)
                ),
            ));
        }
    }

    // Protected paths absent when compiled: held by the same stand-in (or
    // object on the way), or inside a directory made at the stand-in's place.
    for (p, was) in &recorded.stand_ins {
        let held = |s: &crate::facts::StandIn| match s.kind {
            PathKind::Dir => format!("a stand-in at {}", quote(&s.at)),
            k => format!("the {} {} on the way", k.as_str(), quote(&s.at)),
        };
        let now = match stand_in_now(p, was, &here, &dir_at) {
            StandInNow::Same | StandInNow::DirAtPlace | StandInNow::InsidePlace => continue,
            StandInNow::HeldBy(n) => format!("held by {}", held(n)),
            StandInNow::There(r) => format!("it is there, at {}", quote(r)),
            StandInNow::Nowhere => "it has no place in a write root".to_string(),
        };
        drift.push(Drift::new(
            DriftKind::Host,
            format!(
                "{}: the protected path was absent when compiled (held by {}); now {now}",
                quote(p),
                held(was)
            ),
        ));
    }

    // Write roots absent when compiled: still to be made at the same place,
    // or made there.
    for (p, at) in &recorded.absent_writes {
        // There elsewhere: told above, by its realpath.
        if let AbsentWriteNow::MadeElsewhere(now) = absent_write_now(p, at, &here) {
            let now = now.map_or(
                "nowhere (nothing can be made under its nearest existing ancestor)".to_string(),
                quote,
            );
            drift.push(Drift::new(
                DriftKind::Host,
                format!(
                    "{}: the write root was absent when compiled and would be made at {}, now at {now}",
                    quote(p),
                    quote(at)
                ),
            ));
        }
    }

    // Denied roots absent when compiled, through a link: the links on the
    // way still lead where the profile denies them (an appeared root is
    // told above, by its realpath).
    // Re-allowed roots likewise.
    let absent: BTreeSet<(&String, bool)> = recorded
        .absent_denied
        .keys()
        .chain(here.absent_denied.keys())
        .map(|p| (p, true))
        .chain(
            recorded
                .absent_allowed
                .keys()
                .chain(here.absent_allowed.keys())
                .map(|p| (p, false)),
        )
        .collect();
    for (p, denied) in absent {
        let (was, now) = if denied {
            (recorded.absent_denied.get(p), here.absent_denied.get(p))
        } else {
            (recorded.absent_allowed.get(p), here.absent_allowed.get(p))
        };
        if was == now || here.realpaths.contains_key(p) {
            continue;
        }
        let (root, does) = if denied {
            ("denied", "denies")
        } else {
            ("re-allowed", "re-allows")
        };
        let place = |a: Option<&String>| {
            a.map_or("by its path as written".to_string(), |a| {
                format!("at {}", quote(a))
            })
        };
        drift.push(Drift::new(
            DriftKind::Host,
            format!(
                "{}: the {root} root was absent when compiled and would appear {}, now {}: a link on the way changed, and the profile {does} it where it was",
                quote(p),
                place(was),
                place(now)
            ),
        ));
    }

    // Identities: each recorded path looked at again where it was, whatever
    // the roots resolve to now.
    for (path, was) in &recorded.identities {
        let now = host.identity(path);
        if now.as_ref() == Some(was) {
            continue;
        }
        let what = if denied_reals.contains(path) {
            "the denied root".to_string()
        } else {
            match denied_reals.iter().find(|d| is_within(d, path)) {
                Some(d) => format!("an ancestor of the denied root {}", quote(d)),
                None => "an ancestor of a denied root".to_string(),
            }
        };
        let now = now.map_or("nothing".to_string(), |n: Identity| n.to_string());
        drift.push(Drift::new(
            DriftKind::Moved,
            format!(
                "{}: {what} was moved or replaced since compiling (compiled as {was}, now {now}); {EXPOSES}",
                quote(path)
            ),
        ));
    }
    for path in here.identities.keys() {
        // An appeared root and its ancestors there: said above.
        if appeared_reals.iter().any(|a| is_within(a, path)) {
            continue;
        }
        if !recorded.identities.contains_key(path) {
            drift.push(Drift::new(
                DriftKind::Host,
                format!(
                    "{}: a denied root inside a write root (or an ancestor of one) that the record does not pin",
                    quote(path)
                ),
            ));
        }
    }

    if here.launcher != recorded.launcher {
        drift.push(Drift::new(
            DriftKind::Host,
            "the launcher chain differs from the recorded one".into(),
        ));
    }

    let programs: BTreeSet<&String> = recorded
        .builders
        .keys()
        .chain(here.builders.keys())
        .collect();
    for p in programs {
        let message = match (recorded.builders.get(p), here.builders.get(p)) {
            (Some(was), Some(now)) if was == now => continue,
            (None, _) => format!(
                "{}, which starts the sandbox, is not pinned by the record",
                quote(p)
            ),
            (Some(was), now) => format!(
                "{}, which starts the sandbox, changed since compiling: compiled as {}, now {}",
                quote(p),
                chain_text(was),
                chain_text(now.map_or(&[][..], Vec::as_slice))
            ),
        };
        drift.push(Drift::new(DriftKind::Builder, message));
    }
    drift
}

/// The denied and metadata-only roots of a seal, as the record's vars
/// spell them; a Codex seal's other config layers are `deny_read` roots
/// too (`Spec::codex_denied`: the workspace's `.codex` is one, and it lies
/// in a write root).
fn reach_denied(
    spec: &crate::spec::Spec,
    src: &str,
    recorded: &crate::facts::Facts,
) -> BTreeSet<String> {
    let fs = &spec.filesystem;
    let mut denied = interpolated(&fs.deny_read, src, recorded);
    denied.extend(interpolated(&fs.metadata_only, src, recorded));
    denied.extend(interpolated(&spec.codex_denied(), src, recorded));
    denied
}

fn interpolated(
    list: &[crate::spec::Spanned<String>],
    src: &str,
    recorded: &crate::facts::Facts,
) -> BTreeSet<String> {
    list.iter()
        .filter_map(|r| crate::spec::interpolate(r, src, &recorded.vars).ok())
        .collect()
}

/// One root's realpath, compiled and now, and what the difference means.
pub struct RealpathAt<'a> {
    pub path: &'a str,
    pub was: Option<&'a String>,
    pub now: Option<&'a String>,
    pub verdict: RealpathNow,
}

/// What a root's realpath now means for the seal: one reading for both who
/// ask, `sealc exec`'s host check (refuses on the last four) and `sealc
/// verify --live` (reports each; only [`RealpathNow::Gone`] is "absent
/// here", since a reviewer's host may lack what the seal names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RealpathNow {
    Same,
    /// A write root absent when compiled, made since where the record says
    /// (by `sealc exec` or by hand): what the seal mounts.
    MadeWhereRecorded,
    /// A protected path absent when compiled, there now inside the place of
    /// its stand-in (a directory made there since), which is bound
    /// read-only as the stand-in.
    InStandIn,
    /// A denied root inside a write root, absent when compiled, exists now:
    /// a run may have made it ([`DriftKind::Appeared`]).
    Appeared,
    /// A denied root inside a write root (by its path or its realpath)
    /// resolves elsewhere now, or is gone: it or an ancestor was moved
    /// ([`DriftKind::Moved`]).
    Moved,
    /// Any other root there when compiled and gone now.
    Gone,
    /// Any other change.
    Changed,
}

/// Every root's realpath in the record or on the host now (`here`), with
/// its [`RealpathNow`]; `dir_at` says whether a directory is at a path.
pub fn realpaths_now<'a>(
    record: &'a Record,
    spec: &crate::spec::Spec,
    here: &'a crate::facts::Facts,
    dir_at: &dyn Fn(&str) -> bool,
) -> Vec<RealpathAt<'a>> {
    let recorded = &record.facts;
    let src = &record.spec.text;
    // The denied roots a run inside the seal can reach: inside a write root
    // by the path as written, or by the recorded realpath.
    let writes = interpolated(&spec.filesystem.write, src, recorded);
    let write_reals: Vec<&String> = writes
        .iter()
        .filter_map(|w| recorded.realpaths.get(w))
        .collect();
    let denied = reach_denied(spec, src, recorded);
    let movable = |p: &str| {
        denied.contains(p)
            && (writes.iter().any(|w| is_within(p, w))
                || recorded
                    .realpaths
                    .get(p)
                    .is_some_and(|r| write_reals.iter().any(|w| is_within(r, w))))
    };
    // A denied root absent when compiled that exists now, inside a write
    // root by the path as written or by where it is now.
    let appeared = |p: &str, now: &str| {
        denied.contains(p)
            && (writes.iter().any(|w| is_within(p, w))
                || write_reals.iter().any(|w| is_within(now, w))
                || recorded.absent_writes.values().any(|a| is_within(now, a)))
    };
    let in_stand_in = |p: &str, now: &str| {
        recorded
            .stand_ins
            .get(p)
            .is_some_and(|s| s.kind == PathKind::Dir && is_within(now, &s.at) && dir_at(&s.at))
    };
    let all: BTreeSet<&String> = recorded
        .realpaths
        .keys()
        .chain(here.realpaths.keys())
        .collect();
    all.into_iter()
        .map(|p| {
            let (was, now) = (recorded.realpaths.get(p), here.realpaths.get(p));
            let verdict = match (was, now) {
                _ if was == now => RealpathNow::Same,
                (None, Some(n)) if Some(n) == recorded.absent_writes.get(p) => {
                    RealpathNow::MadeWhereRecorded
                }
                (None, Some(n)) if in_stand_in(p, n) => RealpathNow::InStandIn,
                (None, Some(n)) if appeared(p, n) => RealpathNow::Appeared,
                (Some(_), _) if movable(p) => RealpathNow::Moved,
                (Some(_), None) => RealpathNow::Gone,
                _ => RealpathNow::Changed,
            };
            RealpathAt {
                path: p,
                was,
                now,
                verdict,
            }
        })
        .collect()
}

/// A chain as one line: each entry, the file with its digest; `absent` when empty.
pub(crate) fn chain_text(chain: &[ChainLink]) -> String {
    if chain.is_empty() {
        return "absent".into();
    }
    let mut parts: Vec<String> = chain
        .iter()
        .map(|l| match &l.digest {
            Some(d) => format!("{} {d}", quote(&l.path)),
            None => quote(&l.path),
        })
        .collect();
    if chain.last().is_some_and(|l| l.kind != LinkKind::File) {
        parts.push("no regular file".into());
    }
    parts.join(" → ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::FakeHost;

    const SPEC: &str = "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/w\"]\ndeny_read = [\"/w/a/secret\"]\nmetadata_only = [\"/w/m\"]\n";

    fn host() -> FakeHost {
        FakeHost::new()
            .file("/w/a/secret", b"s")
            .dir("/w/m")
            .file("/usr/bin/bwrap", b"bwrap")
            .file("/usr/bin/env", b"env")
    }

    fn record(h: &FakeHost) -> Record {
        crate::compile("m.toml", SPEC, &Vec::new(), h)
            .expect("compiles")
            .record
    }

    #[test]
    fn identities_pin_each_denied_root_in_a_write_root_and_its_ancestors_there() {
        let r = record(&host());
        let pinned: Vec<&str> = r.facts.identities.keys().map(String::as_str).collect();
        assert_eq!(pinned, ["/w/a", "/w/a/secret", "/w/m"]);
        assert!(host_drift(&r, &host()).is_empty());
    }

    #[test]
    fn a_moved_parent_or_root_is_drift_that_never_says_compile_again() {
        let r = record(&host());
        for moved in ["/w/a", "/w/a/secret", "/w/m"] {
            let d = host_drift(&r, &host().inode(moved, 7));
            assert_eq!(d.len(), 1, "{d:?}");
            assert_eq!(d[0].kind, DriftKind::Moved);
            assert!(d[0].message.contains("moved or replaced"), "{}", d[0]);
            assert!(d[0].message.contains(EXPOSES), "{}", d[0]);
            assert!(d[0].message.contains("inode 7"), "{}", d[0]);
        }
        let d = host_drift(&r, &host().inode("/w/a", 9));
        assert!(d[0]
            .message
            .contains("ancestor of the denied root `/w/a/secret`"));
        // The parent replaced by a symlink to a decoy: the realpath moved too.
        let mut swapped = host();
        swapped.files.remove("/w/a/secret");
        let swapped = swapped.file("/w/decoy/secret", b"d").link("/w/a", "decoy");
        let d = host_drift(&r, &swapped);
        assert!(d.iter().any(|d| d.kind == DriftKind::Moved), "{d:?}");
        assert!(
            d.iter().any(|d| d.message.contains("`/w/decoy/secret`")),
            "{d:?}"
        );
    }

    /// Issue 11, item 7: a write root absent when compiled may appear
    /// where the record says it is made (that is what the seal mounts);
    /// anywhere else, or as anything but a directory, it is drift.
    #[test]
    fn an_absent_write_root_made_where_recorded_is_no_drift() {
        let spec = SPEC.replace("write = [\"/w\"]", "write = [\"/w\", \"/r/new/ws\"]");
        let h = host().dir("/r");
        let r = crate::compile("m.toml", &spec, &Vec::new(), &h)
            .unwrap()
            .record;
        assert_eq!(r.facts.absent_writes["/r/new/ws"], "/r/new/ws");
        assert!(host_drift(&r, &h).is_empty());
        assert!(host_drift(&r, &h.clone().dir("/r/new/ws")).is_empty());
        let d = host_drift(&r, &h.clone().file("/r/new/ws", b"x"));
        assert!(d.iter().any(|d| d.message.contains("now a file")), "{d:?}");
        let d = host_drift(
            &r,
            &h.clone().dir("/elsewhere").link("/r/new", "/elsewhere"),
        );
        assert!(
            d.iter().any(|d| d.message.contains("`/elsewhere/ws`")),
            "{d:?}"
        );
    }

    /// Issue 22, finding 3: a denied root absent when compiled that a run
    /// made (nothing hid it) is drift of its own kind, never answered with
    /// "compile again"; with a link prepared in it, the link is said too.
    #[test]
    fn a_denied_root_that_appeared_in_a_write_root_is_never_recompiled() {
        let mut h = host();
        h.files.remove("/w/a/secret");
        let r = record(&h);
        assert!(!r.facts.realpaths.contains_key("/w/a/secret"));
        assert!(host_drift(&r, &h).is_empty());
        let made = h.clone().file("/w/a/secret", b"");
        let d = host_drift(&r, &made);
        assert!(!d.is_empty(), "{d:?}");
        assert!(d.iter().all(|d| d.kind == DriftKind::Appeared), "{d:?}");
        assert!(
            d[0].message
                .contains("`/w/a/secret`: the denied root inside a write root was absent when compiled and exists now (at `/w/a/secret`)"),
            "{}",
            d[0]
        );
        assert!(d[0].message.contains(PREPARED), "{}", d[0]);
        assert!(!d[0].message.contains("compile again"), "{}", d[0]);
        let linked = made.hard_link("/w/a/secret", "/w/.peek");
        let d = host_drift(&r, &linked);
        let kinds: BTreeSet<DriftKind> = d.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [DriftKind::Appeared, DriftKind::Linked].into(),
            "{d:?}"
        );
        assert!(d.iter().all(|d| d.kind.never_recompile()));
        assert!(
            d.iter()
                .any(|d| d.message.contains("`/w/a/secret` is also `/w/.peek`")),
            "{d:?}"
        );
        // A root outside the write roots that appeared is a host change.
        let spec = SPEC.replace("deny_read = [", "deny_read = [\"/elsewhere\", ");
        let r = crate::compile("m.toml", &spec, &Vec::new(), &host())
            .unwrap()
            .record;
        let d = host_drift(&r, &host().dir("/elsewhere"));
        assert!(!d.is_empty(), "{d:?}");
        assert!(d.iter().all(|d| d.kind == DriftKind::Host), "{d:?}");
    }

    /// A Codex seal denies its workspace's `.codex` (Codex's project
    /// layer): made since compiling, it appeared, like any denied root.
    #[test]
    fn a_workspace_codex_layer_that_appeared_is_never_recompiled() {
        let spec = format!(
            "{SPEC}[env]\nset = {{ CODEX_HOME = \"/w/home/.codex\" }}\n[codex]\nworkspace = \"/w\"\n"
        );
        let r = crate::compile("m.toml", &spec, &Vec::new(), &host())
            .unwrap()
            .record;
        assert!(host_drift(&r, &host()).is_empty());
        let d = host_drift(&r, &host().dir("/w/.codex"));
        assert!(!d.is_empty(), "{d:?}");
        assert!(d.iter().all(|d| d.kind == DriftKind::Appeared), "{d:?}");
    }

    /// A link to a denied file made after compiling (by a host process):
    /// refused before the run, of the kind that never says compile again.
    #[test]
    fn a_link_made_after_compiling_is_linked_drift() {
        let r = record(&host());
        let d = host_drift(&r, &host().hard_link("/w/a/secret", "/w/.peek"));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].kind, DriftKind::Linked);
        assert!(
            d[0].message.contains("the `filesystem.deny_read` root `/w/a/secret` holds 1 file with another hard link, which the seal does not hide: `/w/a/secret` is also `/w/.peek`"),
            "{}",
            d[0]
        );
        // In a metadata-only root, with its other link out of sight.
        let d = host_drift(&r, &host().file("/w/m/f", b"").links_elsewhere("/w/m/f", 3));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].kind, DriftKind::Linked);
        assert!(d[0]
            .message
            .ends_with("with 3 links outside the write roots"));
    }

    #[test]
    fn a_replaced_missing_or_new_builder_is_drift() {
        let r = record(&host());
        assert_eq!(r.facts.builders.len(), 2);
        let changed = host().file("/usr/bin/bwrap", b"evil");
        let d = host_drift(&r, &changed);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].kind, DriftKind::Builder);
        assert!(d[0]
            .message
            .contains("`/usr/bin/bwrap`, which starts the sandbox, changed"));
        let mut gone = host();
        gone.files.remove("/usr/bin/env");
        let d = host_drift(&r, &gone);
        assert!(d[0].message.ends_with("now absent"), "{}", d[0]);
        let mut without = host();
        without.files.remove("/usr/bin/env");
        let r = record(&without);
        assert_eq!(r.facts.builders["/usr/bin/env"], vec![]);
        let d = host_drift(&r, &host());
        assert!(d[0].message.contains("compiled as absent"), "{}", d[0]);
    }
}
