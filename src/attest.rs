//! Run attestations: an in-toto Statement (v1) about one `sealc exec` run,
//! in a DSSE envelope, signed with an SSH key's ed25519 key the way DSSE
//! signs (the key's raw signature over the envelope's pre-authentication
//! encoding), so in-toto's and securesystemslib's own verifiers check it.
//!
//! The statement's subjects are the files the run produced that the
//! harness named (`--stdout FILE`, `--stderr FILE`), each by its file name
//! and `sha256`; its predicate ([`PREDICATE_TYPE`]) binds them to the seal
//! (its binding and the record's digest) and holds the run report.
//!
//! Nothing here reads the host or the clock: the caller gives the report,
//! the digests and the time, and signs through the function it passes.

use base64ct::{Base64, Encoding};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The envelope's payload type: an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The statement's type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// sealc's predicate, versioned: `docs/signing.md` says what it holds.
pub const PREDICATE_TYPE: &str =
    "https://github.com/sealc/sealc/blob/main/docs/signing.md#run-attestations-v1";
/// The namespace an `allowed_signers` line must allow (when it names any)
/// for its key to sign run attestations.
pub const NAMESPACE: &str = "sealc-run";

/// A subject: a file the run produced, by name, and its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub name: String,
    pub digest: std::collections::BTreeMap<String, String>,
}

impl Subject {
    /// `name` with `sha256` (hex, without the `sha256:` prefix).
    pub fn new(name: &str, sha256_hex: &str) -> Subject {
        Subject {
            name: name.to_string(),
            digest: [("sha256".to_string(), sha256_hex.to_string())].into(),
        }
    }
}

/// The statement, its fields as in-toto names them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub kind: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Value,
}

/// The predicate: the seal that ran, sealc, the env names, and the run
/// report (argv, outcome, limits and usage, layers, network audit, times).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Predicate {
    /// The record's `binding`.
    pub binding: String,
    /// `sha256:` of the record's bytes.
    pub record: String,
    pub sealc_version: String,
    /// The names of the env vars that crossed into the run (never values).
    pub env_names: Vec<String>,
    /// The run report, as `--report` writes it.
    pub report: Value,
}

/// A DSSE envelope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub payload: String,
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// The key's fingerprint, as `ssh-keygen -l` shows it (`SHA256:...`).
    pub keyid: String,
    /// Base64 of the raw signature over [`pae`].
    pub sig: String,
}

/// DSSE's pre-authentication encoding of a payload.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A function that signs bytes: the key's id and its raw signature.
pub type Sign<'a> = &'a dyn Fn(&[u8]) -> Result<(String, Vec<u8>), String>;

/// The envelope of `statement`, signed by `sign` if given (unsigned
/// otherwise: its digests still bind the subjects, but nothing says who
/// made it), as pretty JSON with a final newline.
pub fn envelope(statement: &Statement, sign: Option<Sign<'_>>) -> Result<Vec<u8>, String> {
    let payload = serde_json::to_vec(statement).map_err(|e| e.to_string())?;
    let mut signatures = Vec::new();
    if let Some(sign) = sign {
        let (keyid, sig) = sign(&pae(PAYLOAD_TYPE, &payload))?;
        signatures.push(EnvelopeSignature {
            keyid,
            sig: Base64::encode_string(&sig),
        });
    }
    let env = Envelope {
        payload: Base64::encode_string(&payload),
        payload_type: PAYLOAD_TYPE.to_string(),
        signatures,
    };
    let mut out = serde_json::to_vec_pretty(&env).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(out)
}

/// Sign DSSE's way with an ed25519 OpenSSH key: its raw signature.
pub fn sign_with(key: &ssh_key::PrivateKey, msg: &[u8]) -> Result<(String, Vec<u8>), String> {
    use signature::Signer as _;
    if key.algorithm() != ssh_key::Algorithm::Ed25519 {
        return Err(format!(
            "a {} key: run attestations are signed with ed25519 keys",
            key.algorithm()
        ));
    }
    let sig: ssh_key::Signature = key.try_sign(msg).map_err(|e| e.to_string())?;
    Ok((keyid(key.public_key()), sig.as_bytes().to_vec()))
}

/// A key's id in an envelope: its SHA-256 fingerprint (`SHA256:...`).
pub fn keyid(key: &ssh_key::PublicKey) -> String {
    key.fingerprint(ssh_key::HashAlg::Sha256).to_string()
}

/// What [`open`] found: the statement, and who signed it.
#[derive(Clone, Debug)]
pub struct Opened {
    pub statement: Statement,
    pub predicate: Predicate,
    pub signed: crate::signature::Signed,
}

/// Read an envelope and check it: one signature by a key `signers` trusts
/// for [`NAMESPACE`] at `now`, over this payload; an in-toto statement
/// with sealc's predicate. The error says what failed.
pub fn open(text: &[u8], signers: &crate::signers::Signers, now: i64) -> Result<Opened, String> {
    let env: Envelope =
        serde_json::from_slice(text).map_err(|e| format!("it is not a DSSE envelope: {e}"))?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(format!(
            "its payload type is `{}`, not `{PAYLOAD_TYPE}`",
            env.payload_type.escape_debug()
        ));
    }
    let payload =
        Base64::decode_vec(&env.payload).map_err(|_| "its payload is not base64".to_string())?;
    let message = pae(PAYLOAD_TYPE, &payload);
    if env.signatures.is_empty() {
        return Err("it is not signed".into());
    }
    let mut why = Vec::new();
    let mut signed = None;
    for s in &env.signatures {
        match check_one(s, &message, signers, now) {
            Ok(who) => {
                signed = Some(who);
                break;
            }
            Err(e) => why.push(e),
        }
    }
    let signed = signed.ok_or_else(|| why.join("; "))?;
    let statement: Statement = serde_json::from_slice(&payload)
        .map_err(|e| format!("its payload is not an in-toto statement: {e}"))?;
    if statement.kind != STATEMENT_TYPE || statement.predicate_type != PREDICATE_TYPE {
        return Err(format!(
            "its statement is `{}` about `{}`, not sealc's run attestation",
            statement.kind.escape_debug(),
            statement.predicate_type.escape_debug()
        ));
    }
    let predicate: Predicate = serde_json::from_value(statement.predicate.clone())
        .map_err(|e| format!("its predicate is not sealc's: {e}"))?;
    Ok(Opened {
        statement,
        predicate,
        signed,
    })
}

fn check_one(
    s: &EnvelopeSignature,
    message: &[u8],
    signers: &crate::signers::Signers,
    now: i64,
) -> Result<crate::signature::Signed, String> {
    use signature::Verifier as _;
    let lines: Vec<_> = signers
        .signers
        .iter()
        .filter(|l| keyid(&l.key) == s.keyid)
        .collect();
    let Some(first) = lines.first() else {
        return Err(format!(
            "it was signed by a key the allowed signers do not list ({})",
            s.keyid.escape_debug()
        ));
    };
    let raw = Base64::decode_vec(&s.sig).map_err(|_| "its signature is not base64".to_string())?;
    let sig = ssh_key::Signature::new(first.key.algorithm(), raw)
        .map_err(|e| format!("its signature cannot be read: {e}"))?;
    first.key.key_data().verify(message, &sig).map_err(|_| {
        format!(
            "its signature does not match its payload ({}): the envelope changed after signing",
            crate::signature::fingerprint(&first.key)
        )
    })?;
    let mut refusals = Vec::new();
    for l in lines {
        match l.refuses(NAMESPACE, now) {
            None => {
                return Ok(crate::signature::Signed {
                    principals: l.principals.clone(),
                    line: l.line,
                    key: crate::signature::fingerprint(&l.key),
                })
            }
            Some(why) => refusals.push(why),
        }
    }
    Err(format!(
        "its key is not trusted for run attestations: {}",
        refusals.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ssh_key::PrivateKey {
        crate::signature::private_key(crate::signature::tests::KEY).unwrap()
    }

    fn statement() -> Statement {
        let p = Predicate {
            binding: format!("sha256:{}", "a".repeat(64)),
            record: format!("sha256:{}", "b".repeat(64)),
            sealc_version: "0.1.0".into(),
            env_names: vec!["PATH".into()],
            report: serde_json::json!({"exit_code": 0}),
        };
        Statement {
            kind: STATEMENT_TYPE.into(),
            subject: vec![Subject::new("out.txt", &"c".repeat(64))],
            predicate_type: PREDICATE_TYPE.into(),
            predicate: serde_json::to_value(p).unwrap(),
        }
    }

    fn signers(opts: &str) -> crate::signers::Signers {
        let public = key().public_key().to_openssh().unwrap();
        crate::signers::parse(&format!("grader@example.com {opts} {public}\n"))
    }

    #[test]
    fn pae_is_dsses() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    #[test]
    fn a_signed_envelope_opens_and_every_changed_byte_is_refused() {
        let k = key();
        let sign = |m: &[u8]| sign_with(&k, m);
        let env = envelope(&statement(), Some(&sign)).unwrap();
        let s = signers("");
        let opened = open(&env, &s, 0).unwrap();
        assert_eq!(opened.statement, statement());
        assert_eq!(opened.signed.principals, ["grader@example.com"]);
        for i in 0..env.len() {
            let mut e = env.clone();
            e[i] ^= 0x01;
            assert!(
                open(&e, &s, 0).is_err(),
                "byte {i} changed and still opened"
            );
        }
        let unsigned = envelope(&statement(), None).unwrap();
        assert!(open(&unsigned, &s, 0).unwrap_err().contains("not signed"));
        let e = open(&env, &signers("namespaces=\"sealc-seal\""), 0).unwrap_err();
        assert!(e.contains("not trusted for run attestations"), "{e}");
        let e = open(&env, &crate::signers::parse(""), 0).unwrap_err();
        assert!(e.contains("do not list"), "{e}");
    }
}
