//! The digest of a program that is a fact (the launcher, what starts the
//! sandbox), computed once per file identity.
//!
//! Each `sealc exec` gathers the facts again, and a launcher may be a
//! native binary of hundreds of megabytes (npm's Codex: 315 MB, about 0.4 s
//! to hash). A file of 1 MiB or more is hashed as a stream (never read
//! whole into memory) and its digest kept under its identity: device,
//! inode, size, and the modification and change times to the nanosecond.
//! The next run that finds the same identity takes the digest kept.
//!
//! Why that is sound: the change time is set by the kernel on every write,
//! truncation, rename onto, chmod or chown of the file, and no call sets
//! it to a chosen value (`utimensat` sets the modification time and, in
//! doing so, sets the change time to now); a new file at the path is a new
//! inode, or a reused one with a new change time. So a file whose identity
//! is unchanged holds the bytes it held when it was hashed, unless the
//! clock was set back to the very nanosecond, the filesystem was written
//! behind the kernel's back (a raw block device, another machine over a
//! network filesystem), or root did either: what the cache assumes of the
//! host. The agent can never write a program that is a fact (compile
//! refuses one in a write root, `sealc::exec::in-write-root`), nor the
//! cache: it lives where only the caller writes (`/run/sealc/digests`,
//! root's alone, for root; the caller's own `$XDG_RUNTIME_DIR` otherwise),
//! and is not used at all when a write root of the seal holds it, or when
//! neither place is the caller's alone. An entry is a file named by the
//! identity and the path, holding the digest, written atomically.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

/// Below this size a program is read and hashed: the cache costs more.
pub const CACHED_FROM: u64 = 1 << 20;

/// The digest of the regular file `path` (no final link followed), at
/// most `max` bytes; `in_write_root` says whether a realpath lies in a
/// write root of the seal (then no cache is used).
pub fn program_digest(
    path: &str,
    max: u64,
    in_write_root: &dyn Fn(&str) -> bool,
) -> Option<String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile
        || st.st_size as u64 > max
    {
        return None;
    }
    if (st.st_size as u64) < CACHED_FROM {
        let bytes = crate::hostfs::read_bounded(fd, max).ok()?;
        return Some(crate::digest::sha256(&bytes));
    }
    let key = identity_key(path, &st);
    let cache = cache_dir(in_write_root);
    if let Some(kept) = cache.as_ref().and_then(|d| read_entry(d, &key)) {
        return Some(kept);
    }
    let digest = hash_stream(fd, max)?;
    // Kept only for the identity read before hashing, and only if the file
    // still has it (a file written meanwhile is hashed again next time).
    let now = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()
    .and_then(|f| rustix::fs::fstat(&f).ok());
    if let (Some(d), Some(now)) = (cache, now) {
        if identity_key(path, &now) == key {
            let _ = d.write(
                std::ffi::OsStr::new(&key),
                format!("{digest}\n").as_bytes(),
                0o600,
            );
        }
    }
    Some(digest)
}

/// The entry's name: the identity, and a digest of the path (so one file
/// under two names is two entries, and a name never holds a `/`).
fn identity_key(path: &str, st: &rustix::fs::Stat) -> String {
    let named = crate::digest::sha256(path.as_bytes());
    let named = named.trim_start_matches("sha256:");
    format!(
        "{}-{}-{}-{}.{}-{}.{}-{}",
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime,
        st.st_mtime_nsec,
        st.st_ctime,
        st.st_ctime_nsec,
        &named[..16]
    )
}

fn read_entry(dir: &crate::hostfs::Dir, key: &str) -> Option<String> {
    let bytes = dir.read(std::ffi::OsStr::new(key), 128).ok()??;
    let text = std::str::from_utf8(&bytes).ok()?.strip_suffix('\n')?;
    let hex = text.strip_prefix("sha256:")?;
    (hex.len() == 64
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| text.to_string())
}

fn hash_stream(fd: OwnedFd, max: u64) -> Option<String> {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    let mut f = std::fs::File::from(fd).take(max + 1);
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        total += n as u64;
        h.update(&buf[..n]);
    }
    (total <= max).then(|| format!("sha256:{}", crate::digest::hex(&h.finalize())))
}

/// Where digests are kept: root's `/run/sealc/digests`; the caller's
/// `$XDG_RUNTIME_DIR/sealc-digests` when that directory is the caller's
/// alone (mode 0700 or stricter); else nowhere. Never one that
/// `in_write_root` says a write root of the seal holds (nothing is made
/// there).
fn cache_dir(in_write_root: &dyn Fn(&str) -> bool) -> Option<crate::hostfs::Dir> {
    let me = rustix::process::geteuid();
    let usable = |d: &crate::hostfs::Dir| !in_write_root(&d.path().to_string_lossy());
    if me.is_root() {
        if in_write_root("/run/sealc/digests") {
            return None;
        }
        return crate::hostfs::run_dir("digests", 0o700).ok().filter(usable);
    }
    let own = |d: &crate::hostfs::Dir| {
        d.stat()
            .is_ok_and(|st| st.st_uid == me.as_raw() && st.st_mode & 0o077 == 0)
    };
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(std::path::PathBuf::from)
        .filter(|d| d.is_absolute())
        .and_then(|d| crate::hostfs::Dir::open(Path::new(&d)).ok())
        .filter(own)
        .filter(usable)?;
    let dir = runtime
        .subdir(std::ffi::OsStr::new("sealc-digests"), Some(0o700))
        .ok()?;
    own(&dir).then_some(dir)
}
