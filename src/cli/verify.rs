//! `sealc verify`: recompile a record and compare.

use std::io::Write;
use std::path::PathBuf;

use super::{parse_expect, Format};
use crate::diag::quote;
use crate::facts::RealHost;

/// `--help`'s closing sections: the exit codes from [`crate::exit::VERIFY`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::VERIFY,
        "\n\
Example:
  sealc verify seal/seal.json --expect sha256:<the binding you reviewed>
  sealc verify seal/seal.json --allowed-signers reviewers",
    )
}

/// Recompile a record and compare: digests, binding, invariants, and the artifact files.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    #[command(flatten)]
    seal: super::SealArgs,
    /// Also re-resolve the facts on this host and report each one.
    #[arg(long)]
    live: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Refuse any record but the one with this binding (`sha256:<hex>`, as in its `binding`).
    #[arg(long, value_name = "sha256:BINDING", value_parser = parse_expect)]
    expect: Option<String>,
    /// Check the record's signature (`sealc sign`, or `ssh-keygen -Y sign -n sealc-seal`) against this OpenSSH allowed_signers file: a trusted key, for the namespace, within its validity window.
    #[arg(long, value_name = "FILE")]
    allowed_signers: Option<PathBuf>,
    /// The signature to check (default: the record's path with `.sig` added).
    #[arg(long, value_name = "FILE", requires = "allowed_signers")]
    signature: Option<PathBuf>,
    /// A Codex config after a run, to compare with the generated one.
    #[arg(long, value_name = "PATH", requires = "workspace")]
    codex_config: Option<PathBuf>,
    /// The agent's workspace: the one `[projects."<DIR>"]` entry Codex may add.
    #[arg(long, value_name = "DIR", requires = "codex_config")]
    workspace: Option<PathBuf>,
}

pub(super) fn run(a: Args, out: &mut dyn Write, _err: &mut dyn Write) -> i32 {
    let format = a.format;
    let opts = VerifyArgs {
        seal: a.seal,
        live: a.live,
        expect: a.expect,
        signers: a.allowed_signers.map(|f| (f, a.signature)),
        codex_config: a.codex_config.zip(a.workspace),
    };
    let report = verify(&opts);
    let text = match format {
        Format::Text => report.to_text(),
        Format::Json => report.to_json(),
    };
    // `--quiet`: a verified seal says nothing; anything else says why.
    let verified = report.verdict() == crate::verify::Verdict::Verified;
    if !(super::quiet() && verified && matches!(format, Format::Text)) {
        let _ = write!(out, "{text}");
    }
    report.verdict().exit_code()
}

struct VerifyArgs {
    seal: super::SealArgs,
    live: bool,
    expect: Option<String>,
    /// `--allowed-signers` and `--signature`.
    signers: Option<(PathBuf, Option<PathBuf>)>,
    codex_config: Option<(PathBuf, PathBuf)>,
}

/// Read the record and the artifact files beside it (or in `--artifacts`),
/// then verify; the live and Codex-config checks come after.
fn verify(a: &VerifyArgs) -> crate::verify::Report {
    use crate::facts::Host as _;
    let bytes = match crate::hostfs::read_path(&a.seal.record, crate::hostfs::MAX_RECORD) {
        Ok(b) => b,
        Err(e) => {
            return crate::verify::Report {
                unusable: Some(format!(
                    "cannot read the record {}: {e}",
                    quote(&a.seal.record.display().to_string())
                )),
                ..Default::default()
            }
        }
    };
    let files = a.seal.files();
    let outcome = crate::verify::verify(&bytes, &files);
    let mut report = outcome.report;
    if let (Some(want), Some(record)) = (&a.expect, &outcome.record) {
        crate::verify::check_expected(record, want, &mut report);
    }
    // The signature is over the bytes, whatever they hold: bytes that are
    // not what was signed are drift (exit 1), also when they are no record.
    if let Some((signers, sig)) = &a.signers {
        use crate::run::signed::{check, NotSigned};
        match check(&bytes, &a.seal.record, sig.as_deref(), signers) {
            Ok(signed) => report.push(
                "signature",
                crate::verify::Status::Ok,
                format!("signed by {}", signed.describe()),
            ),
            Err(NotSigned::Refused(why)) => {
                if let Some(unusable) = report.unusable.take() {
                    report.push("record", crate::verify::Status::Drift, unusable);
                }
                report.push("signature", crate::verify::Status::Drift, why)
            }
            Err(NotSigned::Unreadable(why)) => report.unusable = Some(why),
        }
    }
    if let (true, Some(record)) = (a.live, &outcome.record) {
        crate::verify::live_facts(record, &RealHost, &mut report);
    }
    if let (Some((cfg, ws)), Some(recompiled)) = (&a.codex_config, &outcome.recompiled) {
        match crate::hostfs::read_path(cfg, crate::hostfs::MAX_SPEC) {
            Ok(after) => {
                let given = ws.display().to_string();
                let mut workspaces = vec![given.clone()];
                workspaces.extend(RealHost.canonicalize(&given).filter(|r| *r != given));
                let generated = recompiled
                    .get(crate::backend::CODEX)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                crate::verify::check_codex_config(generated, &after, &workspaces, &mut report);
            }
            Err(e) => report.checks.push(crate::verify::Check {
                subject: "codex config".into(),
                status: crate::verify::Status::Drift,
                detail: format!("cannot read {}: {e}", quote(&cfg.display().to_string())),
            }),
        }
    }
    report
}
