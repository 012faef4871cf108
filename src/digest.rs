//! `sha256:<hex>` digests, the one digest form sealc writes.

use sha2::{Digest, Sha256};

/// `sha256:` followed by the lowercase hex digest of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    sha256_of_parts(&[bytes])
}

/// `sha256:<hex>` of the bytes of `parts`, one after the other (as of
/// their concatenation, which is not made).
pub fn sha256_of_parts(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    let digest = h.finalize();
    let mut s = String::with_capacity("sha256:".len() + 2 * digest.len());
    s.push_str("sha256:");
    push_hex(&digest, &mut s);
    s
}

/// The lowercase hex SHA-256 of everything `r` yields, read as a stream
/// (a file of any size in 64 KiB at a time).
pub fn sha256_hex_of(mut r: impl std::io::Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hex(&h.finalize()))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    push_hex(bytes, &mut s);
    s
}

fn push_hex(bytes: &[u8], s: &mut String) {
    for b in bytes {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_digest() {
        assert_eq!(
            super::sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
