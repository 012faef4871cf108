//! `sealc sign`: sign a record with an SSH key, as `ssh-keygen -Y sign -n
//! sealc-seal` would, after verifying it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::diag::quote;

/// `--help`'s closing sections: the exit codes from [`crate::exit::SIGN`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::SIGN,
        "\n\
The signature is OpenSSH's SSHSIG (namespace `sealc-seal`) over the record's
bytes: `ssh-keygen -Y verify -n sealc-seal` checks it too.

Example:
  sealc sign seal/seal.json --key ~/.ssh/sealc_ed25519
  sealc exec seal/seal.json --allowed-signers reviewers -- codex exec ...",
    )
}

/// Sign a record (seal.json) with an SSH key, once it verifies: the signature goes beside it.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    #[command(flatten)]
    seal: super::SealArgs,
    /// The OpenSSH private key to sign with (ed25519 or ECDSA; without a passphrase; readable by its owner only), or its public key (`.pub`) to sign with the ssh-agent at `SSH_AUTH_SOCK` that holds it (any of those, or RSA).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// Where the signature goes (default: the record's path with `.sig` added, as `ssh-keygen -Y sign` names it).
    #[arg(long, value_name = "FILE")]
    signature: Option<PathBuf>,
}

/// The most bytes of a key or a signature file sealc reads.
const MAX_KEY: u64 = 64 << 10;

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match sign(&a) {
        Ok(said) => {
            if !super::quiet() {
                let _ = writeln!(out, "{said}");
            }
            crate::exit::OK
        }
        Err((code, why)) => {
            let _ = writeln!(err, "sealc sign: {why}");
            code
        }
    }
}

fn sign(a: &Args) -> Result<String, (i32, String)> {
    let bad = |why: String| (crate::exit::BAD_INPUT, why);
    let shown = quote(&a.seal.record.display().to_string());
    let bytes = crate::hostfs::read_path(&a.seal.record, crate::hostfs::MAX_RECORD)
        .map_err(|e| bad(format!("cannot read the record {shown}: {e}")))?;
    // What is signed is what was reviewed: a record that does not verify
    // (its artifacts changed, or it was edited) is not signed.
    let outcome = crate::verify::verify(&bytes, &a.seal.files());
    let report = outcome.report;
    let name = report.seal.clone().unwrap_or_default();
    let Some(record) = outcome.record else {
        return Err(bad(format!(
            "{shown} is not a record sealc can read: {}",
            report.unusable.unwrap_or_default()
        )));
    };
    if report.verdict() != crate::verify::Verdict::Verified {
        return Err((
            crate::exit::DIFFERS,
            format!(
                "{shown} does not verify, so it was not signed:\n{}",
                report.to_text()
            ),
        ));
    }
    let key = Key::load(&a.key)?;
    let sig = key
        .sshsig(&bytes, crate::signature::NAMESPACE)
        .map_err(bad)?;
    let public = key.fingerprint();
    let path = crate::run::signed::signature_path(&a.seal.record, a.signature.as_deref());
    let shown_sig = quote(&path.display().to_string());
    let target = crate::hostfs::Target::open(&path)
        .map_err(|e| bad(format!("cannot write the signature {shown_sig}: {e}")))?;
    if crate::hostfs::Target::open(&a.seal.record).is_ok_and(|r| r.same_file(&target)) {
        return Err(bad(format!(
            "{shown_sig} is the record itself; give `--signature` another file"
        )));
    }
    target
        .write(sig.as_bytes(), 0o644)
        .map_err(|e| bad(format!("cannot write the signature {shown_sig}: {e}")))?;
    Ok(format!(
        "signed seal `{}` (binding {}) with {public}: {shown_sig}",
        crate::diag::visible(&name),
        record.binding
    ))
}

/// A key to sign with: an unencrypted private key read from its file, or
/// the ssh-agent's (`SSH_AUTH_SOCK`) for a public key file.
pub(super) enum Key {
    File(Box<ssh_key::PrivateKey>),
    Agent(PathBuf, ssh_key::PublicKey),
}

impl Key {
    /// Read `path`: a private key must be its owner's alone, as
    /// `ssh-keygen` asks; a public key names the agent's.
    pub(super) fn load(path: &Path) -> Result<Key, (i32, String)> {
        let shown = quote(&path.display().to_string());
        let bad = |why: String| (crate::exit::BAD_INPUT, format!("the key {shown}: {why}"));
        let (text, mode) = read_key(path)?;
        if let Ok(public) = ssh_key::PublicKey::from_openssh(text.trim()) {
            let socket = std::env::var_os("SSH_AUTH_SOCK").ok_or_else(|| {
                bad("a public key, which sealc signs with through the ssh-agent, but `SSH_AUTH_SOCK` is not set; give the private key, or start the agent and `ssh-add` the key".into())
            })?;
            return Ok(Key::Agent(PathBuf::from(socket), public));
        }
        if mode & 0o077 != 0 {
            return Err(bad(format!(
                "mode {:04o} lets others read it; `chmod 600` it (as ssh-keygen asks)",
                mode & 0o7777
            )));
        }
        crate::signature::private_key(&text)
            .map(|k| Key::File(Box::new(k)))
            .map_err(bad)
    }

    pub(super) fn fingerprint(&self) -> String {
        match self {
            Key::File(k) => crate::signature::fingerprint(k.public_key()),
            Key::Agent(_, p) => crate::signature::fingerprint(p),
        }
    }

    /// The armored SSHSIG of `msg` in `namespace`.
    pub(super) fn sshsig(&self, msg: &[u8], namespace: &str) -> Result<String, String> {
        match self {
            Key::File(k) => {
                let sig = k
                    .sign(namespace, ssh_key::HashAlg::Sha512, msg)
                    .map_err(|e| format!("cannot sign: {e}"))?;
                sig.to_pem(ssh_key::LineEnding::LF)
                    .map_err(|e| format!("cannot encode the signature: {e}"))
            }
            Key::Agent(sock, p) => crate::agent::sign(sock, p, msg, namespace),
        }
    }

    /// DSSE's signature of `msg`: the key's id and its raw signature.
    pub(super) fn raw(&self, msg: &[u8]) -> Result<(String, Vec<u8>), String> {
        match self {
            Key::File(k) => crate::attest::sign_with(k, msg),
            Key::Agent(sock, p) => {
                if p.algorithm() != ssh_key::Algorithm::Ed25519 {
                    return Err("run attestations are signed with ed25519 keys".into());
                }
                let sig = crate::agent::sign_raw(sock, p, msg)?;
                Ok((crate::attest::keyid(p), sig.as_bytes().to_vec()))
            }
        }
    }
}

/// Read a key file (a regular file, at most [`MAX_KEY`] bytes), with its
/// mode.
fn read_key(path: &Path) -> Result<(String, u32), (i32, String)> {
    use rustix::fs::{Mode, OFlags};
    let shown = quote(&path.display().to_string());
    let bad = |why: String| (crate::exit::BAD_INPUT, format!("the key {shown}: {why}"));
    // Not blocked by a fifo at the name: only a regular file is read.
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| bad(std::io::Error::from(e).to_string()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| bad(std::io::Error::from(e).to_string()))?;
    let bytes = crate::hostfs::read_bounded(fd, MAX_KEY).map_err(|e| bad(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not text".into()))?;
    Ok((text, st.st_mode))
}
