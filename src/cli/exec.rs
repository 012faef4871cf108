//! `sealc exec`: parse the flags, run the pipeline of [`crate::run`], and
//! print what it tells on the way.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use super::parse_expect;
use super::render_diagnostics;
use crate::run::{Ended, Note, Notes};

/// `--help`'s closing sections: the exit codes from [`crate::exit::EXEC`].
fn after_help() -> String {
    crate::exit::help_section(
        Some("the command's own exit code (128+S when it was killed by signal S)"),
        crate::exit::EXEC,
        &format!("  (docs/limits.md; --report FILE says which)\n\n{OUTPUT_HELP}"),
    )
}

const OUTPUT_HELP: &str = "\
Output:
  The command's stdout and stderr are relayed: to a file or a pipe byte
  for byte; to a terminal only text (UTF-8, newline, tab, carriage return)
  and colours (SGR, ESC [ ... m) pass, every other control and escape
  sequence (cursor moves, erases, titles, clipboard, queries, C1 controls)
  is dropped and counted in the report (controls_dropped); --raw-terminal
  passes everything.

Example:
  sealc exec seal/seal.json --expect sha256:<binding> -- sh -c 'echo hi'";

/// Verify a record, then run a command under its seal (exit 1 on drift: nothing starts).
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    #[command(flatten)]
    seal: super::SealArgs,
    /// Verify and print the plan (program, argv, env names) as JSON; start nothing.
    #[arg(long)]
    dry_run: bool,
    /// Started by root (Linux): the unprivileged user the agent runs as, `NAME`, `UID` or `UID:GID` (default: a uid of the run's own, seen inside as `nobody`; `nobody` where the write roots are chowned); it writes the write roots as their owner would (idmapped mounts, or chowned to it for the run where those cannot be made).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
    /// Write a JSON run report here (atomically, also when nothing could start): outcome, limits, usage, bytes relayed.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Keep the command's stdout in FILE instead of relaying it to sealc's (written under a random name beside it, renamed into place when the run ends, mode 0600; the report gives its sha256).
    #[arg(long, value_name = "FILE")]
    stdout: Option<PathBuf>,
    /// Keep the command's stderr in FILE instead of relaying it to sealc's, as `--stdout` does.
    #[arg(long, value_name = "FILE")]
    stderr: Option<PathBuf>,
    /// Start nothing unless the record's binding is this one (`sha256:<hex>`, the seal you reviewed).
    #[arg(long, value_name = "sha256:BINDING", value_parser = parse_expect)]
    expect: Option<String>,
    /// Start nothing unless the record is signed (`sealc sign`, or `ssh-keygen -Y sign -n sealc-seal`) by a key this OpenSSH allowed_signers file trusts for the namespace `sealc-seal`, now: the alternative to --expect when one reviewer approves many seals.
    #[arg(long, value_name = "FILE")]
    allowed_signers: Option<PathBuf>,
    /// The record's signature (default: the record's path with `.sig` added).
    #[arg(long, value_name = "FILE", requires = "allowed_signers")]
    signature: Option<PathBuf>,
    /// Write the run's in-toto attestation (a DSSE envelope) here, as safely as the report, also when the command fails: the kept --stdout/--stderr files as subjects, the seal's binding, the record's digest and the run report as predicate.
    #[arg(long, value_name = "FILE")]
    attest: Option<PathBuf>,
    /// A file the run produces (in the workspace, say), to name in the attestation by its file name with its sha256, taken after the run (no link followed on its path). Repeatable.
    #[arg(long, value_name = "PATH", requires = "attest")]
    subject: Vec<PathBuf>,
    /// Sign the attestation with this SSH key (ed25519: a private key, or a public key the ssh-agent holds); checked before anything starts.
    #[arg(long, value_name = "KEY", requires = "attest")]
    sign_key: Option<PathBuf>,
    /// Discard what an earlier run left in the seal's Codex home (otherwise nothing starts: each run gets a fresh one).
    #[arg(long)]
    force: bool,
    /// Relay the command's output to a terminal byte for byte, escape sequences included (by default, on a terminal, only text and SGR colours pass: see Output below).
    #[arg(long)]
    raw_terminal: bool,
    /// Started by root (Linux): the most entries sealc walks in the write roots before and after the run (clearing set-id bits and file capabilities, looking for hard links out); past it nothing starts.
    #[arg(long, value_name = "ENTRIES", default_value_t = crate::exec::user::MAX_ENTRIES)]
    walk_limit: u64,
    /// For tests only: sealc's proxy resolves NAME to ADDR without asking DNS (the answer is still checked).
    #[arg(long, value_name = "NAME=ADDR", hide = true)]
    resolve: Vec<String>,
    /// The command and its arguments, after `--` (the launcher's file name, e.g. `codex`, runs the recorded launcher).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true,
        value_name = "CMD"
    )]
    command: Vec<OsString>,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let files = a.seal.files();
    // The attestation's key is read before anything starts: a key that
    // cannot sign never costs a run its attestation.
    let key = match a
        .sign_key
        .as_deref()
        .map(super::sign::Key::load)
        .transpose()
    {
        Ok(k) => k,
        Err((_, why)) => {
            let _ = writeln!(err, "sealc: error: {why}, so nothing was started");
            return crate::exit::REFUSED;
        }
    };
    let raw = |m: &[u8]| key.as_ref().map_or(Err(String::new()), |k| k.raw(m));
    let opts = crate::run::Options {
        record: &a.seal.record,
        files: &files,
        dry_run: a.dry_run,
        user: a.user.as_deref(),
        expect: a.expect.as_deref(),
        signers: a
            .allowed_signers
            .as_deref()
            .map(|f| (f, a.signature.as_deref())),
        attest: a.attest.as_deref(),
        subjects: &a.subject,
        attest_sign: key.as_ref().map(|_| &raw as crate::attest::Sign<'_>),
        report: a.report.as_deref(),
        keep: [a.stdout.as_deref(), a.stderr.as_deref()],
        force: a.force,
        raw_terminal: a.raw_terminal,
        resolve: &a.resolve,
        walk_limit: a.walk_limit,
    };
    // Nothing of sealc's own is left unwritten on stdout once the command
    // writes there.
    let _ = out.flush();
    match crate::run::exec(&opts, &a.command, &mut Printed { err }) {
        Ended::DryRun(plan) => {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&plan).unwrap_or_default()
            );
            super::OK
        }
        Ended::Status(code) => code,
    }
}

/// A run's notes, printed on stderr as they come.
struct Printed<'a> {
    err: &'a mut dyn Write,
}

impl Notes for Printed<'_> {
    fn note(&mut self, note: Note) {
        let err = &mut self.err;
        let _ = match note {
            Note::Warning(w) => writeln!(err, "sealc: warning: {w}"),
            Note::Said(s) => writeln!(err, "sealc: {s}"),
            Note::Drift(d) => writeln!(err, "drift       {d}"),
            Note::Verification(text) => write!(err, "{text}"),
            Note::Error { message, help } => {
                let _ = writeln!(err, "error: {message}");
                for h in help {
                    let _ = writeln!(err, "help: {h}");
                }
                Ok(())
            }
            Note::Diagnostics { diags, file } => {
                write!(err, "{}", render_diagnostics(&diags, &file, ""))
            }
        };
    }

    /// sealc's own proxy tells each refusal on stderr, in one write, through
    /// its own copy of the descriptor (the thread that runs the pipeline
    /// may hold the lock on `Stderr` meanwhile). The line is made of the
    /// agent's request: escaped (again: the proxy keeps it to one line of
    /// visible ASCII), so it cannot drive the caller's terminal.
    fn proxy_log(&mut self) -> Option<crate::proxy::Log> {
        use std::os::fd::AsFd;
        std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .ok()
            .map(std::fs::File::from)
            .map(|f| -> crate::proxy::Log {
                Box::new(move |line: &str| {
                    let line = crate::diag::visible(line);
                    let _ = (&f).write_all(format!("sealc: {line}\n").as_bytes());
                })
            })
    }
}
