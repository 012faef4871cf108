//! What `verify` checks against this host (`--live`) and the Codex config
//! read back after a run.

use super::*;
use crate::drift::{AbsentWriteNow, RealpathNow, StandInNow};

/// Re-resolve the facts on a host and compare them, fact by fact, with the
/// record: `ok` (checked), `drift` (differs, both values shown) or
/// `absent here`.
pub fn live_facts(record: &Record, host: &dyn Host, rep: &mut Report) {
    let Ok(spec) = crate::spec::parse(&record.spec.text) else {
        return;
    };
    let src = &record.spec.text;
    let recorded = &record.facts;
    // Vars: re-resolved from env and defaults (no flags: a var given by flag
    // at compile time is absent here unless the env gives it).
    let live_vars = crate::facts::gather(&spec, src, &Vec::new(), host)
        .map(|(f, _)| f.vars)
        .unwrap_or_default();
    for (name, value) in &recorded.vars {
        let subject = format!("live var {name}");
        match live_vars.get(name) {
            Some(v) if v == value => rep.push(subject, Status::Ok, "checked"),
            Some(v) => rep.push(
                subject,
                Status::Drift,
                format!("record {}, here {}", quote(value), quote(v)),
            ),
            None => rep.push(
                subject,
                Status::Absent,
                "no value here without the compile-time flags",
            ),
        }
    }
    // Everything else is re-resolved with the recorded var values, so the
    // same paths are looked at, as `sealc exec`'s host check does
    // (`drift::regather`): every fact that could be read, past errors (a
    // file linked out of a denied root is one; it must not blank the rest).
    let Some(crate::drift::Regathered { here, errors, .. }) = crate::drift::regather(record, host)
    else {
        return;
    };
    for d in errors
        .iter()
        .filter(|d| d.kind == crate::drift::DriftKind::Linked)
    {
        rep.push("live hard links", Status::Drift, d.message.clone());
    }
    // Each root's realpath as the host check reads it: from the same
    // regathered facts (`here`), judged by the same reading
    // (`drift::realpaths_now`), not a second one.
    let dir_at = |at: &str| host.lstat(at) == Some(crate::facts::Kind::Dir);
    for at in crate::drift::realpaths_now(record, &spec, &here, &dir_at) {
        let subject = format!("live realpath {}", at.path);
        let show = |r: Option<&String>| r.map_or("absent".to_string(), |r| quote(r));
        let changed = || format!("record {}, here {}", show(at.was), show(at.now));
        match at.verdict {
            RealpathNow::Same => rep.push(subject, Status::Ok, "checked"),
            // Reported below, with the write root or the stand-in.
            RealpathNow::MadeWhereRecorded | RealpathNow::InStandIn => {}
            RealpathNow::Gone => rep.push(subject, Status::Absent, "does not exist here"),
            RealpathNow::Changed => rep.push(subject, Status::Drift, changed()),
            RealpathNow::Moved => rep.push(
                subject,
                Status::Drift,
                format!(
                    "{}: the denied root inside a write root, or an ancestor, was moved or replaced",
                    changed()
                ),
            ),
            RealpathNow::Appeared => rep.push(
                subject,
                Status::Drift,
                format!(
                    "{}: the denied root inside a write root was absent when compiled; a run may have made it",
                    changed()
                ),
            ),
        }
    }
    // Read as `sealc exec`'s host check reads them (`drift::now`).
    for (path, at) in &recorded.absent_writes {
        let subject = format!("live absent write root {path}");
        match crate::drift::absent_write_now(path, at, &here) {
            AbsentWriteNow::Made => rep.push(subject, Status::Ok, "made where the record says"),
            AbsentWriteNow::There(r) => rep.push(
                subject,
                Status::Drift,
                format!("record made at {}, here {}", quote(at), quote(r)),
            ),
            AbsentWriteNow::ToBeMade => {
                rep.push(subject, Status::Absent, "absent here, as when compiled")
            }
            AbsentWriteNow::MadeElsewhere(_) => rep.push(
                subject,
                Status::Drift,
                format!(
                    "record made at {}, here it would be made elsewhere",
                    quote(at)
                ),
            ),
        }
    }
    // Protected paths absent when compiled: what holds their place. A
    // directory made at a stand-in's place since is used, as `exec` does.
    for (path, was) in &recorded.stand_ins {
        let subject = format!("live stand-in {path}");
        let (status, what) = match crate::drift::stand_in_now(path, was, &here, &dir_at) {
            StandInNow::Same => (Status::Ok, "absent here, as when compiled".into()),
            StandInNow::DirAtPlace => (
                Status::Ok,
                "a directory is at the stand-in's place: it is used".into(),
            ),
            StandInNow::InsidePlace => (
                Status::Ok,
                "there here, inside the stand-in's place: it is used".into(),
            ),
            StandInNow::HeldBy(now) => (
                Status::Drift,
                format!(
                    "record held at {}, here at {}",
                    quote(&was.at),
                    quote(&now.at)
                ),
            ),
            StandInNow::There(r) => (
                Status::Drift,
                format!(
                    "record held by a stand-in at {}, here {} is there, not in a directory at its place",
                    quote(&was.at),
                    quote(r)
                ),
            ),
            StandInNow::Nowhere => (
                Status::Drift,
                format!(
                    "record held at {}, here nowhere it can be kept",
                    quote(&was.at)
                ),
            ),
        };
        rep.push(subject, status, what);
    }
    let reals: std::collections::BTreeSet<&String> =
        recorded.kinds.keys().chain(here.kinds.keys()).collect();
    for real in reals {
        if crate::drift::made_since(recorded, real, here.kinds.get(real).copied(), &dir_at) {
            continue; // a made write root, or a stand-in's place: reported above
        }
        let subject = format!("live kind {real}");
        match (recorded.kinds.get(real), here.kinds.get(real)) {
            (Some(kind), Some(k)) if k == kind => rep.push(subject, Status::Ok, "checked"),
            (Some(kind), Some(k)) => rep.push(
                subject,
                Status::Drift,
                format!("record a {}, here a {}", kind.as_str(), k.as_str()),
            ),
            (Some(_), None) => rep.push(subject, Status::Absent, "does not exist here"),
            (None, Some(k)) => rep.push(
                subject,
                Status::Drift,
                format!("not in the record, here a {}", k.as_str()),
            ),
            (None, None) => {}
        }
    }
    if let Some(head) = recorded.launcher.first() {
        let subject = format!("live launcher {}", head.path);
        if host.lstat(&head.path).is_none() {
            rep.push(subject, Status::Absent, "the launcher does not exist here");
        } else if here.launcher == recorded.launcher {
            let digest = recorded
                .launcher
                .last()
                .and_then(|l| l.digest.clone())
                .unwrap_or_default();
            rep.push(
                subject,
                Status::Ok,
                format!(
                    "checked: {} links, {}",
                    recorded.launcher.len(),
                    digest_text(&digest)
                ),
            );
        } else {
            let show = |c: &[crate::facts::ChainLink]| {
                c.iter()
                    .map(|l| {
                        l.digest
                            .as_deref()
                            .map_or(l.path.clone(), |d| format!("{} {}", l.path, digest_text(d)))
                    })
                    .collect::<Vec<_>>()
                    .join(" → ")
            };
            rep.push(
                subject,
                Status::Drift,
                format!(
                    "record {}, here {}",
                    show(&recorded.launcher),
                    show(&here.launcher)
                ),
            );
        }
    }
    for (path, was) in &recorded.identities {
        let subject = format!("live identity {path}");
        match host.identity(path) {
            Some(now) if now == *was => rep.push(subject, Status::Ok, "checked"),
            Some(now) => rep.push(
                subject,
                Status::Drift,
                format!("record {was}, here {now}: moved or replaced since compiling"),
            ),
            None => rep.push(subject, Status::Absent, "does not exist here"),
        }
    }
    for (program, was) in &recorded.builders {
        let subject = format!("live builder {program}");
        let now = here.builders.get(program).cloned().unwrap_or_default();
        let digest = |c: &[crate::facts::ChainLink]| {
            c.last()
                .and_then(|l| l.digest.clone())
                .unwrap_or_else(|| "no regular file".into())
        };
        match (was.is_empty(), now.is_empty()) {
            _ if *was == now && !was.is_empty() => {
                rep.push(subject, Status::Ok, format!("checked: {}", digest(was)))
            }
            (true, true) => rep.push(subject, Status::Absent, "absent here, as when compiled"),
            (false, true) => rep.push(subject, Status::Absent, "does not exist here"),
            _ => rep.push(
                subject,
                Status::Drift,
                format!(
                    "record {}, here {}",
                    crate::drift::chain_text(was),
                    crate::drift::chain_text(&now)
                ),
            ),
        }
    }
    for (name, value) in &recorded.env {
        let subject = format!("live env {name}");
        match (value, host.env(name)) {
            (Some(v), Some(Ok(h))) if *v == h => rep.push(subject, Status::Ok, "checked"),
            (None, None) => rep.push(subject, Status::Ok, "checked: not set, as recorded"),
            (_, None) => rep.push(subject, Status::Absent, "not set here"),
            (Some(v), Some(Ok(h))) => rep.push(
                subject,
                Status::Drift,
                format!("record {}, here {}", quote(v), quote(&h)),
            ),
            (None, Some(Ok(h))) => rep.push(
                subject,
                Status::Drift,
                format!("record unset, here {}", quote(&h)),
            ),
            (_, Some(Err(()))) => rep.push(subject, Status::Drift, "not UTF-8 here"),
        }
    }
}

/// Compare a Codex config after a run with the generated one. A config that
/// records the workspace (`[codex] workspace`: untrusted, so its project
/// layer never loads) must come back unchanged. Otherwise the only change
/// allowed is the table Codex writes for its own working directory:
/// `[projects."<workspace>"] trust_level = "trusted"`.
pub fn check_codex_config(generated: &[u8], after: &[u8], workspaces: &[String], rep: &mut Report) {
    let parse = |b: &[u8]| -> Result<toml::Table, String> {
        let s = std::str::from_utf8(b).map_err(|_| "not UTF-8".to_string())?;
        toml::from_str::<toml::Table>(s).map_err(|e| e.message().to_string())
    };
    let Ok(ours) = parse(generated) else { return };
    let mut theirs = match parse(after) {
        Ok(t) => t,
        Err(e) => {
            rep.push(
                "codex config",
                Status::Drift,
                format!("not valid TOML: {e}"),
            );
            return;
        }
    };
    let mut problems = Vec::new();
    let recorded = ours.contains_key("projects");
    let added = if recorded {
        None
    } else {
        theirs.remove("projects")
    };
    if let Some(projects) = added {
        let ok = projects.as_table().is_some_and(|t| {
            t.len() == 1
                && t.iter().all(|(k, v)| {
                    workspaces.contains(k)
                        && v.as_table().is_some_and(|p| {
                            p.len() == 1
                                && p.get("trust_level").and_then(|l| l.as_str()) == Some("trusted")
                        })
                })
        });
        if !ok {
            problems.push(format!(
                "`projects` may hold only `[projects.{}] trust_level = \"trusted\"`; found `{}`",
                quote(workspaces.first().map_or("", |w| w.as_str())),
                visible(
                    toml::to_string(&projects)
                        .unwrap_or_default()
                        .replace('\n', " ")
                        .trim()
                )
            ));
        }
    }
    diff_tables("", &ours, &theirs, &mut problems);
    if problems.is_empty() {
        rep.push(
            "codex config",
            Status::Ok,
            if recorded {
                "unchanged"
            } else {
                "unchanged but for the workspace trust entry Codex writes"
            },
        );
    } else {
        for p in problems {
            rep.push("codex config", Status::Drift, p);
        }
    }
}

pub(super) fn diff_tables(
    prefix: &str,
    ours: &toml::Table,
    theirs: &toml::Table,
    out: &mut Vec<String>,
) {
    let keys: std::collections::BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    for k in keys {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (ours.get(k), theirs.get(k)) {
            (Some(toml::Value::Table(a)), Some(toml::Value::Table(b))) => {
                diff_tables(&path, a, b, out)
            }
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => out.push(format!("`{path}` changed from `{a}` to `{b}`")),
            (Some(_), None) => out.push(format!("`{path}` was removed")),
            (None, Some(b)) => out.push(format!("`{path}` was added: `{b}`")),
            (None, None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::FakeHost;

    /// `verify --live` and `sealc exec`'s host check read a write root made
    /// for the run alike (`drift::now`): wherever one sees drift, so does
    /// the other. Before, a file at a made root's place passed `--live`
    /// (its kind was skipped as "made") while `exec` refused it.
    #[test]
    fn live_and_the_host_check_agree_on_a_write_root_made_for_the_run() {
        let spec = "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/w\", \"/r/new/ws\"]\n";
        let h = FakeHost::new()
            .dir("/w")
            .dir("/r")
            .file("/usr/bin/bwrap", b"bwrap")
            .file("/usr/bin/env", b"env");
        let r = crate::compile("m.toml", spec, &Vec::new(), &h)
            .expect("compiles")
            .record;
        for (what, host, drifts) in [
            ("still absent", h.clone(), false),
            ("made where recorded", h.clone().dir("/r/new/ws"), false),
            (
                "a file in its place",
                h.clone().file("/r/new/ws", b"x"),
                true,
            ),
            (
                "made elsewhere, through a link",
                h.clone().dir("/elsewhere").link("/r/new", "/elsewhere"),
                true,
            ),
        ] {
            let exec = !crate::drift::host_drift(&r, &host).is_empty();
            let mut rep = Report::default();
            live_facts(&r, &host, &mut rep);
            let live = rep.checks.iter().any(|c| c.status == Status::Drift);
            assert_eq!((exec, live), (drifts, drifts), "{what}: {:?}", rep.checks);
        }
    }

    /// A denied root inside a write root that a run moved away, replaced by
    /// a link, or made after compiling: `sealc exec` refuses each, and
    /// `verify --live` says drift for each, from the same reading
    /// (`drift::realpaths_now`). Before, a moved-away root was only
    /// "absent here" for `--live`, which verified.
    #[test]
    fn live_and_the_host_check_agree_on_a_denied_root_in_a_write_root() {
        let spec = "version = 1\nname = \"m\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/w\"]\ndeny_read = [\"/w/secret\", \"/w/later\", \"/gone\"]\n";
        let h = FakeHost::new()
            .dir("/w")
            .dir("/w/secret")
            .dir("/gone")
            .dir("/elsewhere")
            .file("/usr/bin/bwrap", b"bwrap")
            .file("/usr/bin/env", b"env");
        let r = crate::compile("m.toml", spec, &Vec::new(), &h)
            .expect("compiles")
            .record;
        let bare = || {
            FakeHost::new()
                .dir("/w")
                .dir("/gone")
                .dir("/elsewhere")
                .file("/usr/bin/bwrap", b"bwrap")
                .file("/usr/bin/env", b"env")
        };
        for (what, host, drifts) in [
            ("unchanged", h.clone(), false),
            ("moved away", bare(), true),
            (
                "a link in its place",
                bare().link("/w/secret", "/elsewhere"),
                true,
            ),
            ("made after compiling", h.clone().dir("/w/later"), true),
        ] {
            let exec = crate::drift::host_drift(&r, &host);
            let mut rep = Report::default();
            live_facts(&r, &host, &mut rep);
            let live = rep.checks.iter().any(|c| c.status == Status::Drift);
            assert_eq!(
                (!exec.is_empty(), live),
                (drifts, drifts),
                "{what}: {exec:?} {:?}",
                rep.checks
            );
        }
        // A root outside every write root, gone here: a reviewer's host may
        // lack it; `--live` says so and the host check refuses.
        let host = FakeHost::new()
            .dir("/w")
            .dir("/w/secret")
            .dir("/elsewhere")
            .file("/usr/bin/bwrap", b"bwrap")
            .file("/usr/bin/env", b"env");
        assert!(!crate::drift::host_drift(&r, &host).is_empty());
        let mut rep = Report::default();
        live_facts(&r, &host, &mut rep);
        assert!(
            rep.checks.iter().all(|c| c.status != Status::Drift),
            "{:?}",
            rep.checks
        );
        assert!(rep
            .checks
            .iter()
            .any(|c| c.subject == "live realpath /gone" && c.status == Status::Absent));
    }
}
