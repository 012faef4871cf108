//! The write roots' owners: who had each before a run, handed to the agent's
//! user for it and handed back after, with set-id bits swept.

use super::*;
use crate::failure::Failure;

/// Why [`prepare`] refused.
#[derive(Debug)]
pub enum Unprepared {
    /// A file has a hard link outside the write roots: something the host
    /// made, which the chowned hand-over handles (it leaves such files
    /// alone).
    LinkOut(String),
    /// The walk failed (a tree deeper than the walks go, a root replaced):
    /// nothing may start, since what the agent left must not choose the
    /// weaker chowned hand-over.
    Failed(Failure),
}

/// Before an idmapped run (see [`super::idmap`]), on each write root the
/// agent does not own: clear every regular file's setuid and setgid bits
/// and file capabilities, since the agent may rewrite any file of the
/// owner's and a write through a shared mapping keeps them (what was
/// cleared is returned, to be said); and refuse (`Err`) a root with a file
/// that has a hard link outside the write roots, which the agent could
/// write through. The same walk as [`hand_over`]: no link followed, no
/// other filesystem entered, a write root nested inside walked on its own.
pub fn prepare(owners: &[Owner], agent: Ids, limit: u64) -> Result<Vec<String>, Unprepared> {
    let mut cleared = Vec::new();
    let mut links = std::collections::BTreeMap::new();
    let mut seen = 0;
    let mut links_bytes = 0;
    for o in owners.iter().filter(|o| o.ids != agent) {
        let root = &o.root;
        let fd = open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC).map_err(
            |e| Unprepared::Failed(Failure::os(format!("cannot open write root `{root}`"), e)),
        )?;
        let st = rustix::fs::fstat(&fd)
            .map_err(|e| Unprepared::Failed(Failure::os(format!("cannot inspect `{root}`"), e)))?;
        if (st.st_dev, st.st_ino) != (o.dev, o.ino) {
            return Err(Unprepared::Failed(Failure::new(format!(
                "write root `{root}` is no longer the object inspected (something was put in its place)"
            ))));
        }
        let mut w = Walk::of_root(o, owners, Op::Prepare, &fd);
        w.links = std::mem::take(&mut links);
        w.seen = seen;
        w.limit = limit;
        w.links_bytes = links_bytes;
        let done = w.root(&fd, &st, root);
        if let Err(e) = done {
            let why = match e {
                rustix::io::Errno::LOOP => Failure::new(format!(
                    "a directory deeper than {MAX_DEPTH} levels (or a link put in place of one) is in it"
                )),
                rustix::io::Errno::TOOBIG => Failure::new(format!(
                    "the write roots hold more than {limit} entries, which sealc walks before and after a run started by root (set-id bits, file capabilities, hard links out; `--walk-limit` raises the bound)"
                )),
                e => Failure::from(e),
            };
            return Err(Unprepared::Failed(
                why.within(format!("cannot prepare `{root}`")),
            ));
        }
        cleared.extend(w.cleared);
        links = w.links;
        seen = w.seen;
        links_bytes = w.links_bytes;
    }
    if let Some((_, _, path)) = links.values().find(|(all, seen, _)| seen < all) {
        let what = if path.is_empty() {
            "a file (its path past the walk's bound)".to_string()
        } else {
            format!("{path:?}")
        };
        return Err(Unprepared::LinkOut(format!(
            "{what} has a hard link outside the write roots, which the agent could write through"
        )));
    }
    Ok(cleared)
}

/// A write root and its owner before the run, to hand it back to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub root: String,
    pub ids: Ids,
    pub(super) dev: u64,
    pub(super) ino: u64,
}

impl Owner {
    /// The root's (device, inode) when inspected.
    pub fn id(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

/// The owner of each write root that exists (of the root's own object,
/// opened without following a link).
pub fn owners(roots: &[String]) -> Result<Vec<Owner>, Failure> {
    let mut out = Vec::new();
    for root in roots {
        let fd = match open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(Failure::os(format!("cannot open write root `{root}`"), e)),
        };
        let st = rustix::fs::fstat(&fd)
            .map_err(|e| Failure::os(format!("cannot inspect `{root}`"), e))?;
        out.push(Owner {
            root: root.clone(),
            ids: Ids {
                uid: st.st_uid,
                gid: st.st_gid,
            },
            dev: st.st_dev,
            ino: st.st_ino,
        });
    }
    Ok(out)
}

/// The most problems a hand-back lists; the rest are counted.
pub(super) const MAX_PROBLEMS: usize = 20;

/// After the run, once nothing of the sandbox is left: hand each write root
/// back to its owner before the run, with the walk of [`hand_over`] (no link
/// followed, no other filesystem entered, a file with other links left as it
/// is, a write root nested inside handed back on its own), changing only
/// what the agent's user owns, the files it made included, and clearing a setuid or setgid bit before a file changes
/// hands. A root that is not the object recorded before the run (replaced
/// meanwhile) is left alone. Returns what could not be handed back.
pub fn hand_back(owners: &[Owner], agent: Ids, limit: u64) -> Vec<String> {
    let theirs: Vec<Owner> = owners
        .iter()
        .filter(|o| o.ids != agent) // the agent's already: nothing to give back
        .cloned()
        .collect();
    after(&theirs, owners, Op::Back { agent: agent.uid }, limit)
}

/// After an idmapped run, once nothing of the sandbox is left: clear the
/// setuid and setgid bits and file capabilities of every regular file in the
/// write roots, with the walk of [`hand_back`]. [`prepare`] cleared them all
/// before the run, and the seccomp filter lets no call of the agent set
/// them (and the mount is `nosuid`): this holds if those did not, and
/// catches what a host process set during the run, so the owner never
/// keeps a set-id file whose bytes the agent could have written. Returns
/// what could not be cleared.
pub fn sweep_set_id(owners: &[Owner], limit: u64) -> Vec<String> {
    after(owners, owners, Op::Sweep, limit)
}

/// Walk each root of `walked` with `op`, another root of `all` nested in it
/// left to its own walk.
pub(super) fn after(walked: &[Owner], all: &[Owner], op: Op, limit: u64) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = 0;
    for o in walked {
        let root = &o.root;
        let fd = match open_nofollow(root, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC) {
            Ok(fd) => fd,
            Err(e) => {
                problems.push(format!("cannot open write root `{root}`: {e}"));
                continue;
            }
        };
        let st = match rustix::fs::fstat(&fd) {
            Ok(st) => st,
            Err(e) => {
                problems.push(format!("cannot inspect `{root}`: {e}"));
                continue;
            }
        };
        if st.st_dev != o.dev || st.st_ino != o.ino {
            problems.push(format!(
                "write root `{root}` is no longer the object handed over (something was put in its place), so it was left as it is"
            ));
            continue;
        }
        let mut w = Walk::of_root(o, all, op, &fd);
        w.seen = seen;
        w.limit = limit;
        let done = w.root(&fd, &st, root);
        seen = w.seen;
        match done {
            Ok(()) => {}
            Err(rustix::io::Errno::TOOBIG) => w.problems.push(format!(
                "`{root}`: the walk stopped past {limit} entries in the write roots (`--walk-limit`); what lies beyond was left as it is"
            )),
            Err(e) => w.problems.push(format!("`{root}`: {e}")),
        }
        problems.extend(w.problems);
        if w.dropped > 0 {
            problems.push(format!("{} more in `{root}`", w.dropped));
        }
    }
    if problems.len() > MAX_PROBLEMS {
        let more = problems.len() - MAX_PROBLEMS;
        problems.truncate(MAX_PROBLEMS);
        problems.push(format!("{more} more"));
    }
    problems
}
