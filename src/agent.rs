//! Signing through the running `ssh-agent` (`SSH_AUTH_SOCK`): one
//! `SSH_AGENTC_SIGN_REQUEST` (draft-miller-ssh-agent, section 3.6) for the
//! SSHSIG blob of a record, so a key the agent holds (a passphrase-protected
//! one, one on a hardware token) signs without sealc ever seeing it. The
//! messages are encoded and decoded with the `ssh-encoding` crate.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use ssh_encoding::{Decode, Encode};
use ssh_key::{HashAlg, LineEnding, PublicKey, Signature, SshSig};

const SIGN_REQUEST: u8 = 13;
const SIGN_RESPONSE: u8 = 14;
const FAILURE: u8 = 5;
/// The most bytes of an answer read (a signature is far smaller).
const MAX_ANSWER: u32 = 256 << 10;
/// `SSH_AGENT_RSA_SHA2_512`: the sign request's flag for an RSA key.
const RSA_SHA2_512: u32 = 4;

/// Sign `msg` in `namespace` with the agent's key for `public`: the
/// armored SSHSIG, as [`crate::signature::sign`] gives.
pub fn sign(
    socket: &Path,
    public: &PublicKey,
    msg: &[u8],
    namespace: &str,
) -> Result<String, String> {
    let shown = crate::diag::quote(&socket.display().to_string());
    let data = SshSig::signed_data(namespace, HashAlg::Sha512, msg)
        .map_err(|e| format!("cannot make the data to sign: {e}"))?;
    let signature = sign_raw(socket, public, &data)?;
    let sig = SshSig::new(
        public.key_data().clone(),
        namespace,
        HashAlg::Sha512,
        signature,
    )
    .map_err(|e| format!("cannot make the signature: {e}"))?;
    // The agent's answer is checked before it is written: a signature that
    // does not verify is never handed on.
    public
        .verify(namespace, msg, &sig)
        .map_err(|_| format!("the ssh-agent at {shown} gave a signature that does not verify"))?;
    sig.to_pem(LineEnding::LF)
        .map_err(|e| format!("cannot encode the signature: {e}"))
}

/// The agent's signature of `data` with its key for `public`, checked.
pub fn sign_raw(socket: &Path, public: &PublicKey, data: &[u8]) -> Result<Signature, String> {
    use signature::Verifier as _;
    let shown = crate::diag::quote(&socket.display().to_string());
    let blob = public
        .to_bytes()
        .map_err(|e| format!("cannot encode the key: {e}"))?;
    let mut body = Vec::new();
    (|| -> ssh_encoding::Result<()> {
        SIGN_REQUEST.encode(&mut body)?;
        blob.as_slice().encode(&mut body)?;
        data.encode(&mut body)?;
        // An RSA key signs with SHA-512 (`rsa-sha2-512`, what SSHSIG and
        // `ssh-keygen -Y sign` use), never SHA-1; other keys take no flag.
        let flags = match public.algorithm() {
            ssh_key::Algorithm::Rsa { .. } => RSA_SHA2_512,
            _ => 0u32,
        };
        flags.encode(&mut body)
    })()
    .map_err(|e| format!("cannot encode the request: {e}"))?;
    let mut stream = UnixStream::connect(socket)
        .map_err(|e| format!("cannot reach the ssh-agent at {shown}: {e}"))?;
    let io = |e: std::io::Error| format!("the ssh-agent at {shown}: {e}");
    stream
        .write_all(&(body.len() as u32).to_be_bytes())
        .and_then(|()| stream.write_all(&body))
        .map_err(io)?;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).map_err(io)?;
    let len = u32::from_be_bytes(len);
    if len == 0 || len > MAX_ANSWER {
        return Err(format!("the ssh-agent at {shown} answered {len} bytes"));
    }
    let mut answer = vec![0u8; len as usize];
    stream.read_exact(&mut answer).map_err(io)?;
    match answer[0] {
        SIGN_RESPONSE => {}
        FAILURE => {
            return Err(format!(
                "the ssh-agent at {shown} refused to sign: it does not hold the key {} (`ssh-add` it), or it asked for a confirmation that was refused",
                crate::signature::fingerprint(public)
            ))
        }
        other => return Err(format!("the ssh-agent at {shown} answered message {other}")),
    }
    let mut rest = &answer[1..];
    let sig_blob = Vec::<u8>::decode(&mut rest)
        .map_err(|e| format!("the ssh-agent's answer cannot be read: {e}"))?;
    let signature = Signature::decode(&mut sig_blob.as_slice())
        .map_err(|e| format!("the ssh-agent's signature cannot be read: {e}"))?;
    public
        .key_data()
        .verify(data, &signature)
        .map_err(|_| format!("the ssh-agent at {shown} gave a signature that does not verify"))?;
    Ok(signature)
}
