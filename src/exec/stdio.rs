//! The caller's stdin, stdout and stderr, checked before anything starts.
//!
//! A descriptor crosses every mount: a directory on stdin would hand the
//! sandbox `/proc/self/fd/0/...`, a terminal would let it inject input
//! (`TIOCSTI`) or change the caller's terminal settings. So a directory, a
//! block device or any other special file is refused; stdout and stderr
//! always reach the command as pipes that `sealc exec` relays (a file the
//! caller gave is then never reopened inside, where Landlock would refuse
//! it, and a terminal never crosses); stdin crosses as it is when it is a
//! file, a pipe or a memory device such as `/dev/null`, and a terminal or a
//! socket on stdin (made in the caller's network namespace) is relayed
//! through a pipe too.
//!
//! Relayed back ([`relay`]), the command's stdout and stderr reach a file, a pipe or a
//! socket byte for byte; a terminal gets them through the terminal filter
//! ([`super::terminal`]), unless `--raw-terminal` ([`deliveries`]).

use crate::failure::Failure;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// How one standard descriptor reaches the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// The caller's descriptor itself.
    Inherit,
    /// A pipe; `sealc exec` copies between it and the caller's descriptor.
    Relay,
    /// The caller's descriptor is closed: `/dev/null` instead.
    Null,
}

const NAMES: [&str; 3] = ["standard input", "standard output", "standard error"];

/// Decide how descriptor `n` (0, 1 or 2) reaches the command, or say why
/// it is refused.
pub fn way(n: usize, fd: BorrowedFd<'_>) -> Result<Way, Failure> {
    use rustix::fs::FileType;
    let st = match rustix::fs::fstat(fd) {
        Ok(st) => st,
        Err(rustix::io::Errno::BADF) => return Ok(Way::Null),
        Err(e) => return Err(Failure::os(format!("cannot inspect {}", NAMES[n]), e)),
    };
    let out = n > 0;
    let what = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile | FileType::Fifo => {
            return Ok(if out { Way::Relay } else { Way::Inherit })
        }
        // A socket was made in the caller's network namespace: handed in, an
        // unconnected or datagram one would reach the host's network.
        FileType::Socket => return Ok(Way::Relay),
        FileType::CharacterDevice if rustix::termios::isatty(fd) => return Ok(Way::Relay),
        // The memory devices (null, zero, full, random, urandom): major 1.
        FileType::CharacterDevice if rustix::fs::major(st.st_rdev) == 1 => {
            return Ok(if out { Way::Relay } else { Way::Inherit })
        }
        FileType::CharacterDevice => "a character device",
        FileType::Directory => "a directory",
        FileType::BlockDevice => "a block device",
        FileType::Symlink | FileType::Unknown => "a special file",
    };
    Err(Failure::new(format!(
        "{} is {what}, which the command could reach through `/proc/self/fd/{n}`, so nothing was started",
        NAMES[n]
    )))
}

/// How the command's standard descriptors reach it and where its output
/// goes: [`ways`], [`deliveries`], and the files that keep stdout and
/// stderr instead of sealc's own (`--stdout`, `--stderr`).
#[derive(Debug)]
pub struct Streams {
    pub ways: [Way; 3],
    pub deliveries: [Delivery; 2],
    pub kept: [Option<std::fs::File>; 2],
}

/// How sealc writes the command's relayed stdout or stderr to its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Not a terminal (a file, a pipe, a socket): byte for byte.
    Bytes,
    /// A terminal: through [`super::terminal::Filter`].
    Filtered,
    /// A terminal, and `--raw-terminal`: byte for byte.
    Raw,
}

impl Delivery {
    /// What the run report says of the stream (`terminal`): `filtered`,
    /// `raw`, or nothing when it did not go to a terminal.
    pub fn as_report(self) -> Option<&'static str> {
        match self {
            Delivery::Bytes => None,
            Delivery::Filtered => Some("filtered"),
            Delivery::Raw => Some("raw"),
        }
    }
}

/// How the command's output is written to `fd`: filtered when it is a
/// terminal, unless `raw`.
pub fn delivery(fd: BorrowedFd<'_>, raw: bool) -> Delivery {
    match (rustix::termios::isatty(fd), raw) {
        (false, _) => Delivery::Bytes,
        (true, false) => Delivery::Filtered,
        (true, true) => Delivery::Raw,
    }
}

/// [`delivery`] for this process's stdout and stderr, decided once before
/// the run (`raw`: `--raw-terminal`).
pub fn deliveries(raw: bool) -> [Delivery; 2] {
    [
        delivery(std::io::stdout().as_fd(), raw),
        delivery(std::io::stderr().as_fd(), raw),
    ]
}

/// [`way`] for this process's stdin, stdout and stderr.
pub fn ways() -> Result<[Way; 3], Failure> {
    Ok([
        way(0, std::io::stdin().as_fd())?,
        way(1, std::io::stdout().as_fd())?,
        way(2, std::io::stderr().as_fd())?,
    ])
}

/// Copy until the end with plain `read` and `write`: each `write` moves a
/// shared file position under the kernel's lock, so stdout and stderr sent
/// to one file (`> log 2>&1`) keep every byte (`io::copy` would splice, which
/// can race on the position, and hold a pipe's lock while it waits). Past
/// `cap` bytes the rest is read and dropped, and `over` is called once.
/// To a terminal (`Delivery::Filtered`) what is read goes through the
/// [`super::terminal::Filter`] (the cap still counts the bytes read), and a reset
/// of the text attributes follows if the command's last SGR left them set.
pub(super) fn relay(
    mut from: impl io::Read,
    mut to: impl io::Write,
    cap: Option<u64>,
    over: &dyn Fn(),
    delivery: Delivery,
) -> super::report::Stream {
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = super::report::Stream {
        terminal: delivery.as_report(),
        ..Default::default()
    };
    let mut filter = (delivery == Delivery::Filtered).then(super::terminal::Filter::new);
    let mut shown = Vec::new();
    let mut open = true;
    let mut written = <sha2::Sha256 as sha2::Digest>::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let room = cap
            .map_or(n as u64, |c| c.saturating_sub(out.bytes))
            .min(n as u64) as usize;
        if room < n && !out.truncated {
            out.truncated = true;
            over();
        }
        if open && room > 0 {
            let bytes = match &mut filter {
                None => &buf[..room],
                Some(f) => {
                    shown.clear();
                    f.feed(&buf[..room], &mut shown);
                    &shown[..]
                }
            };
            if !bytes.is_empty() && to.write_all(bytes).is_err() {
                open = false; // the caller stopped reading: drain, so nothing inside blocks
            } else {
                sha2::Digest::update(&mut written, bytes);
                out.bytes += room as u64;
            }
        }
    }
    if let Some(mut f) = filter {
        f.finish();
        if open && f.styled() && to.write_all(super::terminal::RESET).is_ok() {
            sha2::Digest::update(&mut written, super::terminal::RESET);
        }
        out.controls_dropped = f.dropped();
    }
    out.sha256 = format!(
        "sha256:{}",
        crate::digest::hex(&sha2::Digest::finalize(written))
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_refused_and_files_and_pipes_cross() {
        let dir = std::fs::File::open("/").unwrap();
        let e = way(0, dir.as_fd()).unwrap_err().to_string();
        assert!(e.contains("standard input is a directory"), "{e}");
        let null = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(way(0, null.as_fd()).unwrap(), Way::Inherit);
        assert_eq!(way(1, null.as_fd()).unwrap(), Way::Relay);
        let (r, _w) = std::io::pipe().unwrap();
        assert_eq!(way(0, r.as_fd()).unwrap(), Way::Inherit);
    }

    #[test]
    fn only_a_terminal_is_filtered() {
        let null = std::fs::File::open("/dev/null").unwrap();
        let (r, _w) = std::io::pipe().unwrap();
        for raw in [false, true] {
            assert_eq!(delivery(null.as_fd(), raw), Delivery::Bytes);
            assert_eq!(delivery(r.as_fd(), raw), Delivery::Bytes);
        }
        assert_eq!(Delivery::Bytes.as_report(), None);
    }
}
