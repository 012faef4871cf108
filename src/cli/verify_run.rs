//! `sealc verify-run`: check a run's attestation anywhere: its signature,
//! the seal it names, the subject files' digests, and, given the record,
//! that the record is that seal and verifies here.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::parse_expect;
use crate::diag::quote;
use crate::verify::{Report, Status};

/// `--help`'s closing sections: the exit codes from [`crate::exit::VERIFY_RUN`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::VERIFY_RUN,
        "\n\
Example:
  sealc verify-run attestation.json --allowed-signers graders \\
    --expect sha256:<binding> --subject out.txt --record seal/seal.json",
    )
}

/// Check a run attestation (`sealc exec --attest`): signature, seal, subjects, record.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The attestation (a DSSE envelope).
    envelope: PathBuf,
    /// OpenSSH allowed_signers file: the keys trusted to sign run attestations (namespace `sealc-run`, when a line names namespaces).
    #[arg(long, value_name = "FILE")]
    allowed_signers: PathBuf,
    /// The run must have been under the seal with this binding.
    #[arg(long, value_name = "sha256:BINDING", value_parser = parse_expect)]
    expect: Option<String>,
    /// A file the run produced: the statement must name it (by its file name) with this file's sha256. Repeatable.
    #[arg(long, value_name = "PATH")]
    subject: Vec<PathBuf>,
    /// The record (seal.json) the run was under: its digest must be the statement's, and it must verify here (recompiled, as `sealc verify`).
    #[arg(long, value_name = "RECORD")]
    record: Option<PathBuf>,
    /// Directory of the record's artifact files (default: the record's directory).
    #[arg(long, value_name = "DIR", requires = "record")]
    artifacts: Option<PathBuf>,
}

/// The most bytes of an envelope or `allowed_signers` file read.
const MAX_ENVELOPE: u64 = 64 << 20;

pub(super) fn run(a: Args, out: &mut dyn Write, _err: &mut dyn Write) -> i32 {
    let report = check(&a);
    let verified = report.verdict() == crate::verify::Verdict::Verified;
    if !(super::quiet() && verified) {
        // verify's verdict line speaks of a record; this one of the run.
        let text = report.to_text();
        let body = text.trim_end().rsplit_once('\n').map_or("", |(b, _)| b);
        let verdict = match report.verdict() {
            crate::verify::Verdict::Verified => "verified: the attestation holds".to_string(),
            _ => text
                .trim_end()
                .rsplit('\n')
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        if body.is_empty() {
            let _ = writeln!(out, "{verdict}");
        } else {
            let _ = writeln!(out, "{body}\n{verdict}");
        }
    }
    report.verdict().exit_code()
}

fn check(a: &Args) -> Report {
    let unusable = |why: String| Report {
        unusable: Some(why),
        ..Report::default()
    };
    let shown = quote(&a.envelope.display().to_string());
    let envelope = match crate::hostfs::read_path(&a.envelope, MAX_ENVELOPE) {
        Ok(b) => b,
        Err(e) => return unusable(format!("cannot read the attestation {shown}: {e}")),
    };
    let signers = match crate::hostfs::read_text(&a.allowed_signers, MAX_ENVELOPE) {
        Ok(t) => crate::signers::parse(&t),
        Err(e) => {
            return unusable(format!(
                "cannot read the allowed signers {}: {e}",
                quote(&a.allowed_signers.display().to_string())
            ))
        }
    };
    let mut report = Report::default();
    let opened = match crate::attest::open(&envelope, &signers, crate::signature::now()) {
        Ok(o) => o,
        Err(why) => {
            let mut why = format!("{shown}: {why}");
            for (line, skipped) in &signers.skipped {
                why.push_str(&format!(
                    "; allowed signers line {line} trusts no key: {skipped}"
                ));
            }
            report.push("signature", Status::Drift, why);
            return report;
        }
    };
    let p = &opened.predicate;
    report.binding = Some(p.binding.clone());
    report.push(
        "signature",
        Status::Ok,
        format!("signed by {}", opened.signed.describe()),
    );
    let outcome = p
        .report
        .get("outcome")
        .map(|o| o.to_string())
        .unwrap_or_default();
    let exit = p
        .report
        .get("exit_code")
        .map(|o| o.to_string())
        .unwrap_or_default();
    report.push(
        "run",
        Status::Ok,
        format!(
            "sealc {}, exit {exit}, outcome {outcome}, started {}",
            p.sealc_version,
            p.report
                .get("started_at")
                .and_then(|s| s.as_str())
                .unwrap_or("?")
        ),
    );
    if let Some(want) = &a.expect {
        let ok = p.binding == *want;
        report.push(
            "expected seal",
            if ok { Status::Ok } else { Status::Drift },
            if ok {
                format!("the run was under {want}")
            } else {
                format!("the run was under {}, not the expected {want}", p.binding)
            },
        );
    }
    for path in &a.subject {
        subject(&mut report, &opened.statement.subject, path);
    }
    if let Some(record) = &a.record {
        check_record(&mut report, p, record, a.artifacts.as_deref());
    }
    report
}

/// The subject of the statement named as `path`'s file name, and its digest.
fn subject(report: &mut Report, subjects: &[crate::attest::Subject], path: &Path) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let subject_line = format!("subject {name}");
    let Some(s) = subjects.iter().find(|s| s.name == name) else {
        report.push(
            subject_line,
            Status::Drift,
            format!(
                "the statement names no subject `{}` (it names: {})",
                name.escape_debug(),
                subjects
                    .iter()
                    .map(|s| format!("`{}`", s.name.escape_debug()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
        return;
    };
    let want = s.digest.get("sha256").cloned().unwrap_or_default();
    match hash_file(path) {
        Ok(have) if have == want => report.push(subject_line, Status::Ok, format!("sha256:{have}")),
        Ok(have) => report.push(
            subject_line,
            Status::Drift,
            format!(
                "{} is sha256:{have}, the run produced sha256:{want}",
                quote(&path.display().to_string())
            ),
        ),
        Err(e) => report.push(
            subject_line,
            Status::Drift,
            format!("cannot read {}: {e}", quote(&path.display().to_string())),
        ),
    }
}

/// The hex SHA-256 of a regular file, read as a stream.
fn hash_file(path: &Path) -> std::io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    crate::hostfs::sha256_of_regular(fd)
}

/// The record is the attested seal's (by digest and binding) and verifies.
fn check_record(
    report: &mut Report,
    p: &crate::attest::Predicate,
    record: &Path,
    artifacts: Option<&Path>,
) {
    let shown = quote(&record.display().to_string());
    let bytes = match crate::hostfs::read_path(record, crate::hostfs::MAX_RECORD) {
        Ok(b) => b,
        Err(e) => {
            report.push("record", Status::Drift, format!("cannot read {shown}: {e}"));
            return;
        }
    };
    let digest = crate::digest::sha256(&bytes);
    if digest != p.record {
        report.push(
            "record",
            Status::Drift,
            format!(
                "{shown} is {digest}, the run was under a record of {}",
                p.record
            ),
        );
        return;
    }
    let dir = artifacts
        .map(Path::to_path_buf)
        .or_else(|| record.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let dir = crate::hostfs::Dir::open(&dir).ok();
    let files = move |name: &str| {
        dir.as_ref()?
            .read_below(name, crate::hostfs::MAX_RECORD)
            .ok()
            .flatten()
    };
    let outcome = crate::verify::verify(&bytes, &files);
    let ok = outcome.report.verdict() == crate::verify::Verdict::Verified
        && outcome
            .record
            .as_ref()
            .is_some_and(|r| r.binding == p.binding);
    report.push(
        "record",
        if ok { Status::Ok } else { Status::Drift },
        if ok {
            format!("{shown} is the attested record ({digest}) and verifies here")
        } else {
            format!(
                "{shown} is the attested record but does not verify here:\n{}",
                outcome.report.to_text()
            )
        },
    );
}
