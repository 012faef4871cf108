//! Signed seals: an OpenSSH `SSHSIG` signature (the format of `ssh-keygen
//! -Y sign` and of git's SSH-signed commits) over a record's exact bytes,
//! in the namespace [`NAMESPACE`], checked against an `allowed_signers`
//! file ([`crate::signers`]).
//!
//! A signature says that a key the reviewer trusts approved these bytes;
//! it says nothing of the host, so whoever checks one also verifies the
//! record (`sealc verify` recompiles it). Nothing here reads the host or
//! the clock: the caller gives the bytes, the texts and the time.

use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use crate::signers::Signers;

/// The namespace of a seal's signature: a signature made for another
/// purpose (a git commit, a file) never passes for one.
pub const NAMESPACE: &str = "sealc-seal";

/// The hash SSHSIG signs: SHA-512, as `ssh-keygen -Y sign` does.
const HASH: HashAlg = HashAlg::Sha512;

/// Sign `msg` with the OpenSSH private key in `key_text`, in `namespace`:
/// the armored signature (`-----BEGIN SSH SIGNATURE-----`).
pub fn sign(msg: &[u8], key_text: &str, namespace: &str) -> Result<String, String> {
    let key = private_key(key_text)?;
    let sig = key
        .sign(namespace, HASH, msg)
        .map_err(|e| format!("cannot sign with the key: {e}"))?;
    sig.to_pem(LineEnding::LF)
        .map_err(|e| format!("cannot encode the signature: {e}"))
}

/// The unencrypted OpenSSH private key in `key_text`.
pub fn private_key(key_text: &str) -> Result<PrivateKey, String> {
    if key_text.starts_with("ssh-") || key_text.starts_with("ecdsa-") {
        return Err("this is a public key; give the private key (the file without `.pub`)".into());
    }
    let key = PrivateKey::from_openssh(key_text)
        .map_err(|e| format!("not an OpenSSH private key ({e})"))?;
    // The `ssh-key` crate (0.6.7) cannot sign with an RSA private key
    // read from a file (it rebuilds the key from the wrong primes); the
    // agent signs with it, and RSA signatures are checked as any other.
    if matches!(key.algorithm(), ssh_key::Algorithm::Rsa { .. }) {
        return Err(
            "sealc signs with an RSA key through the ssh-agent only: `ssh-add` it and give its public key (`KEY.pub`) instead"
                .into(),
        );
    }
    if key.is_encrypted() {
        return Err(
            "the key is protected by a passphrase, which sealc does not ask for; `ssh-add` it to the ssh-agent and give its public key (`KEY.pub`) instead"
                .into(),
        );
    }
    Ok(key)
}

/// Who signed, once a signature holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    /// The principals of the `allowed_signers` line that trusts the key.
    pub principals: Vec<String>,
    /// That line's number.
    pub line: usize,
    /// The key's type and SHA-256 fingerprint (`ED25519 SHA256:...`), as
    /// `ssh-keygen -l` shows it.
    pub key: String,
}

impl Signed {
    /// `alice@example.com (line 3, ED25519 SHA256:...)`.
    pub fn describe(&self) -> String {
        format!(
            "{} (line {}, {})",
            self.principals.join(","),
            self.line,
            self.key
        )
    }
}

/// A key's type and fingerprint, as `ssh-keygen -l` shows them.
pub fn fingerprint(key: &PublicKey) -> String {
    let kind = match key.algorithm() {
        ssh_key::Algorithm::Ed25519 => "ED25519".to_string(),
        ssh_key::Algorithm::Rsa { .. } => "RSA".to_string(),
        ssh_key::Algorithm::Ecdsa { .. } => "ECDSA".to_string(),
        other => other.as_str().to_ascii_uppercase(),
    };
    format!("{kind} {}", key.fingerprint(HashAlg::Sha256))
}

/// Check the armored signature `sig_text` over `msg` against `signers`:
/// made in `namespace`, by a key a line trusts for `namespace` at `now`
/// (seconds since the epoch), over exactly these bytes. The error says
/// what failed.
pub fn check(
    msg: &[u8],
    sig_text: &str,
    signers: &Signers,
    namespace: &str,
    now: i64,
) -> Result<Signed, String> {
    let sig = SshSig::from_pem(sig_text.trim_end())
        .map_err(|e| format!("it is not an OpenSSH signature ({e})"))?;
    if sig.namespace() != namespace {
        return Err(format!(
            "it was made for the namespace `{}`, not `{namespace}`: a signature made for another purpose never approves a seal",
            sig.namespace().escape_debug()
        ));
    }
    let key = PublicKey::from(sig.public_key().clone());
    let shown = fingerprint(&key);
    let lines: Vec<_> = signers
        .signers
        .iter()
        .filter(|s| s.key.key_data() == key.key_data())
        .collect();
    if lines.is_empty() {
        return Err(format!(
            "it was made by a key the allowed signers do not list ({shown})"
        ));
    }
    key.verify(namespace, msg, &sig).map_err(|_| {
        format!(
            "it does not match the bytes it is checked against ({shown}): they changed after signing, or it signs other bytes"
        )
    })?;
    let mut refusals = Vec::new();
    for s in lines {
        match s.refuses(namespace, now) {
            None => {
                return Ok(Signed {
                    principals: s.principals.clone(),
                    line: s.line,
                    key: shown,
                })
            }
            Some(why) => refusals.push(why),
        }
    }
    Err(format!(
        "its key ({shown}) is not trusted for it: {}",
        refusals.join("; ")
    ))
}

/// The time now, as the checks take it (seconds since the epoch). Read
/// here, once, by the callers that check a signature, never by compile.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A throwaway ed25519 key, made for these tests by `ssh-keygen -t
    /// ed25519 -N ''` (never used for anything else).
    pub(crate) const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACCURHrD6HSfm0DrS/qlthG7i4NB+cc7AEM9iZDqVrg29wAAAJgFemYQBXpm
EAAAAAtzc2gtZWQyNTUxOQAAACCURHrD6HSfm0DrS/qlthG7i4NB+cc7AEM9iZDqVrg29w
AAAECexqczQ6BtrwFbpsVzvVujnZV63Xs9Prmaf16H0lSoy5REesPodJ+bQOtL+qW2EbuL
g0H5xzsAQz2JkOpWuDb3AAAAEnRlc3RAc2VhbGMuaW52YWxpZAECAw==
-----END OPENSSH PRIVATE KEY-----
";

    fn signers(opts: &str) -> Signers {
        let key = private_key(KEY).unwrap();
        let public = key.public_key().to_openssh().unwrap();
        crate::signers::parse(&format!("alice@example.com {opts} {public}\n"))
    }

    #[test]
    fn every_changed_byte_is_refused() {
        let msg = b"{\"binding\": \"sha256:00\"}\n".to_vec();
        let sig = sign(&msg, KEY, NAMESPACE).unwrap();
        let s = signers("");
        let ok = check(&msg, &sig, &s, NAMESPACE, 0).unwrap();
        assert_eq!(ok.principals, ["alice@example.com"]);
        assert!(ok.key.starts_with("ED25519 SHA256:"), "{}", ok.key);
        for i in 0..msg.len() {
            let mut m = msg.clone();
            m[i] ^= 1;
            let e = check(&m, &sig, &s, NAMESPACE, 0).unwrap_err();
            assert!(e.contains("does not match"), "{e}");
        }
    }

    #[test]
    fn namespace_key_and_window_refuse() {
        let msg = b"record";
        let git = sign(msg, KEY, "git").unwrap();
        let e = check(msg, &git, &signers(""), NAMESPACE, 0).unwrap_err();
        assert!(e.contains("namespace `git`"), "{e}");
        let sig = sign(msg, KEY, NAMESPACE).unwrap();
        let e = check(msg, &sig, &crate::signers::parse(""), NAMESPACE, 0).unwrap_err();
        assert!(e.contains("do not list"), "{e}");
        let e = check(msg, &sig, &signers("namespaces=\"git\""), NAMESPACE, 0).unwrap_err();
        assert!(e.contains("for `git` only"), "{e}");
        let e = check(
            msg,
            &sig,
            &signers("valid-before=\"20200101Z\""),
            NAMESPACE,
            1_800_000_000,
        )
        .unwrap_err();
        assert!(e.contains("expired"), "{e}");
        assert!(check(msg, "junk", &signers(""), NAMESPACE, 0).is_err());
        assert!(private_key("ssh-ed25519 AAAA")
            .unwrap_err()
            .contains("public key"));
    }

    proptest::proptest! {
        /// Any signature text, against any message: refused without a panic.
        #[test]
        fn any_signature_text_is_refused_without_panic(
            text in "(-----BEGIN SSH SIGNATURE-----\n)?[A-Za-z0-9+/=\n]{0,300}(-----END SSH SIGNATURE-----)?",
            msg in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            proptest::prop_assert!(check(&msg, &text, &signers(""), NAMESPACE, 0).is_err());
        }
    }
}
