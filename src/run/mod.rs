//! The run (`sealc exec`) as a pipeline of its own, in the library: each
//! stage consumes what the one before made, and the report's `phase` names
//! the stage a run stopped in.
//!
//! 1. **verify** ([`stages::verify`]): the record recompiles to its
//!    artifacts, and names the `--expect`ed seal;
//! 2. **host check** ([`stages::host_check`]): the host still matches the
//!    recorded facts, and the platform, stdio, the user, sealc's own binary,
//!    the record's and the report's places are ones the agent cannot reach;
//! 3. **prepare** ([`stages::prepare`]): the plan, the write roots and
//!    stand-ins made, the Codex home, the write roots handed to the agent's
//!    user (idmapped or chowned);
//! 4. **confine and wait** ([`handed::confine_and_wait`]): the sandbox
//!    built and the command run to its end (the runtime in [`crate::exec`]);
//! 5. **hand back** ([`stages::hand_back`]): the write roots go back to
//!    their owners, the Codex home and stand-ins are finished;
//! 6. **report**: written atomically beside nothing the agent can reach.
//!
//! Architecture Invariant: nothing here prints. What a run has to tell its
//! caller on the way is a [`Note`]; why it did not start is a typed
//! [`Refusal`] (its exit status, its message, its help lines), which the
//! report records as it is: no text is read back from a stream.

mod attested;
mod codex;
mod handed;
mod help;
mod kept;
mod outputs;
mod reset;
pub mod signed;
mod stages;

use std::ffi::OsString;
use std::path::Path;

use crate::diag::{quote, Diagnostics};
use crate::exec::report::{self, Phase};

use crate::exit::REFUSED;

/// What the caller of `sealc exec` asked for.
pub struct Options<'a> {
    /// The record (`seal.json`).
    pub record: &'a Path,
    /// An artifact of the record by its name, read where the caller keeps
    /// them.
    pub files: &'a dyn Fn(&str) -> Option<Vec<u8>>,
    pub dry_run: bool,
    pub user: Option<&'a str>,
    pub expect: Option<&'a str>,
    /// `--allowed-signers FILE` and `--signature FILE`: the record must be
    /// signed by a key the file trusts.
    pub signers: Option<(&'a Path, Option<&'a Path>)>,
    /// `--attest FILE`: the run's in-toto attestation goes there.
    pub attest: Option<&'a Path>,
    /// `--subject PATH`: files the run produces, named in the attestation
    /// by file name with their digests (taken after the run).
    pub subjects: &'a [std::path::PathBuf],
    /// `--sign-key KEY`: signs it (DSSE, the key's raw signature).
    pub attest_sign: Option<crate::attest::Sign<'a>>,
    pub report: Option<&'a Path>,
    /// `--stdout FILE`, `--stderr FILE`: the command's output kept there
    /// (written under a random name beside it, renamed into place when the
    /// run ends) instead of relayed to sealc's own.
    pub keep: [Option<&'a Path>; 2],
    pub force: bool,
    pub raw_terminal: bool,
    pub resolve: &'a [String],
    pub walk_limit: u64,
}

/// What a run tells its caller on the way (the CLI prints each as it comes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// Something the caller should act on (`sealc: warning: ...`).
    Warning(String),
    /// What became of the run (`sealc: ...`).
    Said(String),
    /// One drifted fact (`drift       ...`), before the refusal it causes.
    Drift(String),
    /// A verification report, as `sealc verify` prints it.
    Verification(String),
    /// An error that did not stop the run from having an outcome (the Codex
    /// config drifted during the run, a layer inside failed): its message
    /// and help lines.
    Error { message: String, help: Vec<String> },
    /// Diagnostics about the seal, for the file named.
    Diagnostics { diags: Diagnostics, file: String },
}

/// Where a run's notes go.
pub trait Notes {
    fn note(&mut self, note: Note);
    /// Where sealc's own proxy tells each refusal as it happens (one line at
    /// a time, from the proxy's threads), if anywhere.
    fn proxy_log(&mut self) -> Option<crate::proxy::Log>;
}

/// Why nothing was started (or the sandbox could not be built): the exit
/// status, the message (the report's `message`), the help lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The stage it stopped in (the report's `phase`).
    pub phase: Phase,
    pub exit: i32,
    pub message: String,
    pub help: Vec<String>,
    /// The drifted facts that caused it, told before it.
    pub drift: Vec<String>,
    /// Diagnostics about the seal that say it in full (for the file named):
    /// told in place of the message.
    pub diagnostics: Option<Box<(Diagnostics, String)>>,
}

impl Refusal {
    pub fn new(exit: i32, message: impl Into<String>) -> Self {
        Refusal {
            // Each stage says its own (`stages::run`).
            phase: Phase::Verify,
            exit,
            message: message.into(),
            help: Vec::new(),
            drift: Vec::new(),
            diagnostics: None,
        }
    }

    /// The refusal of the stage `phase`.
    pub fn in_phase(mut self, phase: Phase) -> Self {
        self.phase = phase;
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help.push(help.into());
        self
    }

    /// Told: the drifted facts, then the error and its help.
    fn tell(self, notes: &mut dyn Notes) {
        for d in self.drift {
            notes.note(Note::Drift(d));
        }
        if let Some((diags, file)) = self.diagnostics.map(|b| *b) {
            notes.note(Note::Diagnostics { diags, file });
            return;
        }
        notes.note(Note::Error {
            message: self.message,
            help: self.help,
        });
    }
}

/// How a run ended.
#[derive(Debug)]
pub enum Ended {
    /// `--dry-run`: the plan, nothing started.
    DryRun(serde_json::Value),
    /// The exit status (the command's, or why it did not run).
    Status(i32),
}

/// What a run learns on its way, for the run report.
struct Ctx {
    /// The network part: each connection through sealc's own proxy.
    network: crate::audit::NetworkAudit,
    codex_config: Option<&'static str>,
    /// What the Codex config check after the run found changed.
    codex_config_changes: Vec<String>,
    binding: Option<String>,
    /// `--allowed-signers`: who signed the seal.
    signed: Option<crate::signature::Signed>,
    /// `sha256:` of the record's bytes, once read.
    record_digest: String,
    /// The names of the env vars that cross into the run.
    env_names: Vec<String>,
    /// `--attest`: where the attestation goes, opened before the run.
    attest: Option<crate::hostfs::Target>,
    layers: serde_json::Value,
    limits: std::collections::BTreeMap<&'static str, report::Limit>,
    result: Option<crate::exec::RunResult>,
    /// What could not be handed back to the write roots' owners.
    hand_back: Vec<String>,
    /// Started by root: how the agent's user may write the write roots,
    /// `idmapped` or `chowned`.
    write_roots: Option<&'static str>,
    /// The seal runs with `exec.isolation = "landlock"`.
    landlock_mode: bool,
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
    /// Write roots absent when compiled and made for this run, until the
    /// sandbox has started: a run refused before that takes them away
    /// again (each by descriptor, still the directory made, and empty), so
    /// nothing it was refused leaves a trace that a later run, or a
    /// recompile, would take for the host's.
    made_roots: crate::absent::MadeRoots,
    /// Started by root: this run's locks on its write roots, from reading
    /// their owners until they are handed back (`exec::user::hold`).
    holds: Option<crate::exec::user::Holds>,
    /// When `sealc exec` started.
    started: std::time::SystemTime,
    /// `exec.reset`: each write root emptied before the run, and how many
    /// entries went.
    reset: std::collections::BTreeMap<String, u64>,
    /// Their locks, held until the run ends.
    reset_locks: Vec<crate::hostfs::Dir>,
    /// `exec.outputs`: what the run left at each, once its command ran.
    outputs: std::collections::BTreeMap<String, report::OutputState>,
}

/// The report written before the command starts, which the run's end
/// replaces: what is known then (the argv, the binding, the layers, the
/// limits, the user) and the outcome `unfinished`, so a sealc killed
/// during the run leaves a report that says so.
fn unfinished(ctx: &Ctx, command: &[OsString]) -> report::Report {
    report::Report {
        argv: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        binding: ctx.binding.clone(),
        signed_by: ctx.signed.as_ref().map(report::SignedBy::from),
        layers: ctx.layers.clone(),
        limits: ctx.limits.clone(),
        outcome: Some(report::Outcome::Unfinished),
        schema: report::SCHEMA,
        started_at: report::rfc3339(ctx.started),
        user: ctx.user.clone(),
        write_roots: ctx.write_roots,
        ..report::Report::default()
    }
}

/// Refused before the sandbox could start: the write roots made for the
/// run are taken away (after the stand-ins and the Codex home, which lie in
/// them).
fn unmake_unstarted(ctx: &mut Ctx) {
    std::mem::take(&mut ctx.made_roots).remove();
}

/// Once nothing of the sandbox is left: the stand-ins made for the run are
/// removed, each if it is still the empty directory made.
fn finish_stand_ins(ctx: &mut Ctx, notes: &mut dyn Notes) {
    let Some(s) = ctx.stand_ins.take() else {
        return;
    };
    if ctx.result.as_ref().is_some_and(|r| r.survivors) {
        notes.note(Note::Warning(format!(
            "a process of the sandbox was still there after the run, so the stand-ins of protected paths were left: {}",
            s.made().iter().map(|p| quote(p)).collect::<Vec<_>>().join(", ")
        )));
        return;
    }
    for p in s.remove() {
        notes.note(Note::Warning(crate::diag::visible(&p)));
    }
}

/// `sealc exec`: verify a record exactly as `sealc verify` does, run a
/// command under its seal, and write the run report (also when nothing
/// started).
pub fn exec(opts: &Options<'_>, command: &[OsString], notes: &mut dyn Notes) -> Ended {
    let started = std::time::SystemTime::now();
    let t0 = std::time::Instant::now();
    let mut ctx = Ctx {
        network: crate::audit::NetworkAudit::default(),
        codex_config: None,
        codex_config_changes: Vec::new(),
        binding: None,
        signed: None,
        record_digest: String::new(),
        env_names: Vec::new(),
        attest: None,
        layers: serde_json::Value::Null,
        limits: Default::default(),
        result: None,
        hand_back: Vec::new(),
        write_roots: None,
        landlock_mode: false,
        trees: Vec::new(),
        user: None,
        report_refused: false,
        codex_home: None,
        codex_left: None,
        stand_ins: None,
        made_roots: Default::default(),
        holds: None,
        started,
        reset: Default::default(),
        reset_locks: Vec::new(),
        outputs: Default::default(),
    };
    // The report's directory, opened now (never through a link swapped in
    // later); written into at the end, whatever happens.
    let mut target = None;
    if let Some(path) = opts.report.filter(|_| !opts.dry_run) {
        match crate::hostfs::Target::open(path) {
            Ok(t) => {
                for w in t.dir.warnings() {
                    notes.note(Note::Warning(format!("the run report: {w}")));
                }
                target = Some(t);
            }
            Err(e) => {
                Refusal::new(
                    REFUSED,
                    format!(
                        "cannot write the run report {}: {e}, so nothing was started",
                        quote(&path.display().to_string())
                    ),
                )
                .tell(notes);
                return Ended::Status(REFUSED);
            }
        }
    }
    // Where the command's output is kept, opened now as the report's
    // directory is.
    let kept = match kept::open(opts, target.as_ref(), notes) {
        Ok(k) => k,
        Err(r) => {
            r.tell(notes);
            return Ended::Status(REFUSED);
        }
    };
    match attested::open(opts, target.as_ref(), &kept, notes) {
        Ok(a) => ctx.attest = a,
        Err(r) => {
            r.tell(notes);
            return Ended::Status(REFUSED);
        }
    }
    let (code, refusal) = match stages::run(opts, command, target.as_ref(), &kept, notes, &mut ctx)
    {
        Ok(Ended::DryRun(plan)) => return Ended::DryRun(plan),
        Ok(Ended::Status(code)) => (code, None),
        Err(r) => {
            let (code, phase, message) = (r.exit, r.phase, r.message.clone());
            r.tell(notes);
            (code, Some((phase, message)))
        }
    };
    let what = if ctx.write_roots == Some("idmapped") {
        "cannot clear a set-id bit"
    } else {
        "cannot hand back ownership"
    };
    for p in &ctx.hand_back {
        notes.note(Note::Said(format!("{what}: {p}")));
    }
    // However the run ended (or stopped before it started), the Codex home
    // made for it is finished: no later run starts with it.
    let keep = target.as_ref().filter(|_| !ctx.report_refused);
    codex::finish_codex_home(&mut ctx, keep, notes);
    finish_stand_ins(&mut ctx, notes);
    unmake_unstarted(&mut ctx);
    let target = target.filter(|_| !ctx.report_refused);
    let attest = ctx.attest.take().filter(|_| !ctx.report_refused);
    if target.is_none() && attest.is_none() {
        return Ended::Status(code);
    }
    let r = ctx.result.unwrap_or_default();
    // The run's own outcome, or the refusal's (every way of stopping
    // before an outcome is a refusal).
    let outcome = r.outcome.unwrap_or_else(|| {
        let (phase, message) =
            refusal.unwrap_or((Phase::SandboxStart, "nothing was started".to_string()));
        report::Outcome::CouldNotStart { phase, message }
    });
    let rep = report::Report {
        argv: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        binding: ctx.binding,
        signed_by: ctx.signed.as_ref().map(report::SignedBy::from),
        codex_config: ctx.codex_config,
        codex_config_changes: ctx.codex_config_changes,
        codex_home: ctx.codex_left,
        cpu_seconds: r.cpu_seconds,
        duration_seconds: t0.elapsed().as_secs_f64(),
        ended_at: report::rfc3339(std::time::SystemTime::now()),
        exit_code: Some(code),
        layers: ctx.layers,
        limits: ctx.limits,
        limits_reached: r.limits_reached,
        left_running: r.left_running,
        mcp: r.mcp,
        network: ctx.network.network,
        network_omitted: ctx.network.network_omitted,
        outcome: Some(outcome),
        outputs: ctx.outputs,
        peak_memory_kib: r.peak_memory_kib,
        resolve_overrides: ctx.network.resolve_overrides,
        reset: ctx.reset,
        hand_back_errors: ctx.hand_back,
        schema: report::SCHEMA,
        started_at: report::rfc3339(started),
        stderr: r.stderr,
        stdout: r.stdout,
        user: ctx.user,
        write_roots: ctx.write_roots,
    };
    let mut failed = false;
    if let Some(target) = &target {
        if let Err(e) = report::write(target, &rep) {
            notes.note(Note::Error {
                message: format!(
                    "cannot write the run report {}: {e}",
                    quote(&target.path().display().to_string())
                ),
                help: Vec::new(),
            });
            failed = true;
        }
    }
    if let Some(t) = &attest {
        if let Err(e) = attested::write(opts, t, &rep, &ctx.record_digest, &ctx.env_names) {
            notes.note(Note::Error {
                message: format!(
                    "cannot write the attestation {}: {e}",
                    quote(&t.path().display().to_string())
                ),
                help: Vec::new(),
            });
            failed = true;
        }
    }
    Ended::Status(if failed && code == 0 { REFUSED } else { code })
}

/// The names of the env vars that cross into the run, sorted.
fn env_names(ir: &crate::ir::Ir) -> Vec<String> {
    let env = &ir.env;
    let mut names: Vec<String> = env.vars.keys().chain(&env.secrets).cloned().collect();
    names.sort();
    names.dedup();
    names
}

/// Who the sandbox runs as: started by root, an unprivileged user (Linux).
fn exec_user(
    platform: crate::spec::Platform,
    user: Option<&str>,
) -> Result<Option<crate::exec::Ids>, crate::failure::Failure> {
    let root = rustix::process::geteuid().is_root();
    match (platform, root, user) {
        (crate::spec::Platform::Linux, true, u) => {
            let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            crate::exec::user::parse_user(u.unwrap_or(crate::exec::user::DEFAULT_USER), &passwd)
                .map(Some)
        }
        (_, _, Some(u)) => Err(crate::failure::Failure::new(format!(
            "`--user {u}` is for a Linux seal started by root; the agent runs as its caller here"
        ))),
        _ => Ok(None),
    }
}
