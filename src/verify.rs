//! Stage 6, **verify**: recompile a record and catch every drift.
//!
//! `verify` reads nothing from the host: it recompiles the recorded spec text
//! against the recorded facts and compares the result with the record and with
//! the artifact files the caller hands in. Its report is therefore the same,
//! byte for byte, on any host, from any directory, with any environment. Only
//! the optional live check (`live_facts`) looks at a host, through `facts`.

mod live;
pub use self::live::{check_codex_config, live_facts};

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{json, Value};

use crate::diag::{quote, visible};
use crate::digest::sha256;
use crate::facts::Host;
use crate::record::{canonical_json, Record, SCHEMA};

/// The schema name of `sealc verify --format json` output.
pub const REPORT_SCHEMA: &str = "sealc.verify/v1";

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Drift,
    /// A live fact that does not exist on this host: reported, never trusted,
    /// never a failure by itself.
    Absent,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Drift => "drift",
            Status::Absent => "absent here",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub subject: String,
    pub status: Status,
    pub detail: String,
}

/// The outcome of a verify.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The seal's name, once the record could be read.
    pub seal: Option<String>,
    /// The record's binding digest, once the record could be read: what a
    /// harness pins with `--expect`.
    pub binding: Option<String>,
    pub checks: Vec<Check>,
    /// Unified diffs, recompiled bytes against the file, per artifact.
    pub diffs: Vec<(String, String)>,
    /// Why the input could not be used at all (exit 2).
    pub unusable: Option<String>,
}

/// The verdict and its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Verified,
    Drift,
    Unusable,
}

impl Verdict {
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Verified => 0,
            Verdict::Drift => 1,
            Verdict::Unusable => 2,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Drift => "drift",
            Verdict::Unusable => "unusable",
        }
    }
}

impl Report {
    fn unusable(why: String) -> Report {
        Report {
            unusable: Some(why),
            ..Report::default()
        }
    }

    pub fn push(&mut self, subject: impl Into<String>, status: Status, detail: impl Into<String>) {
        self.checks.push(Check {
            subject: subject.into(),
            status,
            detail: detail.into(),
        });
    }

    pub fn verdict(&self) -> Verdict {
        if self.unusable.is_some() {
            Verdict::Unusable
        } else if self.checks.iter().any(|c| c.status == Status::Drift) {
            Verdict::Drift
        } else {
            Verdict::Verified
        }
    }

    /// The report as text: one line per check, the diffs, then the verdict.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(seal) = &self.seal {
            out.push_str(&format!("seal `{}`\n", visible(seal)));
        }
        if let Some(binding) = &self.binding {
            out.push_str(&format!("binding {binding}\n"));
        }
        let width = self
            .checks
            .iter()
            .map(|c| c.subject.chars().count())
            .max()
            .unwrap_or(0);
        for c in &self.checks {
            out.push_str(&format!(
                "{:<11} {:<width$}  {}\n",
                c.status.as_str(),
                c.subject,
                visible(&c.detail)
            ));
        }
        for (file, diff) in &self.diffs {
            out.push_str(&format!(
                "\n{file} differs from its recompiled bytes:\n{diff}"
            ));
            if !diff.ends_with('\n') {
                out.push('\n');
            }
        }
        let drift = self
            .checks
            .iter()
            .filter(|c| c.status == Status::Drift)
            .count();
        out.push_str(&match self.verdict() {
            Verdict::Verified => {
                "verified: the record and every artifact agree with recompilation\n".to_string()
            }
            Verdict::Drift => format!(
                "drift: {drift} check{} failed\n",
                if drift == 1 { "" } else { "s" }
            ),
            Verdict::Unusable => format!("unusable: {}\n", self.unusable.as_deref().unwrap_or("")),
        });
        out
    }

    /// The same content as a JSON object, for harnesses.
    pub fn to_json(&self) -> String {
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| json!({ "subject": c.subject, "status": c.status.as_str(), "detail": c.detail }))
            .collect();
        let diffs: Vec<Value> = self
            .diffs
            .iter()
            .map(|(f, d)| json!({ "file": f, "diff": d }))
            .collect();
        canonical_json(&json!({
            "schema": REPORT_SCHEMA,
            "seal": self.seal,
            "binding": self.binding,
            "verdict": self.verdict().as_str(),
            "unusable": self.unusable,
            "checks": checks,
            "diffs": diffs,
        }))
    }
}

fn record_validator() -> &'static Result<jsonschema::Validator, String> {
    static V: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
    V.get_or_init(|| {
        jsonschema::draft7::new(&crate::record::json_schema()).map_err(|e| e.to_string())
    })
}

/// Read a record strictly: UTF-8 JSON, the known schema version, exactly the
/// known fields with the right types, and the canonical byte form.
pub fn read_record(bytes: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("the record is not UTF-8 ({e})"))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the record is not JSON: {e}"))?;
    match value.get("schema") {
        Some(Value::String(s)) if s == SCHEMA => {}
        Some(Value::String(s)) => {
            return Err(format!(
                "`/schema`: unknown record schema {}; this sealc reads `{SCHEMA}`",
                quote(s)
            ))
        }
        Some(_) => return Err("`/schema`: not a string".to_string()),
        None => return Err("`/schema`: missing; this is not a sealc record".to_string()),
    }
    let validator = record_validator()
        .as_ref()
        .map_err(|e| format!("internal: record schema: {e}"))?;
    if let Some(e) = validator.iter_errors(&value).next() {
        let path = e.instance_path().to_string();
        let path = if path.is_empty() {
            "/".to_string()
        } else {
            path
        };
        return Err(format!("`{path}`: {e}"));
    }
    let record: Record = serde_json::from_value(value.clone())
        .map_err(|e| format!("the record does not decode: {e}"))?;
    let canonical = canonical_json(&value);
    if canonical != text {
        let line = canonical
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| canonical.lines().count().min(text.lines().count()))
            + 1;
        return Err(format!(
            "the record is not in canonical form (sorted keys, two-space indent, trailing newline); first difference at line {line}"
        ));
    }
    Ok(record)
}

/// What a verify found, with the record and the recompiled files when they
/// could be had (for the live and Codex-config checks).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub report: Report,
    pub record: Option<Record>,
    pub recompiled: Option<BTreeMap<String, Vec<u8>>>,
}

/// Verify record bytes against recompilation and the given artifact files
/// (`None` for a file that is not there). Reads nothing else.
pub fn verify(record_bytes: &[u8], files: &dyn Fn(&str) -> Option<Vec<u8>>) -> Outcome {
    let record = match read_record(record_bytes) {
        Ok(r) => r,
        Err(why) => {
            return Outcome {
                report: Report::unusable(why),
                record: None,
                recompiled: None,
            }
        }
    };
    let mut report = Report {
        binding: Some(record.binding.clone()),
        ..Report::default()
    };
    let recompiled = check_record(&record, record_bytes, files, &mut report);
    Outcome {
        report,
        record: Some(record),
        recompiled,
    }
}

/// Is `s` of the form `sha256:` and 64 lowercase hex digits, as a binding is?
pub fn is_binding(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `--expect`: the record must be the one the caller pinned, by its binding.
/// Any other record is drift, however well it verifies.
pub fn check_expected(record: &Record, expected: &str, rep: &mut Report) {
    if record.binding == expected {
        rep.push(
            "expected binding",
            Status::Ok,
            format!("the record binds {expected}, as expected"),
        );
    } else {
        rep.push(
            "expected binding",
            Status::Drift,
            format!(
                "expected {expected}, the record binds {}",
                digest_text(&record.binding)
            ),
        );
    }
}

/// Digests are shown whole, so they can be compared with other tools.
fn digest_text(d: &str) -> String {
    d.to_string()
}

fn check_record(
    record: &Record,
    record_bytes: &[u8],
    files: &dyn Fn(&str) -> Option<Vec<u8>>,
    rep: &mut Report,
) -> Option<BTreeMap<String, Vec<u8>>> {
    // 1. The spec text and its digest.
    let digest = sha256(record.spec.text.as_bytes());
    if digest == record.spec.digest {
        rep.push(
            "spec digest",
            Status::Ok,
            format!("{} {}", record.spec.file, digest_text(&digest)),
        );
    } else {
        rep.push(
            "spec digest",
            Status::Drift,
            format!(
                "recorded {}, the recorded text hashes to {}",
                digest_text(&record.spec.digest),
                digest_text(&digest)
            ),
        );
    }

    // 2. Recompile from the recorded spec text and facts only.
    let compiled =
        match crate::compile_with_facts(&record.spec.file, &record.spec.text, record.facts.clone())
        {
            Ok(c) => c,
            Err(diags) => {
                for d in diags.0.iter().filter(|d| d.is_error()) {
                    rep.push(
                        "invariant",
                        Status::Drift,
                        format!("{}: {}", d.code, d.message),
                    );
                }
                rep.seal = Some(record.spec.file.clone());
                return None;
            }
        };
    rep.seal = Some(compiled.ir.name.clone());
    rep.push(
        "invariants",
        Status::Ok,
        "the recorded spec and facts compile with every invariant holding",
    );
    if record.sealc_version != compiled.record.sealc_version {
        rep.push(
            "sealc version",
            Status::Drift,
            format!(
                "record written by sealc {}, this is sealc {}",
                record.sealc_version, compiled.record.sealc_version
            ),
        );
    }

    // 3. Every artifact's length and digest against recompilation.
    let mut recorded: BTreeMap<&str, &crate::record::ArtifactRecord> = record
        .artifacts
        .iter()
        .map(|a| (a.file.as_str(), a))
        .collect();
    for a in &compiled.record.artifacts {
        let subject = format!("artifact {}", a.file);
        match recorded.remove(a.file.as_str()) {
            Some(r) if r.bytes == a.bytes && r.digest == a.digest => rep.push(
                subject,
                Status::Ok,
                format!("{} bytes {}", a.bytes, digest_text(&a.digest)),
            ),
            Some(r) => rep.push(
                subject,
                Status::Drift,
                format!(
                    "recorded {} bytes {}, recompiled {} bytes {}",
                    r.bytes,
                    digest_text(&r.digest),
                    a.bytes,
                    digest_text(&a.digest)
                ),
            ),
            None => rep.push(
                subject,
                Status::Drift,
                "recompilation produces it; the record does not list it",
            ),
        }
    }
    for extra in recorded.keys() {
        rep.push(
            format!("artifact {extra}"),
            Status::Drift,
            "listed in the record; recompilation produces no such artifact",
        );
    }
    if record.exec.argv_prefix == compiled.record.exec.argv_prefix {
        rep.push(
            "exec argv",
            Status::Ok,
            format!("{} elements", record.exec.argv_prefix.len()),
        );
    } else {
        rep.push(
            "exec argv",
            Status::Drift,
            "the recorded argv prefix differs from the recompiled one",
        );
    }

    // 4. The binding, and the record as a whole.
    let binding = record.compute_binding();
    if binding == record.binding {
        rep.push("binding", Status::Ok, digest_text(&binding));
    } else {
        rep.push(
            "binding",
            Status::Drift,
            format!(
                "recorded {}, recomputed {}",
                digest_text(&record.binding),
                digest_text(&binding)
            ),
        );
    }
    let recompiled_record = &compiled.files[crate::record::FILE];
    if recompiled_record.as_slice() != record_bytes
        && !rep.checks.iter().any(|c| c.status == Status::Drift)
    {
        rep.push(
            "record",
            Status::Drift,
            "the record differs from the recompiled record",
        );
    }

    // 5. The artifact files, byte for byte.
    for (name, bytes) in compiled
        .files
        .iter()
        .filter(|(n, _)| *n != crate::record::FILE)
    {
        let subject = format!("file {name}");
        match files(name) {
            None => rep.push(subject, Status::Drift, "missing"),
            Some(f) if &f == bytes => {
                rep.push(subject, Status::Ok, "identical to the recompiled bytes")
            }
            Some(f) => {
                rep.push(
                    subject,
                    Status::Drift,
                    "differs from the recompiled bytes (diff below)",
                );
                let ours = String::from_utf8_lossy(bytes);
                let theirs = String::from_utf8_lossy(&f);
                let diff = similar::TextDiff::from_lines(ours.as_ref(), theirs.as_ref())
                    .unified_diff()
                    .context_radius(2)
                    .header(&format!("recompiled/{name}"), name)
                    .to_string();
                rep.diffs.push((name.clone(), diff));
            }
        }
    }
    // 6. Artifacts of another seal beside this one (a compile for the other
    // platform into the same directory): they are not what this record
    // proves, and a reader could take them for it.
    for name in crate::backend::ALL {
        if !compiled.files.contains_key(name) && files(name).is_some() {
            rep.push(
                format!("file {name}"),
                Status::Drift,
                "not part of this seal (left by a compile for another platform?): remove it, or compile again into this directory",
            );
        }
    }
    Some(compiled.files)
}
