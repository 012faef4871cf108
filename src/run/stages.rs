//! The stages of a run after the report's directory is open: verify the
//! record, check the host, prepare the plan and the run's own state (write
//! roots, stand-ins, the Codex home, the user), confine and wait, hand back.

use super::*;

use std::path::PathBuf;

use crate::facts::RealHost;

use super::codex::{codex_target, prepare_codex_home};
use super::help::{drift_help, dry_run_layers, wrong_platform};

/// What the verify stage hands on: the record, what it recompiled to, and
/// the seal compiled again from it.
pub(super) struct Verified {
    pub display: String,
    pub rec: crate::record::Record,
    pub recompiled: std::collections::BTreeMap<String, Vec<u8>>,
    pub compiled: crate::Compiled,
}

/// The run, stage by stage.
pub(super) fn run(
    opts: &Options<'_>,
    command: &[OsString],
    report: Option<&crate::hostfs::Target>,
    kept: &[Option<crate::hostfs::Target>; 2],
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> Result<Ended, Refusal> {
    let at = |phase: Phase| move |r: Refusal| r.in_phase(phase);
    let overrides = resolve_overrides(opts.resolve).map_err(at(Phase::Verify))?;
    let v = verify(opts, notes, ctx).map_err(at(Phase::Verify))?;
    ctx.env_names = super::env_names(&v.compiled.ir);
    let own: Vec<std::path::PathBuf> = report
        .into_iter()
        .chain(kept.iter().flatten())
        .chain(ctx.attest.as_ref())
        .map(|t| t.dir.path().to_path_buf())
        .collect();
    let own: Vec<&Path> = own.iter().map(std::path::PathBuf::as_path).collect();
    super::reset::reset(&v.compiled.ir, opts, &own, ctx).map_err(at(Phase::Prepare))?;
    let mut checked =
        host_check(opts, &v, command, report, kept, ctx).map_err(at(Phase::HostCheck))?;
    let ir = &v.compiled.ir;
    let profile = v
        .recompiled
        .get(crate::backend::SEATBELT)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let has_proc_entry = |p: &str| Path::new(p).exists();
    let cwd = std::env::current_dir().ok();
    // The command starts in the caller's directory only where the seal
    // shows it: inside a hidden root it gets an empty stand-in or `/`
    // (the namespaces mode), or starts there unable to read its files
    // (the Landlock mode, which hides no names).
    if let Some((at, by)) = cwd
        .as_deref()
        .and_then(|c| super::help::hidden_by(ir, c).map(|by| (c, by)))
    {
        let there = if ir.exec.isolation == crate::spec::Isolation::Landlock {
            "the command starts there but can read no file in it (only its names)"
        } else {
            "the command does not see it, and starts in an empty stand-in of it or in `/`"
        };
        notes.note(Note::Warning(format!(
            "the working directory {} is hidden by the seal ({by}): {there}; change to a directory the seal shows first",
            quote(&at.display().to_string())
        )));
    }
    ctx.limits = report::limits(ir);
    let mut rt = crate::exec::Runtime {
        exe: &checked.exe,
        bridge_dir: Path::new("<bridge-dir>"), // made later, once nothing can fail
        profile,
        user: checked.user,
        inside: None,
        has_proc_entry: &has_proc_entry,
        cwd: cwd.as_deref(),
    };
    let env = |n: &str| std::env::var_os(n);
    // A dry run starts nothing, so a secret not set does not stop it: it
    // plans with a stand-in value (never shown) and says which are unset.
    let unset: Vec<&String> = ir
        .env
        .secrets
        .iter()
        .chain(&ir.env.held)
        .filter(|n| opts.dry_run && env(n).is_none())
        .collect();
    let planned = |n: &str| env(n).or_else(|| opts.dry_run.then(|| OsString::from("<unset>")));
    let mut plan = crate::exec::plan(ir, &checked.command, &planned, &rt).map_err(|d| {
        let mut r = Refusal::new(REFUSED, format!("{}, so nothing was started", d.message));
        r.diagnostics = Some(Box::new((d.into(), v.display.clone())));
        r.in_phase(Phase::HostCheck)
    })?;
    ctx.layers = dry_run_layers(ir, &plan);
    if opts.dry_run {
        return Ok(Ended::DryRun(serde_json::json!({
            "argv": std::iter::once(plan.program.clone())
                .chain(plan.args.iter().map(|a| a.to_string_lossy().into_owned()))
                .collect::<Vec<_>>(),
            "env": plan.env.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            "layers": ctx.layers.clone(),
            "secrets": plan.secrets,
            "secrets_unset": unset,
            "timeout": plan.timeout.map(|t| t.as_secs()),
            "user": plan.user.map(|u| format!("{}:{}", u.uid, u.gid)),
            "codex_config": codex_target(ir),
            "stand_ins": ir.stand_ins().into_iter().map(|(at, _)| at).collect::<Vec<_>>(),
            // Emptied before a real run; `--dry-run` empties nothing.
            "reset": ir.exec.reset,
            "outputs": ir.exec.outputs.iter().map(|o| &o.path).collect::<Vec<_>>(),
        })));
    }
    let prepared = prepare(opts, &v, &checked, &plan, notes, ctx).map_err(at(Phase::Prepare))?;
    if let Some(d) = &prepared.own_uid {
        rt.user = Some(d.ids);
        rt.inside = checked.user;
        plan = crate::exec::plan(ir, &checked.command, &env, &rt).map_err(|d| {
            Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!(
                    "the plan for the run's own user cannot be made: {}, so nothing was started",
                    d.message
                ),
            )
            .in_phase(Phase::Prepare)
        })?;
    }
    ctx.user = rt.user.map(|u| format!("{}:{}", u.uid, u.gid));
    // The report as it stands before the command starts (`unfinished`),
    // which the run's end replaces.
    if let Some(t) = report {
        report::write(t, &super::unfinished(ctx, command)).map_err(|e| {
            Refusal::new(
                REFUSED,
                format!("cannot write the run report: {e}, so nothing was started"),
            )
            .in_phase(Phase::Prepare)
        })?;
    }
    let staged = super::kept::stage(kept, &mut checked.kept, &mut checked.deliveries)?;
    let idmapped = ctx.write_roots == Some("idmapped");
    // Stage 4, **confine and wait**: chowned roots are handed over first.
    if let (Some(ids), false) = (checked.user, idmapped) {
        // A uid of the run's own where the roots are chowned (the Landlock mode).
        let ids = prepared.own_uid.as_ref().map_or(ids, |d| d.ids);
        if let Err(e) = crate::exec::user::hand_over(&prepared.roots, ids, opts.walk_limit) {
            hand_back(opts, &checked, prepared, notes, ctx);
            return Err(Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!("{e}, so nothing was started"),
            )
            .in_phase(Phase::Prepare));
        }
    }
    let code = super::handed::confine_and_wait(
        ir,
        plan,
        rt,
        &checked,
        overrides,
        (prepared.installs, &prepared.codex_config),
        notes,
        ctx,
    );
    hand_back(opts, &checked, prepared, notes, ctx);
    let code = code.map_err(at(Phase::SandboxStart))?;
    Ok(Ended::Status(super::kept::commit(staged, code, notes, ctx)))
}

/// `--resolve NAME=ADDR` (tests only).
fn resolve_overrides(
    resolve: &[String],
) -> Result<std::collections::BTreeMap<String, std::net::IpAddr>, Refusal> {
    let mut overrides = std::collections::BTreeMap::new();
    for r in resolve {
        let (name, ip) = crate::proxy::parse_resolve(r)
            .map_err(|e| Refusal::new(REFUSED, format!("`--resolve`: {e}")))?;
        overrides.insert(name, ip);
    }
    Ok(overrides)
}

/// Stage 1, **verify**: the record recompiles to its artifacts (exactly as
/// `sealc verify`), and is the `--expect`ed seal.
pub(super) fn verify(
    opts: &Options<'_>,
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> Result<Verified, Refusal> {
    let display = opts.record.display().to_string();
    let bytes = crate::hostfs::read_path(opts.record, crate::hostfs::MAX_RECORD).map_err(|e| {
        Refusal::new(
            REFUSED,
            format!("cannot read the record {}: {e}", quote(&display)),
        )
    })?;
    if let Some((signers, sig)) = opts.signers {
        use super::signed::NotSigned;
        match super::signed::check(&bytes, opts.record, sig, signers) {
            Ok(signed) => {
                notes.note(Note::Said(format!(
                    "the seal is signed by {}",
                    signed.describe()
                )));
                ctx.signed = Some(signed);
            }
            Err(NotSigned::Unreadable(why) | NotSigned::Refused(why)) => {
                return Err(Refusal::new(
                    REFUSED,
                    format!("{display} is not signed by a trusted key ({why}), so nothing was started"),
                )
                .help("sign the seal you reviewed with `sealc sign RECORD --key KEY`, or give the allowed signers that trust its key"));
            }
        }
    }
    ctx.record_digest = crate::digest::sha256(&bytes);
    let outcome = crate::verify::verify(&bytes, opts.files);
    if let (Some(want), Some(rec)) = (opts.expect, &outcome.record) {
        if rec.binding != want {
            return Err(Refusal::new(
                REFUSED,
                format!(
                    "{display} binds {}, not the expected {want}, so nothing was started",
                    rec.binding
                ),
            )
            .help(
                "run the seal you reviewed, or review this one and pass its binding to `--expect`",
            ));
        }
    }
    let verdict = outcome.report.verdict();
    let (Some(rec), Some(recompiled), crate::verify::Verdict::Verified) =
        (outcome.record, outcome.recompiled, verdict)
    else {
        notes.note(Note::Verification(outcome.report.to_text()));
        return Err(Refusal::new(
            REFUSED,
            format!("{display} does not verify, so nothing was started"),
        ));
    };
    ctx.binding = Some(rec.binding.clone());
    let compiled = crate::compile_with_facts(&rec.spec.file, &rec.spec.text, rec.facts.clone())
        .map_err(|_| {
            Refusal::new(
                REFUSED,
                format!("{display} does not recompile, so nothing was started"),
            )
        })?;
    Ok(Verified {
        display,
        rec,
        recompiled,
        compiled,
    })
}
/// What the host check hands on.
pub(super) struct Checked {
    /// The command, with the launcher's name resolved to the recorded one.
    pub command: Vec<OsString>,
    pub ways: [crate::exec::stdio::Way; 3],
    pub deliveries: [crate::exec::stdio::Delivery; 2],
    /// Started by root (Linux): the agent's user.
    pub user: Option<crate::exec::Ids>,
    /// sealc's own binary.
    pub exe: PathBuf,
    /// `--stdout`, `--stderr`: the staged files the command's output goes
    /// to instead of sealc's own.
    pub kept: [Option<std::fs::File>; 2],
}

/// Stage 2, **host check**: the host still matches the recorded facts; the
/// seal is for this platform; stdio, the user, sealc's own binary, the
/// record's place and the report's are ones the agent cannot reach.
fn host_check(
    opts: &Options<'_>,
    v: &Verified,
    command: &[OsString],
    report: Option<&crate::hostfs::Target>,
    kept: &[Option<crate::hostfs::Target>; 2],
    ctx: &mut Ctx,
) -> Result<Checked, Refusal> {
    let (ir, rec, display) = (&v.compiled.ir, &v.rec, &v.display);
    if let Some(d) = wrong_platform(ir.platform).filter(|_| !opts.dry_run) {
        return Err(
            Refusal::new(REFUSED, format!("{d}, so nothing was started")).help(format!(
                "compile the spec for this host (`sealc compile SPEC --platform {}`) and run that seal",
                crate::spec::Platform::host().as_str()
            )),
        );
    }
    let drift = crate::exec::host_drift(rec, &RealHost);
    if !drift.is_empty() {
        let mut r = Refusal::new(
            REFUSED,
            format!(
                "this host no longer matches the facts {display} was compiled against, so nothing was started"
            ),
        );
        r.drift = drift.iter().map(|d| format!("live {d}")).collect();
        r.help = drift_help(&drift, rec, opts.record);
        return Err(r);
    }
    // The host's /proc shows every process of the host: Landlock is what
    // keeps the sandbox's processes from opening another's `root`, `cwd`,
    // `fd` or `environ` there (it refuses them as it refuses ptrace of a
    // process outside its domain). Without it, nothing starts.
    let landlock_mode = crate::exec::Mechanism::of(ir) == crate::exec::Mechanism::Landlock;
    ctx.landlock_mode = landlock_mode;
    if landlock_mode {
        let (have, needed) = (
            crate::exec::landlock_abi(),
            i32::from(crate::backend::landlock::abi_needed(ir)),
        );
        if have < needed {
            let what = if needed >= 4 {
                "Landlock ABI 4 or newer (TCP rules: without them the command would reach the whole network)"
            } else {
                "Landlock ABI 3 or newer (before it, truncation outside the write roots is not Landlock's to refuse)"
            };
            return Err(Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!(
                    "this seal runs with `exec.isolation = \"landlock\"`, which needs {what}, and this kernel has ABI {have}, so nothing was started"
                ),
            )
            .help("run it on a kernel with that Landlock ABI (3: Linux 6.2, 4: Linux 6.7; `landlock` in the `lsm=` list), or compile it with the namespaces mode where this host can make user namespaces; `sealc doctor` says what this host has"));
        }
    }
    if ir.platform == crate::spec::Platform::Linux && ir.exec.proc == crate::spec::ProcMode::Host {
        if crate::exec::landlock_abi() < 1 {
            return Err(Refusal::new(
                crate::exec::SANDBOX_FAILED,
                "this seal binds the host's /proc (`exec.proc = \"host\"`), and this kernel has no Landlock to keep the agent out of other processes' entries there (their root, working directory, descriptors and environment), so nothing was started",
            )
            .help("run it on a kernel with Landlock (Linux 5.13 or newer, `landlock` in the `lsm=` list), or compile it with `exec.proc = \"none\"`; `sealc doctor` says what this host has"));
        }
        // And sealc's own entries stay closed to processes of its user.
        if !opts.dry_run {
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
                .map_err(|e| {
                    Refusal::new(
                        crate::exec::SANDBOX_FAILED,
                        format!("cannot make sealc non-dumpable ({e}), so nothing was started"),
                    )
                })?;
        }
    }
    // `codex` (the launcher's name) runs the recorded, checked launcher.
    let command = crate::exec::resolve_launcher(ir, command);
    let ways = crate::exec::stdio::ways().map_err(|e| {
        Refusal::new(REFUSED, e.to_string())
            .help("give the command a file, a pipe or a terminal, e.g. `< /dev/null`")
    })?;
    // The command's output to a terminal goes through the terminal filter.
    let deliveries = crate::exec::stdio::deliveries(opts.raw_terminal);
    let user =
        exec_user(ir.platform, opts.user).map_err(|e| Refusal::new(REFUSED, e.to_string()))?;
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sealc"));
    // sealc runs inside as pid 1 and before the command is confined: a copy
    // the agent can replace would run unconfined in the next run.
    if let Some(w) = ir.roots.iter().find(|r| {
        r.kind == crate::ir::RootKind::Write
            && r.real
                .as_deref()
                .is_some_and(|real| crate::ir::is_within(&exe.to_string_lossy(), real))
    }) {
        return Err(Refusal::new(
            REFUSED,
            format!(
                "sealc's own binary {} is inside the write root {}, where the agent could replace it for the next run, so nothing was started",
                quote(&exe.display().to_string()),
                quote(&w.origin)
            ),
        )
        .help("install sealc outside every write root (`cargo install --locked --path .`)"));
    }
    // The record is the seal: one inside its own write roots is one the
    // agent can rewrite during this run, pinned or not, for any later run
    // (a fresh compile verifies as well as the reviewed one, and after the
    // run it is handed back to the owner like any file the agent made). So
    // it never runs. A record whose place cannot be told (a pipe, a
    // deleted file) runs only pinned.
    let placed = std::fs::metadata(opts.record)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .and_then(|_| std::fs::canonicalize(opts.record).ok());
    match placed {
        Some(real) => {
            if let Some(w) = ir.write_root_holding(&real.to_string_lossy()) {
                return Err(Refusal::new(
                    REFUSED,
                    format!(
                        "the record {} is inside the write root {} of its own seal, where the agent could rewrite it for any later run, so nothing was started",
                        quote(display),
                        quote(&w)
                    ),
                )
                .help("compile with `--out` outside every write root (and keep it outside the write roots of your other seals too)"));
            }
        }
        None if opts.expect.is_none() && opts.signers.is_none() => {
            return Err(Refusal::new(
                REFUSED,
                format!(
                    "{} is not a regular file whose place can be told (a pipe, a deleted file), so whether the agent could have written it cannot be checked, and nothing was started",
                    quote(display)
                ),
            )
            .help("give the path of the `seal.json` itself, or pin the seal you reviewed with `--expect sha256:<binding>`"));
        }
        None => {}
    }
    // The report is evidence: one the agent could touch before or after
    // the run (a planted link at its name, a rewrite) proves nothing.
    if let Some(t) = report {
        if let Some(w) = crate::exec::write_root_reaching(ir, &t.dir, None) {
            ctx.report_refused = true;
            return Err(Refusal::new(
                REFUSED,
                format!(
                    "the run report {} would be inside the write root {}, where the agent could replace it or plant a link at its name, so nothing was started (and no report written)",
                    quote(&t.path().display().to_string()),
                    quote(w)
                ),
            )
            .help("give `--report` a path outside every write root of the seal"));
        }
    }
    super::kept::check(ir, kept)?;
    if let Err(r) = super::attested::check(ir, opts, ctx.attest.as_ref()) {
        // Nothing is written where the agent could reach.
        ctx.attest = None;
        return Err(r);
    }
    Ok(Checked {
        command,
        ways,
        deliveries,
        user,
        exe,
        kept: [None, None],
    })
}

/// What the prepare stage made for the run.
pub(super) struct Prepared {
    /// The write roots' real paths.
    pub roots: Vec<String>,
    /// Started by root: who owned each write root, to hand it back.
    pub owners: Option<Vec<crate::exec::user::Owner>>,
    /// The run's own uid, where the write roots are idmapped.
    pub own_uid: Option<crate::exec::user::Dynamic>,
    /// A Codex seal: the config is installed in its home.
    pub installs: bool,
    pub codex_config: Vec<u8>,
}

/// Stage 3, **prepare**: the write roots and stand-ins made, the Codex home,
/// the agent's user and how it writes the write roots.
fn prepare(
    opts: &Options<'_>,
    v: &Verified,
    checked: &Checked,
    plan: &crate::exec::Plan,
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> Result<Prepared, Refusal> {
    let ir = &v.compiled.ir;
    let user = checked.user;
    // What is protected has no second name the agent can write it through.
    if let Err(e) = crate::absent::check_protected(ir) {
        let mut r = Refusal::new(
            REFUSED,
            "a protected path could be written or run from a writable place all the same, so nothing was started",
        )
        .help("remove the other name (`find WRITE_ROOT -samefile PATH` finds a hard link), or protect where the link leads too, then run again");
        r.drift = vec![format!(
            "protect     {}",
            crate::diag::visible(&e.to_string())
        )];
        return Err(r);
    }
    // Write roots absent when compiled: made now, where the seal mounts them.
    // Taken away again (`unmake_unstarted`) if the run is refused before
    // the sandbox has started.
    ctx.made_roots = crate::absent::make_write_roots(ir).map_err(|e| {
        Refusal::new(
            crate::exec::SANDBOX_FAILED,
            format!("{e}, so nothing was started"),
        )
    })?;
    // Protected paths absent when compiled: an empty stand-in each, for
    // the run (read-only inside), so the agent cannot make them first.
    match crate::absent::make_stand_ins(ir) {
        Ok(s) => ctx.stand_ins = Some(s),
        Err(e) => {
            return Err(Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!("{e}, so nothing was started"),
            )
            .help("look at what is there (a protected path is kept read-only for the run), and remove or move it"));
        }
    }
    let roots: Vec<String> = ir
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
            return Err(
                Refusal::new(REFUSED, format!("{e}, so nothing was started")).help(
                    "let that user search every directory above the write roots (`chmod o+x`), or pick another with `--user`",
                ),
            );
        }
    }
    // The verified Codex config goes into the seal's CODEX_HOME (in a write
    // root, so before the roots are handed over).
    let codex_config = v
        .recompiled
        .get(crate::backend::CODEX)
        .cloned()
        .unwrap_or_default();
    let installs = codex_target(ir).is_some();
    if installs {
        prepare_codex_home(ir, &codex_config, opts.force, notes, ctx)?;
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
                notes.note(Note::Warning(format!(
                    "PATH entry `{dir}` cannot be searched by the agent's user ({}:{}): commands there will not run",
                    ids.uid, ids.gid
                )));
            }
        }
    }
    // Who owned each write root, to hand it back after the run: read
    // while no other run of root's has handed it over (shared with the
    // idmapped ones, which change no owner).
    if user.is_some() {
        ctx.holds = Some(hold(&roots, false, notes)?);
    }
    let owners = user
        .map(|_| crate::exec::user::owners(&roots))
        .transpose()
        .map_err(|e| {
            Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!("{e}, so nothing was started"),
            )
        })?;
    let mut prepared = Prepared {
        roots,
        owners,
        own_uid: None,
        installs,
        codex_config,
    };
    if let (Some(ids), Some(owners)) = (user, &prepared.owners) {
        prepared.own_uid = hand_over_how(opts, ids, owners, &prepared.roots, notes, ctx)?;
        if ctx.write_roots == Some("chowned") {
            // Handed over by chown: this run holds the roots alone, and
            // reads their owners again under that hold (a run that took
            // them in between has handed them back by then).
            ctx.holds = None;
            ctx.holds = Some(hold(&prepared.roots, true, notes)?);
            prepared.owners = Some(crate::exec::user::owners(&prepared.roots).map_err(|e| {
                Refusal::new(
                    crate::exec::SANDBOX_FAILED,
                    format!("{e}, so nothing was started"),
                )
            })?);
        }
        if let Some(owners) = &prepared.owners {
            owned_already(owners, ids, notes);
        }
    }
    Ok(prepared)
}

/// Lock the write roots, telling of each that another run holds.
fn hold(
    roots: &[String],
    exclusive: bool,
    notes: &mut dyn Notes,
) -> Result<crate::exec::user::Holds, Refusal> {
    crate::exec::user::hold(roots, exclusive, &mut |root| {
        notes.note(Note::Said(format!(
            "waiting for another sealc run over write root {} to end (one of them hands it over by chown)",
            quote(root)
        )))
    })
    .map_err(|e| {
        Refusal::new(
            crate::exec::SANDBOX_FAILED,
            format!("{e}, so nothing was started"),
        )
    })
}

/// A root the agent's user owns already is one an earlier run did not hand
/// back (sealc killed between hand-over and hand-back): it stays the
/// agent's after this run too, so say so.
fn owned_already(
    owners: &[crate::exec::user::Owner],
    ids: crate::exec::Ids,
    notes: &mut dyn Notes,
) {
    for o in owners.iter().filter(|o| o.ids.uid == ids.uid) {
        notes.note(Note::Warning(format!(
            "write root {} is owned by the agent's user ({}:{}) already (an earlier run that did not end?): it stays the agent's after this run; chown it back to its owner",
            quote(&o.root),
            ids.uid,
            ids.gid
        )));
    }
}

/// Started by root: how the agent's user writes the write roots. Idmapped
/// where the kernel and their filesystems allow it (nothing on disk changes
/// hands), with a uid of the run's own when no `--user` is given (no host
/// process shares it, and idmapped roots are never paired with a shared
/// default user); else handed over by chown for the run and back after it.
fn hand_over_how(
    opts: &Options<'_>,
    ids: crate::exec::Ids,
    owners: &[crate::exec::user::Owner],
    roots: &[String],
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> Result<Option<crate::exec::user::Dynamic>, Refusal> {
    if ctx.landlock_mode {
        // No mount namespace to idmap in: the roots are chowned for the
        // run, by design of the mode, to a uid of the run's own (which
        // owns nothing else on the host, and shares nothing with another
        // run or a host process), or to `--user`.
        let own = match opts.user {
            Some(_) => None,
            None => {
                let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
                let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
                let d = crate::exec::user::allocate(&passwd, &group).map_err(|e| {
                    Refusal::new(
                        crate::exec::SANDBOX_FAILED,
                        format!("{e}, so nothing was started"),
                    )
                })?;
                if let Some(e) = roots
                    .iter()
                    .find_map(|r| crate::exec::user::reachable(r, d.ids).err())
                {
                    return Err(Refusal::new(REFUSED, format!("{e}, so nothing was started"))
                        .help("let every user search each directory above the write roots (`chmod o+x`)"));
                }
                Some(d)
            }
        };
        let agent = own.as_ref().map_or(ids, |d| d.ids);
        notes.note(Note::Said(format!(
            "the write roots are handed to the agent's user ({}:{}) by chown for the run, and back after it (`exec.isolation = \"landlock\"` has no mount to idmap)",
            agent.uid, agent.gid
        )));
        ctx.write_roots = Some("chowned");
        return Ok(own);
    }
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
    let why = match prepared {
        Ok((own, trees, Ok(cleared))) => {
            for c in cleared.iter().take(20) {
                notes.note(Note::Warning(format!(
                    "cleared {c} before the run (the agent may rewrite any file in a write root)"
                )));
            }
            if cleared.len() > 20 {
                notes.note(Note::Warning(format!(
                    "and {} more set-id bits or file capabilities cleared",
                    cleared.len() - 20
                )));
            }
            ctx.trees = trees;
            ctx.write_roots = Some("idmapped");
            return Ok(own);
        }
        // What the agent left (a tree too deep to walk) must not choose
        // the weaker hand-over: nothing starts.
        Ok((_, _, Err(Unprepared::Failed(why)))) => {
            return Err(Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!("{why}, so nothing was started"),
            )
            .help(
                "look at what is there (a run's agent may have left it), and remove or move it",
            ));
        }
        Ok((_, _, Err(Unprepared::LinkOut(why)))) => why,
        // Refused by the kernel: no `CAP_SYS_ADMIN` in the host's user
        // namespace (a container), or a filter.
        Err(why) if why.os_error().and_then(std::io::Error::raw_os_error) == Some(libc::EPERM) => {
            format!("{why}; a container without `CAP_SYS_ADMIN` makes none, and chowned runs over one root take turns")
        }
        Err(why) => why.to_string(),
    };
    notes.note(Note::Warning(format!(
        "the write roots cannot be idmapped here ({why}): they are handed to the agent's user ({}:{}) by chown for the run, and back after it",
        ids.uid, ids.gid
    )));
    ctx.write_roots = Some("chowned");
    Ok(None)
}

/// Stage 5, **hand back**: once nothing of the sandbox is left, also when
/// the command failed or was stopped, each write root goes back to its
/// owner (chowned), or loses any set-id bit the run gave a file
/// (idmapped).
fn hand_back(
    opts: &Options<'_>,
    checked: &Checked,
    prepared: Prepared,
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) {
    let own = prepared.own_uid.as_ref().map(|d| d.ids);
    let (Some(ids), Some(owners)) = (checked.user, prepared.owners) else {
        return;
    };
    // Chowned to a uid of the run's own (the Landlock mode): back from it.
    let ids = match ctx.write_roots {
        Some("chowned") => own.unwrap_or(ids),
        _ => ids,
    };
    let idmapped = ctx.write_roots == Some("idmapped");
    let survivors = ctx.result.as_ref().is_some_and(|r| r.survivors);
    if survivors && !idmapped {
        ctx.hand_back.push(
            "a process of the sandbox was still there, so the write roots were left to the agent's user".into(),
        );
    } else if idmapped {
        if survivors {
            notes.note(Note::Warning(
                "a process of the sandbox was still there after the run: it may still write the write roots".into(),
            ));
        }
        ctx.trees.clear();
        ctx.hand_back = crate::exec::user::sweep_set_id(&owners, opts.walk_limit);
    } else {
        ctx.hand_back = crate::exec::user::hand_back(&owners, ids, opts.walk_limit);
    }
    // What could not be handed back is told after the run's own error, if
    // any (`run::exec`): what went wrong first comes first.
    // Handed back: the next run over these roots may read their owners.
    ctx.holds = None;
}
