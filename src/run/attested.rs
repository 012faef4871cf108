//! `--attest FILE`: the run's in-toto attestation ([`crate::attest`]),
//! written as safely as the report: its directory opened before anything
//! runs, refused inside the seal's write roots, written atomically (never
//! through a link at its name) when the run ends, also when it failed.

use super::*;

use std::collections::BTreeMap;

use crate::hostfs::Target;

/// Open where the attestation goes: refused when the place cannot be
/// written, or names a file this run already writes.
pub(super) fn open(
    opts: &Options<'_>,
    report: Option<&Target>,
    kept: &[Option<Target>; 2],
    notes: &mut dyn Notes,
) -> Result<Option<Target>, Refusal> {
    let Some(path) = opts.attest.filter(|_| !opts.dry_run) else {
        return Ok(None);
    };
    let shown = quote(&path.display().to_string());
    let t = Target::open(path).map_err(|e| {
        Refusal::new(
            REFUSED,
            format!("cannot write the attestation {shown}: {e}, so nothing was started"),
        )
    })?;
    for w in t.dir.warnings() {
        notes.note(Note::Warning(format!("`--attest`: {w}")));
    }
    if report
        .into_iter()
        .chain(kept.iter().flatten())
        .any(|o| o.same_file(&t))
    {
        return Err(Refusal::new(
            REFUSED,
            format!("`--attest` names {shown}, which is already written by this run, so nothing was started"),
        )
        .help("give `--attest`, `--report`, `--stdout` and `--stderr` a file each"));
    }
    Ok(Some(t))
}

/// The host check's part: an attestation the agent could replace or plant
/// a link at proves nothing.
pub(super) fn check(
    ir: &crate::ir::Ir,
    opts: &Options<'_>,
    t: Option<&Target>,
) -> Result<(), Refusal> {
    let Some(t) = t else { return Ok(()) };
    unique_names(ir, opts)?;
    match crate::exec::write_root_reaching(ir, &t.dir, None) {
        Some(w) => Err(Refusal::new(
            REFUSED,
            format!(
                "the attestation {} would be inside the write root {}, where the agent could replace it or plant a link at its name, so nothing was started",
                quote(&t.path().display().to_string()),
                quote(w)
            ),
        )
        .help("give `--attest` a path outside every write root of the seal")),
        None => Ok(()),
    }
}

/// No two subjects may share a file name (`verify-run --subject PATH`
/// finds a subject by it): the kept streams, each `--subject` and the
/// seal's outputs.
fn unique_names(ir: &crate::ir::Ir, opts: &Options<'_>) -> Result<(), Refusal> {
    let file_name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut seen = BTreeMap::new();
    let named = opts
        .keep
        .iter()
        .flatten()
        .copied()
        .chain(opts.subjects.iter().map(std::path::PathBuf::as_path))
        .map(|p| (file_name(p), p.display().to_string()))
        .chain(ir.exec.outputs.iter().map(|o| {
            (
                Some(o.name().to_string()),
                format!("{} (`exec.outputs`)", o.path),
            )
        }));
    for (name, shown) in named {
        let Some(name) = name else { continue };
        if let Some(first) = seen.insert(name.clone(), shown.clone()) {
            return Err(Refusal::new(
                REFUSED,
                format!(
                    "the attestation would name two subjects {}: {} and {}, so nothing was started",
                    quote(&name),
                    quote(&first),
                    quote(&shown)
                ),
            )
            .help("give each file the attestation names (`--stdout`, `--stderr`, `--subject`, `exec.outputs`) a file name of its own"));
        }
    }
    Ok(())
}

/// The attestation of a finished run: subjects the kept streams
/// (`--stdout`, `--stderr`) by file name and digest, the predicate the
/// seal, sealc, the env names and the report.
pub(super) fn write(
    opts: &Options<'_>,
    t: &Target,
    rep: &report::Report,
    record: &str,
    env_names: &[String],
) -> Result<(), crate::failure::Failure> {
    use crate::failure::Failure;
    let mut subject = Vec::new();
    for (path, stream) in opts.keep.iter().zip([&rep.stdout, &rep.stderr]) {
        let (Some(path), Some(hex)) = (path, stream.sha256.strip_prefix("sha256:")) else {
            continue;
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        subject.push(crate::attest::Subject::new(&name, hex));
    }
    for path in opts.subjects {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let hex = hash_output(path).map_err(|e| {
            Failure::new(format!(
                "the subject {}: {e}",
                quote(&path.display().to_string())
            ))
        })?;
        subject.push(crate::attest::Subject::new(&name, &hex));
    }
    // The seal's own outputs (`exec.outputs`) that this run wrote.
    for (path, state) in &rep.outputs {
        if let report::OutputState::Written { sha256, .. } = state {
            let name = path.rsplit('/').next().unwrap_or_default();
            let hex = sha256.strip_prefix("sha256:").unwrap_or(sha256);
            subject.push(crate::attest::Subject::new(name, hex));
        }
    }
    let predicate = crate::attest::Predicate {
        binding: rep.binding.clone().unwrap_or_default(),
        record: record.to_string(),
        sealc_version: env!("CARGO_PKG_VERSION").to_string(),
        env_names: env_names.to_vec(),
        report: serde_json::to_value(rep)
            .map_err(|e| Failure::new(format!("cannot serialize the report: {e}")))?,
    };
    let statement = crate::attest::Statement {
        kind: crate::attest::STATEMENT_TYPE.to_string(),
        subject,
        predicate_type: crate::attest::PREDICATE_TYPE.to_string(),
        predicate: serde_json::to_value(predicate)
            .map_err(|e| Failure::new(format!("cannot serialize the predicate: {e}")))?,
    };
    let bytes = crate::attest::envelope(&statement, opts.attest_sign)
        .map_err(|e| Failure::new(format!("cannot sign it: {e}")))?;
    t.write(&bytes, 0o644)
        .map_err(|e| Failure::os("cannot write it", e))
}

/// A file the run produced, named by the harness (`--subject`), hashed
/// after the run: every component of its path opened without following a
/// link (the agent may have written the directories, and a link it left
/// would have the attestation vouch for another file), a regular file
/// only, never blocking, read as a stream.
fn hash_output(path: &Path) -> std::io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let (dir, name) = super::outputs::parent_of(path)?;
    let fd = rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    crate::hostfs::sha256_of_regular(fd)
}
