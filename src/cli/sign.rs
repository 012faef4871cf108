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
    /// The OpenSSH private key to sign with (ed25519; without a passphrase; readable by its owner only), or its public key (`.pub`) to sign with the ssh-agent at `SSH_AUTH_SOCK` that holds it.
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
    let (key_text, mode) = read_key(&a.key)?;
    let key_shown = quote(&a.key.display().to_string());
    let (sig, public) = if let Ok(public) = ssh_key::PublicKey::from_openssh(key_text.trim()) {
        // A public key: its private key is in the running ssh-agent, as
        // `ssh-keygen -Y sign -f KEY.pub` has it.
        let socket = std::env::var_os("SSH_AUTH_SOCK").ok_or_else(|| {
            bad(format!(
                "{key_shown} is a public key, which sealc signs with through the ssh-agent, but `SSH_AUTH_SOCK` is not set; give the private key, or start the agent and `ssh-add` the key"
            ))
        })?;
        let sig = crate::agent::sign(
            std::path::Path::new(&socket),
            &public,
            &bytes,
            crate::signature::NAMESPACE,
        )
        .map_err(bad)?;
        (sig, crate::signature::fingerprint(&public))
    } else {
        if mode & 0o077 != 0 {
            return Err(bad(format!(
                "the key {key_shown}: mode {:04o} lets others read it; `chmod 600` it (as ssh-keygen asks)",
                mode & 0o7777
            )));
        }
        let sig = crate::signature::sign(&bytes, &key_text, crate::signature::NAMESPACE)
            .map_err(|e| bad(format!("{key_shown}: {e}")))?;
        let public = crate::signature::private_key(&key_text)
            .map(|k| crate::signature::fingerprint(k.public_key()))
            .unwrap_or_default();
        (sig, public)
    };
    let path = crate::run::signed::signature_path(&a.seal.record, a.signature.as_deref());
    let shown_sig = quote(&path.display().to_string());
    crate::hostfs::Target::open(&path)
        .and_then(|t| t.write(sig.as_bytes(), 0o644))
        .map_err(|e| bad(format!("cannot write the signature {shown_sig}: {e}")))?;
    Ok(format!(
        "signed seal `{}` (binding {}) with {public}: {shown_sig}",
        crate::diag::visible(&name),
        record.binding
    ))
}

/// Read a key file (a regular file, at most [`MAX_KEY`] bytes), with its
/// mode: a private key must be its owner's alone (`ssh-keygen` refuses an
/// unprotected one), which the caller checks once it knows the kind.
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
