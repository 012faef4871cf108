//! `sealc exec`: verify a record exactly as `sealc verify` does, then run a
//! command under its seal, and write the run report.

mod codex;
mod handed;
mod help;
mod steps;

use self::codex::{codex_after, codex_target, finish_codex_home};
use self::handed::run_handed;
use self::help::{drift_help, dry_run_layers, no_bwrap_help, wrong_platform};
use self::steps::exec_run;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::render_diagnostics;
use super::{parse_expect, BAD_INPUT, DIFFERS, OK};
use crate::diag::quote;
use crate::facts::RealHost;

const AFTER_HELP: &str = "\
Exit codes:
  N    the command's own exit code (128+S when it was killed by signal S)
  1    drift: the record, its artifacts or the host differ, a Codex home
       an earlier run left is there (--force discards it), or --expect
       names another seal; nothing started
  2    bad input, nothing started: an unreadable record, a seal for the
       other platform, stdio, --user, a missing secret, a --report path
       that cannot be written
  120  the memory limit was reached        121  the output limit
  124  the wall-clock limit                152  the CPU limit (SIGXCPU)
  153  the file-size limit (SIGXFSZ); a SIGXCPU or SIGXFSZ that no limit
       of the seal sent is 128+S as well, and --report says `signaled`
  125  the command ran, but the Codex config in CODEX_HOME changed
  122  the sandbox (or one of its layers) could not be built; nothing ran
  126  the command is in the sandbox but could not be executed
  127  the command is not in the sandbox
  (docs/limits.md; --report FILE says which)

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
#[command(after_help = AFTER_HELP)]
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
    /// Start nothing unless the record's binding is this one (`sha256:<hex>`, the seal you reviewed).
    #[arg(long, value_name = "sha256:BINDING", value_parser = parse_expect)]
    expect: Option<String>,
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
    exec(
        &a.seal,
        &ExecOpts {
            dry_run: a.dry_run,
            user: a.user.as_deref(),
            expect: a.expect.as_deref(),
            report: a.report.as_deref(),
            force: a.force,
            raw_terminal: a.raw_terminal,
            resolve: &a.resolve,
            walk_limit: a.walk_limit,
        },
        &a.command,
        out,
        err,
    )
}

struct ExecOpts<'a> {
    dry_run: bool,
    user: Option<&'a str>,
    expect: Option<&'a str>,
    report: Option<&'a Path>,
    force: bool,
    raw_terminal: bool,
    resolve: &'a [String],
    walk_limit: u64,
}

/// What `exec` learns on its way, for the run report.
struct ExecCtx {
    /// The network part: each connection through sealc's own proxy.
    network: crate::report::Report,
    phase: crate::exec::report::Phase,
    codex_config: Option<&'static str>,
    binding: Option<String>,
    layers: serde_json::Value,
    limits: std::collections::BTreeMap<&'static str, crate::exec::report::Limit>,
    result: Option<crate::exec::RunResult>,
    /// What could not be handed back to the write roots' owners.
    hand_back: Vec<String>,
    /// Started by root: how the agent's user may write the write roots,
    /// `idmapped` or `chowned`.
    write_roots: Option<&'static str>,
    /// The idmapped trees of the write roots, until the run ends.
    trees: Vec<crate::exec::idmap::Tree>,
    /// Started by root: `UID:GID` the agent ran as on the host.
    user: Option<String>,
    /// The `--report` path lies in the agent's reach: nothing is written there.
    report_refused: bool,
    /// A Codex seal: the fresh Codex home of this run, until it is finished.
    codex_home: Option<crate::exec::codex_home::Home>,
    /// What the run left in it.
    codex_left: Option<crate::exec::codex_home::Left>,
    /// The stand-ins of protected paths made for this run, until removed.
    stand_ins: Option<crate::absent::StandIns>,
}

/// Before anything started: take away what was made for the run (the
/// stand-ins first: they lie in the write roots).
fn undo_made(ctx: &mut ExecCtx, made_roots: &[String]) {
    if let Some(s) = ctx.stand_ins.take() {
        s.remove();
    }
    crate::absent::unmake(made_roots);
}

/// Once nothing of the sandbox is left: the stand-ins made for the run are
/// removed, each if it is still the empty directory made.
fn finish_stand_ins(ctx: &mut ExecCtx, err: &mut dyn Write) {
    let Some(s) = ctx.stand_ins.take() else {
        return;
    };
    if ctx.result.as_ref().is_some_and(|r| r.survivors) {
        let _ = writeln!(
            err,
            "sealc: warning: a process of the sandbox was still there after the run, so the stand-ins of protected paths were left: {}",
            s.made().iter().map(|p| quote(p)).collect::<Vec<_>>().join(", ")
        );
        return;
    }
    for p in s.remove() {
        let _ = writeln!(err, "sealc: warning: {}", crate::diag::visible(&p));
    }
}

/// A writer that also keeps what was written (the report names the error).
struct Tee<'a> {
    inner: &'a mut dyn Write,
    text: Vec<u8>,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(buf);
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `sealc exec`, and its run report.
fn exec(
    seal: &super::SealArgs,
    opts: &ExecOpts<'_>,
    command: &[OsString],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    use crate::exec::report;
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    let mut ctx = ExecCtx {
        network: crate::report::Report::default(),
        phase: report::Phase::Verify,
        codex_config: None,
        binding: None,
        layers: serde_json::Value::Null,
        limits: Default::default(),
        result: None,
        hand_back: Vec::new(),
        write_roots: None,
        trees: Vec::new(),
        user: None,
        report_refused: false,
        codex_home: None,
        codex_left: None,
        stand_ins: None,
    };
    // The report's directory, opened now (never through a link swapped in
    // later); written into at the end, whatever happens.
    let mut target = None;
    if let Some(path) = opts.report.filter(|_| !opts.dry_run) {
        match crate::hostfs::Target::open(path) {
            Ok(t) => {
                for w in t.dir.warnings() {
                    let _ = writeln!(err, "sealc: warning: the run report: {w}");
                }
                target = Some(t);
            }
            Err(e) => {
                let _ = writeln!(
                    err,
                    "error: cannot write the run report {}: {e}, so nothing was started",
                    quote(&path.display().to_string())
                );
                return BAD_INPUT;
            }
        }
    }
    let mut tee = Tee {
        inner: err,
        text: Vec::new(),
    };
    let code = exec_run(
        seal,
        opts,
        command,
        target.as_ref(),
        out,
        &mut tee,
        &mut ctx,
    );
    // However the run ended (or stopped before it started), the Codex home
    // made for it is finished: no later run starts with it.
    let keep = target.as_ref().filter(|_| !ctx.report_refused);
    finish_codex_home(&mut ctx, keep, &mut tee);
    finish_stand_ins(&mut ctx, &mut tee);
    let (Some(path), Some(target)) = (opts.report, target.filter(|_| !ctx.report_refused)) else {
        return code;
    };
    let said = String::from_utf8_lossy(&tee.text);
    let r = ctx.result.unwrap_or_default();
    let outcome = r.outcome.unwrap_or_else(|| report::Outcome::CouldNotStart {
        phase: ctx.phase,
        message: said
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or("nothing was started")
            .to_string(),
    });
    let rep = report::Report {
        argv: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        binding: ctx.binding,
        codex_config: ctx.codex_config,
        codex_home: ctx.codex_left,
        cpu_seconds: r.cpu_seconds,
        duration_seconds: t0.elapsed().as_secs_f64(),
        ended_at: report::rfc3339(std::time::SystemTime::now()),
        exit_code: code,
        layers: ctx.layers,
        limits: ctx.limits,
        limits_reached: r.limits_reached,
        network: ctx.network.network,
        network_omitted: ctx.network.network_omitted,
        outcome: Some(outcome),
        peak_memory_kib: r.peak_memory_kib,
        resolve_overrides: ctx.network.resolve_overrides,
        hand_back_errors: ctx.hand_back,
        schema: report::SCHEMA,
        started_at: report::rfc3339(started),
        stderr: r.stderr,
        stdout: r.stdout,
        user: ctx.user,
        write_roots: ctx.write_roots,
    };
    if let Err(e) = report::write(&target, &rep) {
        let _ = writeln!(
            tee.inner,
            "error: cannot write the run report {}: {e}",
            quote(&path.display().to_string())
        );
        return if code == OK { BAD_INPUT } else { code };
    }
    code
}

/// Who the sandbox runs as: started by root, an unprivileged user (Linux).
fn exec_user(
    platform: crate::spec::Platform,
    user: Option<&str>,
) -> Result<Option<crate::exec::Ids>, String> {
    let root = rustix::process::geteuid().is_root();
    match (platform, root, user) {
        (crate::spec::Platform::Linux, true, u) => {
            let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            crate::exec::user::parse_user(u.unwrap_or(crate::exec::user::DEFAULT_USER), &passwd)
                .map(Some)
        }
        (_, _, Some(u)) => Err(format!(
            "`--user {u}` is for a Linux seal started by root; the agent runs as its caller here"
        )),
        _ => Ok(None),
    }
}
