//! What `sealc exec` tells the caller when it cannot start: the help lines
//! for a missing bubblewrap, drift and a wrong platform, the command that
//! recompiles the seal, and the layers a dry run would apply.

use super::*;

use std::path::PathBuf;

use crate::facts::RealHost;

/// What to do when the seal's bubblewrap is not on this host (compile
/// warns of it too: `sealc::exec::no-bwrap`).
pub(super) fn no_bwrap_help(program: &str) -> String {
    format!(
        "bubblewrap {} is not on this host: install bubblewrap 0.8 or newer (`apt-get install bubblewrap`), or set `[exec] bwrap` in the spec to where it is; then compile the seal again (its digest is part of the seal)",
        quote(program)
    )
}

/// What to do when bubblewrap could not build the sandbox: the cause the
/// probe found and its fix, and where to look at every layer.
pub(super) fn sandbox_start_help(p: &crate::exec::probe::Probe) -> Vec<String> {
    vec![
        crate::exec::probe::fix(p),
        "`sealc doctor` checks every layer a Linux seal uses on this host, and says what is missing".to_string(),
    ]
}

/// What to do about host drift, by its kind. A denied root inside a write
/// root that a run moved, made or linked is never answered with "compile
/// again", whatever else drifted: the new seal would hide the decoy left in
/// its place, or what a run prepared, and expose what it should hide.
/// Otherwise the help is the whole command that compiles the seal again
/// over this one, and how to review the change before pinning the new
/// binding.
pub(super) fn drift_help(
    drift: &[crate::drift::Drift],
    rec: &crate::record::Record,
    record: &Path,
) -> Vec<String> {
    use crate::drift::DriftKind;
    let has = |k: DriftKind| drift.iter().any(|d| d.kind == k);
    if drift.iter().any(|d| d.kind.never_recompile()) {
        let mut help = Vec::new();
        if has(DriftKind::Moved) {
            help.push("keep this record: a denied root (or an ancestor of one) inside a write root was moved or replaced, and a new compile would hide what now stands there and expose what was moved; put the moved paths back, or start from a fresh write root, then run this record");
        }
        if has(DriftKind::Appeared) {
            help.push("keep this record: a denied root inside a write root that was absent when compiled exists now; nothing hid it while it was absent, so a run may have made it, with hard links elsewhere to the files a host process will write there, and a new seal would hide it over what a run prepared; start from a fresh write root (one no run has written to), then run this record; to hide such a root from the first run, make it before compiling");
        }
        if has(DriftKind::Linked) {
            help.push("keep this record: a denied root inside a write root holds a file with another hard link (or could not be checked for them), and the agent would read the file through that link; remove the links named above (the denied file keeps its content), or start from a fresh write root, then run this record (a new compile is refused the same way)");
        }
        return help.into_iter().map(String::from).collect();
    }
    let mut first = Vec::new();
    if has(DriftKind::Builder) {
        first.push("a program that starts the sandbox changed: make sure the new one is one you trust (a package upgrade)");
    }
    if has(DriftKind::Host) {
        first.push("make sure the roots exist and are the ones you mean");
    }
    if first.is_empty() {
        return Vec::new();
    }
    let dir = record
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let new_dir = PathBuf::from(format!("{}.new", dir.display()));
    let word = |p: &Path| crate::diag::shell_word(&p.display().to_string());
    let record_name = crate::record::FILE;
    vec![
        format!(
            "{}, then compile the seal again on this host over this one (in the directory of `{}`, the spec it was compiled from): `{} --force`",
            first.join("; "),
            rec.spec.file,
            recompile_command(rec, &dir)
        ),
        format!(
            "to review the change before you pin the new binding with `--expect`, compile into another directory instead (`--out {}`, no `--force`) and run `sealc diff {} {}`",
            word(&new_dir),
            word(&dir.join(record_name)),
            word(&new_dir.join(record_name)),
        ),
    ]
}

/// `sealc compile` of the record's spec with its platform and the var
/// values it recorded (those this host would not give by itself), into
/// `dir`.
pub(super) fn recompile_command(rec: &crate::record::Record, dir: &Path) -> String {
    use crate::diag::shell_word;
    let mut words = vec![
        "sealc".to_string(),
        "compile".into(),
        shell_word(&rec.spec.file),
    ];
    if let Some(p) = rec.facts.platform {
        words.extend(["--platform".to_string(), p.as_str().to_string()]);
    }
    let here = crate::spec::parse(&rec.spec.text)
        .map(|spec| {
            crate::facts::gather_all(
                &spec,
                &rec.spec.text,
                &Vec::new(),
                rec.facts.platform,
                &RealHost,
            )
            .0
            .vars
        })
        .unwrap_or_default();
    for (name, value) in &rec.facts.vars {
        if here.get(name) != Some(value) {
            words.extend(["--var".to_string(), shell_word(&format!("{name}={value}"))]);
        }
    }
    words.extend(["--out".to_string(), shell_word(&dir.display().to_string())]);
    words.join(" ")
}

/// A seal for the other platform: it cannot run here, and saying so beats
/// the "not found" of its sandbox program.
pub(super) fn wrong_platform(target: crate::spec::Platform) -> Option<String> {
    let host = crate::spec::Platform::host();
    (target != host).then(|| {
        format!(
            "this seal targets {} ({}), and this host is {}",
            target.display_name(),
            match target {
                crate::spec::Platform::Macos => "seatbelt, `sandbox-exec`",
                crate::spec::Platform::Linux => "bubblewrap",
            },
            host.display_name()
        )
    })
}

/// What `--dry-run` says of the sandbox's layers.
pub(super) fn dry_run_layers(ir: &crate::ir::Ir, plan: &crate::exec::Plan) -> serde_json::Value {
    if ir.platform != crate::spec::Platform::Linux {
        return serde_json::json!({
            "seatbelt": "the verified profile, by sandbox-exec -p",
            "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()),
        });
    }
    let abi = crate::exec::landlock_abi();
    if ir.exec.isolation == crate::spec::Isolation::Landlock {
        let policy = crate::backend::landlock::policy(ir);
        let mut applied = Vec::new();
        if abi >= 1 {
            applied.push("reads only beneath the read rules (data: never beneath a hidden root), writes only beneath the write roots and devices");
        }
        if abi >= 4 && policy.tcp_connect.is_some() {
            applied.push("TCP connect only to the listed ports, and no TCP bind");
        }
        if abi >= 6 {
            applied.push("abstract unix sockets and signals scoped to the command");
        } else {
            applied.push("NOT applied (ABI 6 needed): abstract unix sockets and signals outside the command stay reachable");
        }
        return serde_json::json!({
            "isolation": "landlock: no namespace; the host's filesystem, network, processes and /proc, under the rules below",
            "landlock": {
                "abi": abi,
                "needed": crate::backend::landlock::abi_needed(ir),
                "applied": applied,
                "rules": policy.rules.iter().map(|r| format!("{} {}", r.access.as_str(), r.path)).collect::<Vec<_>>(),
                "hidden": policy.hidden.iter().map(|h| h.path.clone()).collect::<Vec<_>>(),
                "tcp_connect": policy.tcp_connect,
            },
            "proc": crate::describe::proc_words(ir.exec.proc),
            "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()),
            "seccomp": crate::backend::landlock::refused_for(ir, crate::exec::shared_user(plan.user)),
            "processes": "sealc's init is the command's subreaper, in a session of its own; every process below it ends when the command ends or sealc goes away",
        });
    }
    let landlock = crate::backend::bwrap::landlock(ir);
    let mut applied = Vec::new();
    if abi >= 1 {
        applied.push("writes only beneath the write roots and devices");
    }
    if abi >= 4 && landlock.tcp_connect.is_some() {
        applied.push("TCP connect only to the listed ports");
    }
    if abi >= 6 {
        applied.push("abstract unix sockets and signals scoped to the command");
    }
    serde_json::json!({
        "landlock": { "abi": abi, "applied": applied, "policy": landlock },
        "namespaces": if ir.exec.proc == crate::spec::ProcMode::Fresh {
            "user (no nested one), mount, pid (sealc's init is pid 1), ipc, uts, cgroup; network unless `open`"
        } else {
            "user (no nested one: the seccomp filter refuses them; bubblewrap's own switch-off needs a fresh /proc), mount, pid (sealc's init is pid 1), ipc, uts, cgroup; network unless `open`"
        },
        "proc": crate::describe::proc_words(ir.exec.proc),
        "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()),
        "seccomp": crate::backend::bwrap::refused(ir),
        "skipped": plan.skipped,
    })
}

/// Where the root that hides `path` (as the host names it, links
/// resolved) comes from, if the seal hides it: `filesystem.deny_read
/// "${home}"`.
pub(super) fn hidden_by(ir: &crate::ir::Ir, path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let by = [path, real.as_path()]
        .into_iter()
        .find_map(|p| ir.hiding_root(&p.to_string_lossy()))
        .map(crate::ir::Root::entry);
    by
}

/// Why the sandbox found no command `program`: the root of the seal that
/// hides it where it is on this host (an absolute path, or each directory
/// of the seal's `PATH`).
pub(super) fn not_found_help(ir: &crate::ir::Ir, program: &std::ffi::OsStr) -> Vec<String> {
    let name = Path::new(program);
    let candidates: Vec<PathBuf> = if name.is_absolute() {
        vec![name.to_path_buf()]
    } else if name.components().count() > 1 {
        Vec::new() // relative to a working directory: nothing to tell
    } else {
        ir.env
            .vars
            .get("PATH")
            .map(|p| p.split(':').map(|d| Path::new(d).join(name)).collect())
            .unwrap_or_default()
    };
    let hidden = candidates
        .iter()
        .filter(|c| std::fs::symlink_metadata(c).is_ok())
        .find_map(|c| hidden_by(ir, c).map(|by| (c, by)));
    match hidden {
        Some((at, by)) => vec![format!(
            "{} is on this host, but the seal hides it: {by}; re-allow it (`filesystem.allow_read`) or run a command that is outside that root",
            quote(&at.display().to_string())
        )],
        None => Vec::new(),
    }
}
