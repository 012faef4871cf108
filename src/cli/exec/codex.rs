//! The Codex seal's part of a run: the Codex home made for it, checked and
//! finished after it, and the config compared with the record's.

use super::*;

/// Once nothing of the sandbox is left: what the run left in its Codex
/// home is listed, kept for review beside the report (`FILE.codex-home`)
/// or discarded, and the home removed, so no run starts with another's.
pub(super) fn finish_codex_home(
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

/// Where `sealc exec` installs the Codex config: a Codex seal's
/// `CODEX_HOME/config.toml`.
pub(super) fn codex_target(ir: &crate::ir::Ir) -> Option<String> {
    let home = ir.codex.home.as_ref().filter(|_| ir.codex.sealed)?;
    Some(format!("{home}/{}", crate::exec::codex_home::CONFIG))
}

/// After the command: the drift check of the Codex config (what
/// `sealc verify --codex-config` does). Drift is reported and gives
/// [`crate::exec::CODEX_CONFIG_DRIFT`], whatever the command's status.
pub(super) fn codex_after(
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
