//! `sealc exec`: verify a record exactly as `sealc verify` does, then run a
//! command under its seal, and write the run report.

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

/// `sealc exec`: verify exactly as `sealc verify` does, then run.
fn exec_run(
    seal: &super::SealArgs,
    opts: &ExecOpts<'_>,
    command: &[OsString],
    report: Option<&crate::hostfs::Target>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    ctx: &mut ExecCtx,
) -> i32 {
    let (record, dry_run, expect) = (seal.record.as_path(), opts.dry_run, opts.expect);
    let mut overrides = std::collections::BTreeMap::new();
    for r in opts.resolve {
        match crate::proxy::parse_resolve(r) {
            Ok((name, ip)) => {
                overrides.insert(name, ip);
            }
            Err(e) => {
                let _ = writeln!(err, "error: `--resolve`: {e}");
                return BAD_INPUT;
            }
        }
    }
    let display = record.display().to_string();
    let bytes = match crate::hostfs::read_path(record, crate::hostfs::MAX_RECORD) {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: cannot read the record {}: {e}",
                quote(&display)
            );
            return BAD_INPUT;
        }
    };
    let files = seal.files();
    let outcome = crate::verify::verify(&bytes, &files);
    if let (Some(want), Some(rec)) = (expect, &outcome.record) {
        if rec.binding != want {
            let _ = writeln!(
                err,
                "error: {display} binds {}, not the expected {want}, so nothing was started",
                rec.binding
            );
            let _ = writeln!(
                err,
                "help: run the seal you reviewed, or review this one and pass its binding to `--expect`"
            );
            return DIFFERS;
        }
    }
    let verdict = outcome.report.verdict();
    let (Some(rec), Some(recompiled), crate::verify::Verdict::Verified) =
        (&outcome.record, &outcome.recompiled, verdict)
    else {
        let _ = write!(err, "{}", outcome.report.to_text());
        let _ = writeln!(
            err,
            "error: {display} does not verify, so nothing was started"
        );
        return verdict.exit_code().max(DIFFERS);
    };
    ctx.binding = Some(rec.binding.clone());
    ctx.phase = crate::exec::report::Phase::HostCheck;
    let compiled =
        match crate::compile_with_facts(&rec.spec.file, &rec.spec.text, rec.facts.clone()) {
            Ok(c) => c,
            Err(_) => {
                let _ = writeln!(
                    err,
                    "error: {display} does not recompile, so nothing was started"
                );
                return DIFFERS;
            }
        };
    if let Some(d) = wrong_platform(compiled.ir.platform).filter(|_| !dry_run) {
        let _ = writeln!(err, "error: {d}, so nothing was started");
        let _ = writeln!(
            err,
            "help: compile the spec for this host (`sealc compile SPEC --platform {}`) and run that seal",
            crate::spec::Platform::host().as_str()
        );
        return BAD_INPUT;
    }
    let drift = crate::exec::host_drift(rec, &RealHost);
    if !drift.is_empty() {
        for d in &drift {
            let _ = writeln!(err, "drift       live {d}");
        }
        let _ = writeln!(
            err,
            "error: this host no longer matches the facts {display} was compiled against, so nothing was started"
        );
        for help in drift_help(&drift, rec, &seal.record) {
            let _ = writeln!(err, "help: {help}");
        }
        return DIFFERS;
    }
    // `codex` (the launcher's name) runs the recorded, checked launcher.
    let command = &crate::exec::resolve_launcher(&compiled.ir, command)[..];
    let ways = match crate::exec::stdio::ways() {
        Ok(w) => w,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            let _ = writeln!(
                err,
                "help: give the command a file, a pipe or a terminal, e.g. `< /dev/null`"
            );
            return BAD_INPUT;
        }
    };
    // The command's output to a terminal goes through the terminal filter.
    let deliveries = crate::exec::stdio::deliveries(opts.raw_terminal);
    let user = match exec_user(compiled.ir.platform, opts.user) {
        Ok(u) => u,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return BAD_INPUT;
        }
    };
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sealc"));
    // sealc runs inside as pid 1 and before the command is confined: a copy
    // the agent can replace would run unconfined in the next run.
    if let Some(w) = compiled.ir.roots.iter().find(|r| {
        r.kind == crate::ir::RootKind::Write
            && r.real
                .as_deref()
                .is_some_and(|real| crate::ir::is_within(&exe.to_string_lossy(), real))
    }) {
        let _ = writeln!(
            err,
            "error: sealc's own binary {} is inside the write root {}, where the agent could replace it for the next run, so nothing was started",
            quote(&exe.display().to_string()),
            quote(&w.origin)
        );
        let _ = writeln!(
            err,
            "help: install sealc outside every write root (`cargo install --locked --path .`)"
        );
        return BAD_INPUT;
    }
    // The record is the seal: one inside its own write roots is one the
    // agent can rewrite during this run, pinned or not, for any later run
    // (a fresh compile verifies as well as the reviewed one, and after the
    // run it is handed back to the owner like any file the agent made). So
    // it never runs. A record whose place cannot be told (a pipe, a
    // deleted file) runs only pinned.
    let placed = std::fs::metadata(record)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .and_then(|_| std::fs::canonicalize(record).ok());
    match placed {
        Some(real) => {
            if let Some(w) = compiled.ir.write_root_holding(&real.to_string_lossy()) {
                let _ = writeln!(
                    err,
                    "error: the record {} is inside the write root {} of its own seal, where the agent could rewrite it for any later run, so nothing was started",
                    quote(&display),
                    quote(&w)
                );
                let _ = writeln!(
                    err,
                    "help: compile with `--out` outside every write root (and keep it outside the write roots of your other seals too)"
                );
                return BAD_INPUT;
            }
        }
        None if expect.is_none() => {
            let _ = writeln!(
                err,
                "error: {} is not a regular file whose place can be told (a pipe, a deleted file), so whether the agent could have written it cannot be checked, and nothing was started",
                quote(&display)
            );
            let _ = writeln!(
                err,
                "help: give the path of the `seal.json` itself, or pin the seal you reviewed with `--expect sha256:<binding>`"
            );
            return BAD_INPUT;
        }
        None => {}
    }
    // The report is evidence: one the agent could touch before or after
    // the run (a planted link at its name, a rewrite) proves nothing.
    if let Some(t) = report {
        if let Some(w) = crate::exec::write_root_reaching(&compiled.ir, &t.dir, None) {
            ctx.report_refused = true;
            let _ = writeln!(
                err,
                "error: the run report {} would be inside the write root {}, where the agent could replace it or plant a link at its name, so nothing was started (and no report written)",
                quote(&t.path().display().to_string()),
                quote(w)
            );
            let _ = writeln!(
                err,
                "help: give `--report` a path outside every write root of the seal"
            );
            return BAD_INPUT;
        }
    }
    let needs_bridge =
        compiled.ir.platform == crate::spec::Platform::Linux && compiled.ir.network.mode.proxied();
    let profile = recompiled
        .get(crate::backend::SEATBELT)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has_proc_entry = |p: &str| Path::new(p).exists();
    ctx.limits = crate::exec::report::limits(&compiled.ir);
    let mut rt = crate::exec::Runtime {
        exe: &exe,
        bridge_dir: Path::new("<bridge-dir>"), // made below, once nothing can fail
        profile,
        user,
        inside: None,
        has_proc_entry: &has_proc_entry,
    };
    let mut plan = match crate::exec::plan(&compiled.ir, command, &|n| std::env::var_os(n), &rt) {
        Ok(p) => p,
        Err(d) => {
            let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, ""));
            return BAD_INPUT;
        }
    };
    ctx.layers = dry_run_layers(&compiled.ir, &plan);
    ctx.phase = crate::exec::report::Phase::SandboxStart;
    if dry_run {
        let layers = ctx.layers.clone();
        let shown = serde_json::json!({
            "argv": std::iter::once(plan.program.clone())
                .chain(plan.args.iter().map(|a| a.to_string_lossy().into_owned()))
                .collect::<Vec<_>>(),
            "env": plan.env.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            "layers": layers,
            "secrets": plan.secrets,
            "timeout": plan.timeout.map(|t| t.as_secs()),
            "user": plan.user.map(|u| format!("{}:{}", u.uid, u.gid)),
            "codex_config": codex_target(&compiled.ir),
            "stand_ins": compiled.ir.stand_ins().into_iter().map(|(at, _)| at).collect::<Vec<_>>(),
        });
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
        return OK;
    }
    // What is protected has no second name the agent can write it through.
    if let Err(e) = crate::absent::check_protected(&compiled.ir) {
        let _ = writeln!(err, "drift       protect     {}", crate::diag::visible(&e));
        let _ = writeln!(
            err,
            "error: a protected path could be written or run from a writable place all the same, so nothing was started"
        );
        let _ = writeln!(
            err,
            "help: remove the other name (`find WRITE_ROOT -samefile PATH` finds a hard link), or protect where the link leads too, then run again"
        );
        return DIFFERS;
    }
    // Write roots absent when compiled: made now, where the seal mounts them.
    let made_roots = match crate::absent::make_write_roots(&compiled.ir) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(err, "error: {e}, so nothing was started");
            return crate::exec::SANDBOX_FAILED;
        }
    };
    // Protected paths absent when compiled: an empty stand-in each, for
    // the run (read-only inside), so the agent cannot make them first.
    match crate::absent::make_stand_ins(&compiled.ir) {
        Ok(s) => ctx.stand_ins = Some(s),
        Err(e) => {
            crate::absent::unmake(&made_roots);
            let _ = writeln!(err, "error: {e}, so nothing was started");
            let _ = writeln!(
                err,
                "help: look at what is there (a protected path is kept read-only for the run), and remove or move it"
            );
            return crate::exec::SANDBOX_FAILED;
        }
    }
    let roots: Vec<String> = compiled
        .ir
        .roots
        .iter()
        .filter(|r| r.kind == crate::ir::RootKind::Write)
        .filter_map(|r| r.real.clone())
        .collect();
    if let Some(ids) = user {
        if let Some(e) = roots
            .iter()
            .find_map(|r| crate::exec::user::reachable(r, ids).err())
        {
            undo_made(ctx, &made_roots);
            let _ = writeln!(err, "error: {e}, so nothing was started");
            let _ = writeln!(
                err,
                "help: let that user search every directory above the write roots (`chmod o+x`), or pick another with `--user`"
            );
            return BAD_INPUT;
        }
    }
    // The verified Codex config goes into the seal's CODEX_HOME (in a write
    // root, so before the roots are handed over).
    let codex_config = recompiled
        .get(crate::backend::CODEX)
        .cloned()
        .unwrap_or_default();
    let installs = codex_target(&compiled.ir).is_some();
    if installs {
        use crate::exec::codex_home::{prepare, read_credentials, Refused};
        let made = read_credentials(&compiled.ir)
            .and_then(|creds| prepare(&compiled.ir, &codex_config, creds.as_ref(), opts.force));
        match made {
            Ok(home) => {
                if home.discarded > 0 {
                    let _ = writeln!(
                        err,
                        "sealc: warning: discarded what an earlier run left in the Codex home {} ({} entries), as `--force` asks",
                        quote(&home.path),
                        home.discarded
                    );
                }
                ctx.codex_home = Some(home);
            }
            Err(Refused::Left(why)) => {
                undo_made(ctx, &made_roots);
                let _ = writeln!(err, "drift       codex home  {why}");
                let _ = writeln!(
                    err,
                    "error: the seal's Codex home is made fresh for every run, and one is there already, so nothing was started"
                );
                let _ = writeln!(
                    err,
                    "help: review what is there (an earlier run's instructions, skills or rules would steer this run's Codex), then remove it or run again with `--force` to discard it"
                );
                return DIFFERS;
            }
            Err(Refused::Io(why)) => {
                undo_made(ctx, &made_roots);
                let _ = writeln!(err, "error: {why}, so nothing was started");
                return BAD_INPUT;
            }
        }
    }
    // A `PATH` entry the agent's user cannot search: its commands will not run.
    if let Some(ids) = user {
        let path = plan.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v);
        let entries = path
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut seen = std::collections::BTreeSet::new();
        for dir in entries.split(':').filter(|d| !d.is_empty()) {
            if seen.insert(dir) && crate::exec::user::searchable(dir, ids).is_err() {
                let _ = writeln!(
                    err,
                    "sealc: warning: PATH entry `{dir}` cannot be searched by the agent's user ({}:{}): commands there will not run",
                    ids.uid, ids.gid
                );
            }
        }
    }
    // Who owned each write root, to hand it back after the run.
    let owners = match user.map(|_| crate::exec::user::owners(&roots)).transpose() {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(err, "error: {e}, so nothing was started");
            return crate::exec::SANDBOX_FAILED;
        }
    };
    // A root the agent's user owns already is one an earlier run did not
    // hand back (sealc killed between hand-over and hand-back): it stays the
    // agent's after this run too, so say so.
    if let (Some(ids), Some(owners)) = (user, &owners) {
        for o in owners.iter().filter(|o| o.ids.uid == ids.uid) {
            let _ = writeln!(
                err,
                "sealc: warning: write root {} is owned by the agent's user ({}:{}) already (an earlier run that did not end?): it stays the agent's after this run; chown it back to its owner",
                quote(&o.root),
                ids.uid,
                ids.gid
            );
        }
    }
    // Started by root: the write roots are idmapped for the agent where
    // the kernel and their filesystems allow it (nothing on disk changes
    // hands), else handed over by chown and back after the run.
    // With them idmapped and no `--user`, the agent runs as a uid of the
    // run's own (seen inside as that user): no host process shares it, and
    // idmapped roots are never paired with a shared default user.
    let mut own_uid = None;
    if let (Some(ids), Some(owners)) = (user, &owners) {
        let own = if opts.user.is_none() {
            let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
            let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
            crate::exec::user::allocate(&passwd, &group)
                .and_then(|d| {
                    match roots
                        .iter()
                        .find_map(|r| crate::exec::user::reachable(r, d.ids).err())
                    {
                        None => Ok(d),
                        Some(e) => Err(e),
                    }
                })
                .map(Some)
        } else {
            Ok(None)
        };
        let chosen = own.and_then(|own| {
            let agent = own.as_ref().map_or(ids, |d| d.ids);
            let trees = crate::exec::idmap::trees(owners, agent)?;
            Ok((own, trees))
        });
        let prepared = chosen.map(|(own, trees)| {
            let agent = own.as_ref().map_or(ids, |d| d.ids);
            (
                own,
                trees,
                crate::exec::user::prepare(owners, agent, opts.walk_limit),
            )
        });
        use crate::exec::user::Unprepared;
        let fallback = match prepared {
            Ok((own, trees, Ok(cleared))) => {
                for c in cleared.iter().take(20) {
                    let _ = writeln!(
                        err,
                        "sealc: warning: cleared {c} before the run (the agent may rewrite any file in a write root)"
                    );
                }
                if cleared.len() > 20 {
                    let _ = writeln!(
                        err,
                        "sealc: warning: and {} more set-id bits or file capabilities cleared",
                        cleared.len() - 20
                    );
                }
                ctx.trees = trees;
                ctx.write_roots = Some("idmapped");
                own_uid = own;
                None
            }
            // What the agent left (a tree too deep to walk) must not choose
            // the weaker hand-over: nothing starts.
            Ok((_, _, Err(Unprepared::Failed(why)))) => {
                let _ = writeln!(err, "error: {why}, so nothing was started");
                let _ = writeln!(
                    err,
                    "help: look at what is there (a run's agent may have left it), and remove or move it"
                );
                return crate::exec::SANDBOX_FAILED;
            }
            Ok((_, _, Err(Unprepared::LinkOut(why)))) => Some(why),
            Err(why) => Some(why),
        };
        if let Some(why) = fallback {
            let _ = writeln!(
                err,
                "sealc: warning: the write roots cannot be idmapped here ({why}): they are handed to the agent's user ({}:{}) by chown for the run, and back after it",
                ids.uid, ids.gid
            );
            ctx.write_roots = Some("chowned");
        }
    }
    if let Some(d) = &own_uid {
        rt.user = Some(d.ids);
        rt.inside = user;
        plan = match crate::exec::plan(&compiled.ir, command, &|n| std::env::var_os(n), &rt) {
            Ok(p) => p,
            Err(_) => return crate::exec::SANDBOX_FAILED,
        };
    }
    ctx.user = rt.user.map(|u| format!("{}:{}", u.uid, u.gid));
    let idmapped = ctx.write_roots == Some("idmapped");
    let code = 'run: {
        if let (Some(ids), false) = (user, idmapped) {
            if let Err(e) = crate::exec::user::hand_over(&roots, ids, opts.walk_limit) {
                let _ = writeln!(err, "error: {e}, so nothing was started");
                break 'run crate::exec::SANDBOX_FAILED;
            }
        }
        run_handed(
            &compiled.ir,
            plan,
            rt,
            needs_bridge,
            command,
            (ways, deliveries),
            overrides,
            (installs, &codex_config),
            out,
            err,
            ctx,
        )
    };
    // Once nothing of the sandbox is left, also when the command failed or
    // was stopped: each write root goes back to its owner (chowned), or
    // loses any set-id bit the run gave a file (idmapped).
    if let (Some(ids), Some(owners)) = (user, owners) {
        let survivors = ctx.result.as_ref().is_some_and(|r| r.survivors);
        if survivors && !idmapped {
            ctx.hand_back.push(
                "a process of the sandbox was still there, so the write roots were left to the agent's user".into(),
            );
        } else if idmapped {
            if survivors {
                let _ = writeln!(
                    err,
                    "sealc: warning: a process of the sandbox was still there after the run: it may still write the write roots"
                );
            }
            ctx.trees.clear();
            ctx.hand_back = crate::exec::user::sweep_set_id(&owners, opts.walk_limit);
        } else {
            ctx.hand_back = crate::exec::user::hand_back(&owners, ids, opts.walk_limit);
        }
        let what = if idmapped {
            "cannot clear a set-id bit"
        } else {
            "cannot hand back ownership"
        };
        for p in &ctx.hand_back {
            let _ = writeln!(err, "sealc: {what}: {p}");
        }
    }
    code
}

/// Once nothing of the sandbox is left: what the run left in its Codex
/// home is listed, kept for review beside the report (`FILE.codex-home`)
/// or discarded, and the home removed, so no run starts with another's.
fn finish_codex_home(
    ctx: &mut ExecCtx,
    report: Option<&crate::hostfs::Target>,
    err: &mut dyn Write,
) {
    let Some(home) = ctx.codex_home.take() else {
        return;
    };
    if ctx.result.as_ref().is_some_and(|r| r.survivors) {
        let _ = writeln!(
            err,
            "sealc: warning: a process of the sandbox was still there after the run, so the Codex home {} was left as it is (the next run refuses it until it is reviewed and removed)",
            quote(&home.path)
        );
        return;
    }
    let name = report.map(|t| {
        let mut n = t.name.clone();
        n.push(".codex-home");
        n
    });
    let keep = report.zip(name.as_deref()).map(|(t, n)| (&t.dir, n));
    let asked = keep.is_some();
    let left = home.finish(keep);
    // What sealc put there (the config, the credentials' copy) is no news.
    let own =
        |p: &str| p == crate::exec::codex_home::CONFIG || p == crate::exec::codex_home::CREDENTIALS;
    let news = left.entries_omitted > 0 || left.entries.iter().any(|e| !own(&e.path));
    match &left.kept {
        _ if !news => {}
        Some(at) => {
            let _ = writeln!(
                err,
                "sealc: the Codex home held {} entries after the run: kept for review in {}, and removed",
                left.entries.len() + left.entries_omitted,
                quote(at)
            );
        }
        None if asked => {
            let _ = writeln!(
                err,
                "sealc: the Codex home held {} entries after the run: they could not be kept beside the report (below), and were removed",
                left.entries.len() + left.entries_omitted
            );
        }
        None => {
            let _ = writeln!(
                err,
                "sealc: the Codex home held {} entries after the run: discarded (`--report FILE` keeps them beside the report)",
                left.entries.len() + left.entries_omitted
            );
        }
    }
    for p in left.problems.iter().take(20) {
        let _ = writeln!(
            err,
            "sealc: warning: the Codex home: {}",
            crate::diag::visible(p)
        );
    }
    ctx.codex_left = Some(left);
}

/// From the hand-over on: build the plan's bridge, run, check the Codex
/// config after.
#[allow(clippy::too_many_arguments)]
fn run_handed(
    ir: &crate::ir::Ir,
    plan: crate::exec::Plan,
    rt: crate::exec::Runtime<'_>,
    needs_bridge: bool,
    command: &[OsString],
    (ways, deliveries): (
        [crate::exec::stdio::Way; 3],
        [crate::exec::stdio::Delivery; 2],
    ),
    overrides: std::collections::BTreeMap<String, std::net::IpAddr>,
    (installs, codex_config): (bool, &[u8]),
    out: &mut dyn Write,
    err: &mut dyn Write,
    ctx: &mut ExecCtx,
) -> i32 {
    let mut bridge = None;
    let mut plan = if needs_bridge {
        let b = match crate::exec::private_dir() {
            Ok(d) => d,
            Err(e) => {
                let _ = writeln!(err, "error: cannot make the proxy bridge's directory: {e}");
                return crate::exec::SANDBOX_FAILED;
            }
        };
        let b = bridge.insert(b);
        let rt = crate::exec::Runtime {
            bridge_dir: b.dir.path(),
            ..rt
        };
        match crate::exec::plan(ir, command, &|n| std::env::var_os(n), &rt) {
            Ok(p) => p,
            Err(_) => return crate::exec::SANDBOX_FAILED,
        }
    } else {
        plan
    };
    // sealc's own proxy tells each refusal on stderr, in one write, through
    // its own copy of the descriptor: this thread holds the lock on
    // `Stderr` meanwhile. The line is made of the agent's request: escaped
    // (again: the proxy keeps it to one line of visible ASCII), so it
    // cannot drive the caller's terminal.
    use std::os::fd::AsFd;
    let log: Option<crate::proxy::Log> = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
        .map(|f| -> crate::proxy::Log {
            Box::new(move |line: &str| {
                let line = crate::diag::visible(line);
                let _ = (&f).write_all(format!("sealc: {line}\n").as_bytes());
            })
        });
    let audit = crate::proxy::Audit::new(log, overrides);
    if let Some(p) = plan.proxy.as_mut() {
        p.audit = audit.clone();
    }
    let _ = out.flush();
    let code = match crate::exec::run(&plan, ways, deliveries, &ctx.trees, bridge.as_ref()) {
        Ok(result) => {
            use crate::exec::report::Outcome;
            let said = match &result.outcome {
                Some(Outcome::WallTimeout) => Some("the wall-clock limit".to_string()),
                Some(Outcome::CpuLimit) => Some("the CPU limit".into()),
                Some(Outcome::MemoryLimit) => Some("the memory limit".into()),
                Some(Outcome::OutputLimit) => Some("the output limit".into()),
                Some(Outcome::FileSizeLimit) => Some("the file size limit".into()),
                // Said from inside the sandbox (the status pipe): escaped.
                Some(Outcome::CouldNotStart { phase, message }) => {
                    let _ = writeln!(
                        err,
                        "error: {} failed: {}",
                        phase.as_str(),
                        crate::diag::visible(message)
                    );
                    None
                }
                _ => None,
            };
            if let Some(what) = said {
                let _ = writeln!(
                    err,
                    "sealc: the run was stopped at {what} (exit {})",
                    result.exit_code()
                );
            }
            let mut code = result.exit_code();
            if let (true, Some(home)) = (installs, &ctx.codex_home) {
                let after = codex_after(ir, home, codex_config, code, err);
                ctx.codex_config = Some(
                    if after == crate::exec::CODEX_CONFIG_DRIFT && code != after {
                        "drift"
                    } else {
                        "unchanged"
                    },
                );
                code = after;
            }
            ctx.result = Some(result);
            code
        }
        Err(e) => {
            if let Some(b) = &bridge {
                b.remove();
            }
            let _ = writeln!(err, "error: cannot start {}: {e}", quote(&plan.program));
            if plan.bubblewrap && std::fs::metadata(&plan.program).is_err() {
                let _ = writeln!(err, "help: {}", no_bwrap_help(&plan.program));
            }
            crate::exec::SANDBOX_FAILED
        }
    };
    audit.fill(&mut ctx.network);
    code
}

/// What to do when the seal's bubblewrap is not on this host (compile
/// warns of it too: `sealc::exec::no-bwrap`).
fn no_bwrap_help(program: &str) -> String {
    format!(
        "bubblewrap {} is not on this host: install bubblewrap 0.8 or newer (`apt-get install bubblewrap`), or set `[exec] bwrap` in the spec to where it is; then compile the seal again (its digest is part of the seal)",
        quote(program)
    )
}

/// Where `sealc exec` installs the Codex config: a Codex seal's
/// `CODEX_HOME/config.toml`.
fn codex_target(ir: &crate::ir::Ir) -> Option<String> {
    let home = ir.codex.home.as_ref().filter(|_| ir.codex.sealed)?;
    Some(format!("{home}/{}", crate::exec::codex_home::CONFIG))
}

/// After the command: the drift check of the Codex config (what
/// `sealc verify --codex-config` does). Drift is reported and gives
/// [`crate::exec::CODEX_CONFIG_DRIFT`], whatever the command's status.
fn codex_after(
    ir: &crate::ir::Ir,
    home: &crate::exec::codex_home::Home,
    generated: &[u8],
    code: i32,
    err: &mut dyn Write,
) -> i32 {
    use crate::facts::Host as _;
    let mut report = crate::verify::Report::default();
    let mut workspaces = ir.codex.workspaces.clone();
    if workspaces.is_empty() {
        // No workspace recorded: Codex may trust the directory it ran in.
        if let Ok(cwd) = std::env::current_dir() {
            let cwd = cwd.display().to_string();
            workspaces.extend(RealHost.canonicalize(&cwd).filter(|r| *r != cwd));
            workspaces.insert(0, cwd);
        }
    }
    match home.config_after(generated) {
        Ok((_, false)) => {}
        Ok((after, true)) => {
            crate::verify::check_codex_config(generated, &after, &workspaces, &mut report)
        }
        Err(why) => report.push("codex config", crate::verify::Status::Drift, why),
    }
    if report.verdict() == crate::verify::Verdict::Verified {
        return code;
    }
    let _ = write!(err, "{}", report.to_text());
    let _ = writeln!(
        err,
        "error: the Codex config in the seal's CODEX_HOME drifted during the run (the command exited with {code})"
    );
    let _ = writeln!(
        err,
        "help: the agent or Codex changed its own config during the run: a Codex started meanwhile may have used the changed one; review the run (the next run gets a fresh home and the verified config)"
    );
    crate::exec::CODEX_CONFIG_DRIFT
}

/// What `--dry-run` says of the sandbox's layers.
fn dry_run_layers(ir: &crate::ir::Ir, plan: &crate::exec::Plan) -> serde_json::Value {
    if ir.platform != crate::spec::Platform::Linux {
        return serde_json::json!({
            "seatbelt": "the verified profile, by sandbox-exec -p",
            "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()),
        });
    }
    let abi = crate::exec::landlock_abi();
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
        "namespaces": "user (no nested one), mount, pid (sealc's init is pid 1), ipc, uts, cgroup; network unless `open`",
        "network": crate::proxy::layer(&ir.network, plan.proxy.as_ref()),
        "seccomp": crate::backend::bwrap::refused(ir),
        "skipped": plan.skipped,
    })
}

/// What to do about host drift, by its kind. A denied root inside a write
/// root that a run moved, made or linked is never answered with "compile
/// again", whatever else drifted: the new seal would hide the decoy left in
/// its place, or what a run prepared, and expose what it should hide.
/// Otherwise the help is the whole command that compiles the seal again
/// over this one, and how to review the change before pinning the new
/// binding.
fn drift_help(
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
fn recompile_command(rec: &crate::record::Record, dir: &Path) -> String {
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
fn wrong_platform(target: crate::spec::Platform) -> Option<String> {
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
