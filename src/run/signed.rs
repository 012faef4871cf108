//! A record's signature, read and checked (`--allowed-signers`): by
//! `sealc exec` before anything starts, and by `sealc verify`.

use std::path::{Path, PathBuf};

use crate::diag::quote;
use crate::signature::Signed;

/// The most bytes of a signature or an `allowed_signers` file sealc reads.
const MAX_SIGNATURE: u64 = 1 << 20;

/// Why a signature did not hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotSigned {
    /// The `allowed_signers` file cannot be read: bad input.
    Unreadable(String),
    /// No signature, or one that does not hold: what failed.
    Refused(String),
}

/// Where a record's signature is, unless named: `RECORD.sig`, as
/// `ssh-keygen -Y sign` names it.
pub fn signature_path(record: &Path, given: Option<&Path>) -> PathBuf {
    match given {
        Some(p) => p.to_path_buf(),
        None => {
            let mut p = record.as_os_str().to_owned();
            p.push(".sig");
            PathBuf::from(p)
        }
    }
}

/// Check the signature at `signature` (default `RECORD.sig`) over the
/// record's `bytes` (the ones already read, so the bytes checked are the
/// bytes used) against the `allowed_signers` file, now.
pub fn check(
    bytes: &[u8],
    record: &Path,
    signature: Option<&Path>,
    allowed_signers: &Path,
) -> Result<Signed, NotSigned> {
    let shown = quote(&allowed_signers.display().to_string());
    let signers = crate::hostfs::read_text(allowed_signers, MAX_SIGNATURE).map_err(|e| {
        NotSigned::Unreadable(format!("cannot read the allowed signers {shown}: {e}"))
    })?;
    let signers = crate::signers::parse(&signers);
    let sig_path = signature_path(record, signature);
    let shown_sig = quote(&sig_path.display().to_string());
    let sig = read_regular(&sig_path).map_err(|e| {
        NotSigned::Refused(format!("the signature {shown_sig} cannot be read: {e}"))
    })?;
    crate::signature::check(
        bytes,
        &sig,
        &signers,
        crate::signature::NAMESPACE,
        crate::signature::now(),
    )
    .map_err(|why| {
        let mut msg = format!("the signature {shown_sig} does not hold: {why}");
        for (line, skipped) in &signers.skipped {
            msg.push_str(&format!("; {shown} line {line} trusts no key: {skipped}"));
        }
        NotSigned::Refused(msg)
    })
}

/// A signature file: a regular file only, opened without blocking (a fifo
/// planted at `RECORD.sig` never holds a run up), at most
/// [`MAX_SIGNATURE`] bytes of text.
fn read_regular(path: &Path) -> std::io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    let bytes = crate::hostfs::read_bounded(fd, MAX_SIGNATURE)?;
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not text"))
}
