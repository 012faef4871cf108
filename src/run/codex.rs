//! The Codex seal's part of a run: the Codex home made for it, checked and
//! finished after it, and the config compared with the record's.

use super::*;

use crate::facts::RealHost;

/// Once nothing of the sandbox is left: what the run left in its Codex
/// home is listed, kept for review beside the report (`FILE.codex-home`)
/// or discarded, and the home removed, so no run starts with another's.
pub(super) fn finish_codex_home(
    ctx: &mut Ctx,
    report: Option<&crate::hostfs::Target>,
    notes: &mut dyn Notes,
) {
    let Some(home) = ctx.codex_home.take() else {
        return;
    };
    if ctx.result.as_ref().is_some_and(|r| r.survivors) {
        notes.note(Note::Warning(format!(
            "a process of the sandbox was still there after the run, so the Codex home {} was left as it is (the next run refuses it until it is reviewed and removed)",
            quote(&home.path)
        )));
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
            notes.note(Note::Said(format!(
                "the Codex home held {} entries after the run: kept for review in {}, and removed",
                left.entries.len() + left.entries_omitted,
                quote(at)
            )));
        }
        None if asked => {
            notes.note(Note::Said(format!(
                "the Codex home held {} entries after the run: they could not be kept beside the report (below), and were removed",
                left.entries.len() + left.entries_omitted
            )));
        }
        None => {
            notes.note(Note::Said(format!(
                "the Codex home held {} entries after the run: discarded (`--report FILE` keeps them beside the report)",
                left.entries.len() + left.entries_omitted
            )));
        }
    }
    for p in left.problems.iter().take(20) {
        notes.note(Note::Warning(format!(
            "the Codex home: {}",
            crate::diag::visible(p)
        )));
    }
    ctx.codex_left = Some(left);
}

/// Where `sealc exec` installs the Codex config: a Codex seal's
/// `CODEX_HOME/config.toml`.
pub(super) fn codex_target(ir: &crate::ir::Ir) -> Option<String> {
    let home = ir.codex.home.as_ref().filter(|_| ir.codex.sealed)?;
    Some(format!("{home}/{}", crate::exec::codex_home::CONFIG))
}

/// After the command: the drift check of the Codex config (what
/// `sealc verify --codex-config` does). Drift is reported and gives
/// [`crate::exec::CODEX_CONFIG_DRIFT`], whatever the command's status,
/// with what changed (`subject: detail`, one per check that drifted), for
/// the run report.
pub(super) fn codex_after(
    ir: &crate::ir::Ir,
    home: &crate::exec::codex_home::Home,
    generated: &[u8],
    code: i32,
    notes: &mut dyn Notes,
) -> (i32, Vec<String>) {
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
        Err(why) => report.push(
            "codex config",
            crate::verify::Status::Drift,
            why.to_string(),
        ),
    }
    if report.verdict() == crate::verify::Verdict::Verified {
        return (code, Vec::new());
    }
    let changes = report
        .checks
        .iter()
        .filter(|c| c.status == crate::verify::Status::Drift)
        .map(|c| format!("{}: {}", c.subject, c.detail))
        .collect();
    notes.note(Note::Verification(report.to_text()));
    notes.note(Note::Error {
        message: format!(
            "the Codex config in the seal's CODEX_HOME drifted during the run (the command exited with {code})"
        ),
        help: vec!["the agent or Codex changed its own config during the run: a Codex started meanwhile may have used the changed one; review the run (the next run gets a fresh home and the verified config)".into()],
    });
    (crate::exec::CODEX_CONFIG_DRIFT, changes)
}

/// The prepare stage's part for a Codex seal: a fresh Codex home with the
/// verified config (and a copy of the credentials), refused when an earlier
/// run left one (unless `--force`).
pub(super) fn prepare_codex_home(
    ir: &crate::ir::Ir,
    codex_config: &[u8],
    force: bool,
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> Result<(), Refusal> {
    use crate::exec::codex_home::{prepare, read_credentials, Refused};
    let held: Vec<(u64, u64)> = ctx
        .reset_locks
        .iter()
        .filter_map(|d| rustix::fs::fstat(d.fd()).ok())
        .map(|st| (st.st_dev, st.st_ino))
        .collect();
    let made = read_credentials(ir)
        .and_then(|creds| prepare(ir, codex_config, creds.as_ref(), force, &held));
    match made {
        Ok(home) => {
            if home.discarded > 0 {
                notes.note(Note::Warning(format!(
                    "discarded what an earlier run left in the Codex home {} ({} entries), as `--force` asks",
                    quote(&home.path),
                    home.discarded
                )));
            }
            ctx.codex_home = Some(home);
            Ok(())
        }
        Err(Refused::Left(why)) => {
            let mut r = Refusal::new(
                REFUSED,
                "the seal's Codex home is made fresh for every run, and one is there already, so nothing was started",
            )
            .help("review what is there (an earlier run's instructions, skills or rules would steer this run's Codex), then remove it or run again with `--force` to discard it");
            r.drift = vec![format!("codex home  {why}")];
            Err(r)
        }
        Err(Refused::Io(why)) => Err(Refusal::new(
            REFUSED,
            format!("{why}, so nothing was started"),
        )),
    }
}
