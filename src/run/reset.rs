//! `exec.reset`: the write roots emptied before each run, so every run of
//! one seal starts from the same state under one binding (a harness's
//! workspace and scratch directory, reset by sealc rather than by glue).
//!
//! After the record verifies and before the host check, each is emptied
//! where it still resolves to its recorded realpath (elsewhere the host
//! check refuses the run): opened from `/` without following a link,
//! locked against every other run that resets it, and emptied by
//! descriptor as [`crate::hostfs::empty_dir`] does (no link followed, no
//! other mount entered, only directories of the root's owner, at most
//! `--walk-limit` entries). The lock is held until the run ends.

use super::*;

use crate::hostfs::Dir;

/// Empty each reset root; what went is counted in `ctx.reset`. `own`
/// names the directories of what sealc itself writes for this run (the
/// report's, the kept output's): a reset root that holds one of them, the
/// record or sealc's own binary is refused before anything is removed
/// (the host check would refuse the run over it anyway, after the reset).
/// A seal for the other platform resets nothing.
pub(super) fn reset(
    ir: &crate::ir::Ir,
    opts: &Options<'_>,
    own: &[&Path],
    ctx: &mut Ctx,
) -> Result<(), Refusal> {
    if opts.dry_run || super::help::wrong_platform(ir.platform).is_some() {
        return Ok(());
    }
    let mut kept: Vec<(&str, std::path::PathBuf)> = Vec::new();
    if let Ok(r) = std::fs::canonicalize(opts.record) {
        kept.push(("the record", r));
    }
    if let Ok(e) = std::env::current_exe().and_then(std::fs::canonicalize) {
        kept.push(("sealc's own binary", e));
    }
    kept.extend(
        own.iter()
            .map(|d| ("what sealc writes for this run", d.to_path_buf())),
    );
    for path in &ir.exec.reset {
        let Some(root) = ir.roots.iter().find(|r| {
            r.kind == crate::ir::RootKind::Write
                && r.protect.is_none()
                && crate::facts::normalize(&r.path) == *path
        }) else {
            continue;
        };
        let Some(real) = root.real.as_deref() else {
            continue;
        };
        // Not where the record says: the host check refuses the run.
        match crate::hostfs::resolve(Path::new(path)) {
            Ok((now, rest)) if rest.is_empty() && now == Path::new(real) => {}
            _ => continue,
        }
        let fail = |what: String| {
            Refusal::new(
                REFUSED,
                format!(
                    "cannot reset the write root {} (`exec.reset`): {what}, so nothing was started",
                    quote(path)
                ),
            )
        };
        if let Some((what, at)) = kept
            .iter()
            .find(|(_, at)| crate::paths::is_within(&at.to_string_lossy(), real))
        {
            return Err(fail(format!(
                "it holds {what}, {}, which it would remove",
                quote(&at.display().to_string())
            ))
            .help("keep the seal, sealc, `--report`, `--stdout` and `--stderr` outside every write root the seal resets"));
        }
        let dir = match Dir::open(Path::new(real)) {
            Ok(d) => d,
            // Made by the run (a write root absent when compiled) and not
            // made yet: nothing to empty.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && root.made => continue,
            Err(e) => return Err(fail(e.to_string())),
        };
        // Opened from `/` one component at a time, no link followed, along
        // the path its links resolved to just before: a link swapped into
        // the realpath since (by whoever owns a directory on it) would
        // resolve elsewhere, and nothing there is emptied.
        if dir.path() != Path::new(real) {
            return Err(fail(format!(
                "it no longer resolves to {} (a link on the way changed)",
                quote(real)
            )));
        }
        // A Codex home in it that an earlier run left (a killed run): the
        // reset would discard what the Codex stage keeps for review.
        if let Some(home) = codex_home_left(ir, real).filter(|_| !opts.force) {
            return Err(fail(format!(
                "it holds the Codex home {}, which an earlier run left",
                quote(&home)
            ))
            .help("review what is there (an earlier run's instructions, skills or rules), then remove it or run again with `--force` to discard it"));
        }
        match rustix::fs::flock(
            dir.fd(),
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        ) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(fail("another run resets it now".into())
                    .help("give each concurrent run a seal of its own (a run directory per run)"))
            }
            Err(e) => return Err(fail(format!("cannot lock it: {e}"))),
        }
        let gone = crate::hostfs::empty_dir(dir.fd(), opts.walk_limit as usize)
            .map_err(|e| fail(e.to_string()))?;
        ctx.reset.insert(path.clone(), gone as u64);
        ctx.reset_locks.push(dir);
    }
    Ok(())
}

/// The seal's Codex home, when it lies in the reset root `real` and
/// something is there (by its path, no link followed).
fn codex_home_left(ir: &crate::ir::Ir, real: &str) -> Option<String> {
    ir.roots
        .iter()
        .filter(|r| {
            r.protect.as_ref().map(|p| p.standing) == Some(crate::ir::Standing::CodexConfig)
        })
        .filter_map(|r| r.real.as_deref())
        .filter_map(|config| config.strip_suffix("/config.toml"))
        .find(|home| crate::paths::is_within(home, real) && std::fs::symlink_metadata(home).is_ok())
        .map(str::to_string)
}
