//! The stages of `sealc exec` after the report's directory is open: verify
//! the record, check the host, prepare the plan and the run's own state
//! (write roots, stand-ins, the Codex home), start the sandbox and wait.

use super::*;

/// `sealc exec`: verify exactly as `sealc verify` does, then run.
pub(super) fn exec_run(
    seal: &super::super::SealArgs,
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
