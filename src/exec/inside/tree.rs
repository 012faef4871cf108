//! The Landlock mode's process tree. Without a pid namespace, nothing ends
//! the command's processes with it: sealc's init is their child subreaper
//! (an orphan among them is handed to it, never to the host's init), and it
//! ends every descendant when the command ends, or as soon as sealc itself
//! goes away.

use crate::failure::Failure;

/// Make this process the subreaper of what it starts, in a session of its
/// own (no controlling terminal: `/dev/tty` opens nothing of the
/// caller's), and end everything below it if its parent, sealc, ends.
pub(super) fn take_charge() -> Result<(), Failure> {
    rustix::process::setsid().map_err(|e| Failure::os("cannot start a session of its own", e))?;
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| Failure::os("cannot become the subreaper of the command", e))?;
    // A pidfd of the parent, taken before checking it is still the parent
    // (else the number may be another process's by now).
    let parent = rustix::process::getppid()
        .ok_or_else(|| Failure::new("sealc ended before the command started"))?;
    let fd = rustix::process::pidfd_open(parent, rustix::process::PidfdFlags::empty())
        .map_err(|e| Failure::os("cannot watch sealc", e))?;
    if rustix::process::getppid() != Some(parent) {
        return Err(Failure::new("sealc ended before the command started"));
    }
    std::thread::spawn(move || {
        use rustix::event::{poll, PollFd, PollFlags};
        loop {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, None) {
                Err(rustix::io::Errno::INTR) | Ok(0) => continue,
                Ok(_) | Err(_) => break,
            }
        }
        end_all();
        std::process::exit(crate::exec::SANDBOX_FAILED);
    });
    Ok(())
}

/// The children of `pid` (from each process's parent in `/proc`).
fn children(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| parent_of(*p) == Some(pid))
        .collect()
}

/// The parent of `pid`, from `/proc/PID/stat` (after the command name,
/// which may hold anything: the last `)`).
pub(crate) fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Every descendant of `root` now (not `root` itself).
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(i32, i32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (c, _) in parents.iter().filter(|(_, pp)| *pp == p) {
            if !out.contains(c) {
                out.push(*c);
                frontier.push(*c);
            }
        }
    }
    out
}

/// End every process below this one: `SIGKILL` to each child (an orphan
/// below comes up to this subreaper when its parent dies, and is ended in
/// the next round), each reaped, until none is left.
pub(super) fn end_all() {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    loop {
        for c in children(me) {
            if let Some(pid) = rustix::process::Pid::from_raw(c) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some(_)) | Err(rustix::io::Errno::INTR) => continue,
            Ok(None) | Err(_) => break, // ECHILD: nothing left
        }
    }
}
