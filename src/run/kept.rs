//! `--stdout FILE`, `--stderr FILE`: the command's output kept in files of
//! the caller's choosing, as safely as the report. Each file's directory is
//! opened before anything runs ([`open`]); the file is made under a random
//! name beside its own, never through a link, mode 0600 ([`stage`]), and
//! renamed into place when the run ends ([`commit`]), or removed when the
//! command never started.

use super::*;

use crate::hostfs::{Staged, Target};

const FLAGS: [&str; 2] = ["--stdout", "--stderr"];

/// Open where each stream is kept: refused when the place cannot be
/// written, or names a file this run already writes (the other stream's,
/// or the report's).
pub(super) fn open(
    opts: &Options<'_>,
    report: Option<&Target>,
    notes: &mut dyn Notes,
) -> Result<[Option<Target>; 2], Refusal> {
    let mut kept: [Option<Target>; 2] = [None, None];
    for (i, path) in opts.keep.iter().enumerate() {
        let Some(path) = path.filter(|_| !opts.dry_run) else {
            continue;
        };
        let flag = FLAGS[i];
        let t = Target::open(path).map_err(|e| {
            Refusal::new(
                REFUSED,
                format!(
                    "cannot keep the command's output at {} (`{flag}`): {e}, so nothing was started",
                    quote(&path.display().to_string())
                ),
            )
        })?;
        for w in t.dir.warnings() {
            notes.note(Note::Warning(format!("`{flag}`: {w}")));
        }
        if let Some(same) = kept
            .iter()
            .flatten()
            .chain(report)
            .find(|o| o.same_file(&t))
        {
            return Err(Refusal::new(
                REFUSED,
                format!(
                    "`{flag}` names {}, which is already written by this run, so nothing was started",
                    quote(&same.path().display().to_string())
                ),
            )
            .help("give `--stdout`, `--stderr` and `--report` a file each"));
        }
        kept[i] = Some(t);
    }
    Ok(kept)
}

/// The host check's part: the kept output is evidence as the report is,
/// so it is never kept where the agent could replace it or plant a link.
pub(super) fn check(ir: &crate::ir::Ir, kept: &[Option<Target>; 2]) -> Result<(), Refusal> {
    for (t, flag) in kept.iter().zip(FLAGS) {
        let Some(t) = t else { continue };
        if let Some(w) = crate::exec::write_root_reaching(ir, &t.dir, None) {
            return Err(Refusal::new(
                REFUSED,
                format!(
                    "the command's output would be kept at {} (`{flag}`), inside the write root {}, where the agent could replace it or plant a link at its name, so nothing was started",
                    quote(&t.path().display().to_string()),
                    quote(w)
                ),
            )
            .help(format!("give `{flag}` a path outside every write root of the seal")));
        }
    }
    Ok(())
}

/// One staged file: the stream (0 stdout, 1 stderr), its path, the file.
pub(super) type StagedStream<'a> = (usize, String, Staged<'a>);

/// Just before the command starts: each kept stream's file, made under
/// its temp name (into `files`); the command's output goes there (byte for byte) rather
/// than to sealc's own descriptor.
pub(super) fn stage<'a>(
    kept: &'a [Option<Target>; 2],
    files: &mut [Option<std::fs::File>; 2],
    deliveries: &mut [crate::exec::stdio::Delivery; 2],
) -> Result<Vec<StagedStream<'a>>, Refusal> {
    let mut staged = Vec::new();
    for (i, t) in kept.iter().enumerate() {
        let Some(t) = t else { continue };
        let (file, s) = t
            .dir
            .stage_unsynced(&t.name, b"", 0o600)
            .and_then(|s| Ok((s.try_clone_file()?, s)))
            .map_err(|e| {
                Refusal::new(
                    REFUSED,
                    format!(
                        "cannot keep the command's output at {}: {e}, so nothing was started",
                        quote(&t.path().display().to_string())
                    ),
                )
                .in_phase(Phase::Prepare)
            })?;
        files[i] = Some(file);
        deliveries[i] = crate::exec::stdio::Delivery::Bytes;
        staged.push((i, t.path().display().to_string(), s));
    }
    Ok(staged)
}

/// The run ended: each kept file synced and renamed into place, and named
/// in the report. One that cannot be is an error, and a run that exited 0
/// then exits [`REFUSED`]; `code` otherwise.
pub(super) fn commit(
    staged: Vec<StagedStream<'_>>,
    code: i32,
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> i32 {
    for (i, shown, file) in staged {
        if let Err(e) = file.sync().and_then(|()| file.commit()) {
            notes.note(Note::Error {
                message: format!("cannot keep the command's output at {}: {e}", quote(&shown)),
                help: Vec::new(),
            });
            return if code == 0 { REFUSED } else { code };
        }
        if let Some(r) = ctx.result.as_mut() {
            [&mut r.stdout, &mut r.stderr][i].kept = Some(shown);
        }
    }
    code
}
