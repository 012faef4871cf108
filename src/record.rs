//! Stage 5, **record**: `seal.json` binds the spec text, the facts and every
//! artifact's digest, in one canonical JSON form.
//!
//! Canonical form: keys sorted, two-space indentation, a trailing newline.
//! The binding digest is `sha256` over the canonical JSON of the record
//! without its `binding` field.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::digest::sha256;
use crate::facts::Facts;

/// The record's schema name.
pub const SCHEMA: &str = "sealc.record/v1";
/// File name of the record.
pub const FILE: &str = "seal.json";

/// The record, `seal.json`. Fields are declared in sorted order (here and in
/// every type it holds), so serializing the struct gives the canonical key
/// order directly; `canonical_json` stays the definition, and a test checks
/// that the two agree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "sealc record")]
pub struct Record {
    /// Every artifact, sorted by file name.
    pub artifacts: Vec<ArtifactRecord>,
    /// `sha256:<hex>` over the canonical JSON of every other field.
    pub binding: String,
    /// How the sandbox is started.
    pub exec: ExecRecord,
    /// Everything read from the host at compile time.
    pub facts: Facts,
    /// Always `sealc.record/v1`.
    pub schema: String,
    /// The sealc version that wrote the record.
    pub sealc_version: String,
    /// The spec, byte for byte.
    pub spec: SpecRecord,
}

/// The spec, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecRecord {
    /// `sha256:<hex>` of the text.
    pub digest: String,
    /// The spec's file name (no directories).
    pub file: String,
    /// The spec's text.
    pub text: String,
}

/// One artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRecord {
    /// Length in bytes.
    pub bytes: u64,
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
    /// Path relative to the record's directory.
    pub file: String,
}

/// How the sandbox is started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecRecord {
    /// For the reader, never for running: the argv `sealc exec` builds on
    /// (`env -i`, the allowlist, then `sandbox-exec -f seal.sb` or the
    /// bubblewrap argv of `seal.bwrap.json`). Run as it stands it lacks what
    /// `sealc exec` adds (on Linux: sealc's init, Landlock, seccomp, the uid
    /// drop, the limits), so it is a weaker seal; run the record with
    /// `sealc exec`.
    pub argv_prefix: Vec<String>,
}

impl Record {
    /// Build a record and compute its binding.
    pub fn new(
        spec_file: &str,
        spec_text: &str,
        facts: &Facts,
        artifacts: &std::collections::BTreeMap<String, Vec<u8>>,
        argv_prefix: Vec<String>,
    ) -> Record {
        Record::with_bytes(spec_file, spec_text, facts.clone(), artifacts, argv_prefix).0
    }

    /// Build a record and its canonical bytes, serializing it once: the
    /// canonical form without `binding` is hashed, then the `binding` line is
    /// put in its sorted place (between `artifacts` and `exec`, the only
    /// top-level line that starts `  "exec": `, since strings hold no raw newline).
    pub fn with_bytes(
        spec_file: &str,
        spec_text: &str,
        facts: Facts,
        artifacts: &std::collections::BTreeMap<String, Vec<u8>>,
        argv_prefix: Vec<String>,
    ) -> (Record, String) {
        let mut r = Record {
            schema: SCHEMA.to_string(),
            sealc_version: env!("CARGO_PKG_VERSION").to_string(),
            spec: SpecRecord {
                file: spec_file.to_string(),
                text: spec_text.to_string(),
                digest: sha256(spec_text.as_bytes()),
            },
            facts,
            artifacts: artifacts
                .iter()
                .map(|(f, b)| ArtifactRecord {
                    file: f.clone(),
                    bytes: b.len() as u64,
                    digest: sha256(b),
                })
                .collect(),
            exec: ExecRecord { argv_prefix },
            binding: String::new(),
        };
        // Serialize once with an empty binding, hash the form without the
        // binding line (the text on either side of it), then fill the
        // digest in.
        let with_empty = direct_canonical(&r);
        let empty_line = "\n  \"binding\": \"\",";
        let Some(at) = with_empty.find(empty_line) else {
            // Never: the record's fields always have a `binding` line.
            r.binding = sha256(with_empty.as_bytes());
            return (r, with_empty);
        };
        let (before, after) = (&with_empty[..at], &with_empty[at + empty_line.len()..]);
        r.binding = crate::digest::sha256_of_parts(&[before.as_bytes(), after.as_bytes()]);
        let mut bytes = String::with_capacity(with_empty.len() + r.binding.len());
        bytes.push_str(before);
        bytes.push_str("\n  \"binding\": \"");
        bytes.push_str(&r.binding);
        bytes.push_str("\",");
        bytes.push_str(after);
        (r, bytes)
    }

    fn canonical_without_binding(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.remove("binding");
        }
        canonical_json(&v)
    }

    /// `sha256` over the canonical JSON of the record without `binding`.
    pub fn compute_binding(&self) -> String {
        sha256(self.canonical_without_binding().as_bytes())
    }

    /// The record's bytes in canonical form.
    pub fn to_canonical(&self) -> String {
        canonical_json(&serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// The canonical form straight from the struct (its fields are declared in
/// sorted order): serde_json's pretty printer indents by two spaces and writes
/// `[]` and `{}` for empty containers, as `canonical_json` does.
fn direct_canonical(r: &Record) -> String {
    // Room for the probe spec's record in one block: its text, escaped
    // (a quote or a newline takes two bytes), and a few kilobytes of facts
    // and digests; a bigger record grows as it is written.
    let mut out = Vec::with_capacity(8192 + 2 * r.spec.text.len());
    if serde_json::to_writer_pretty(&mut out, r).is_err() {
        return "\n".to_string();
    }
    out.push(b'\n');
    // serde_json writes UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

pub use crate::canonical::canonical_json;

/// The JSON Schema of the record (committed as schemas/seal-record.schema.json).
pub fn json_schema() -> serde_json::Value {
    crate::spec::with_id(
        crate::spec::draft07_schema::<Record>(false),
        "urn:sealc:schema:seal-record:v1",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_canonical_form_equals_the_plain_one() {
        let facts = Facts {
            vars: [("a".to_string(), "x\n  \"exec\": y".to_string())].into(),
            ..Facts::default()
        };
        let files = [("seal.sb".to_string(), b"(version 1)\n".to_vec())].into();
        let (r, bytes) = Record::with_bytes(
            "s.toml",
            "name = \"exec\"\n",
            facts,
            &files,
            vec!["a".into()],
        );
        assert_eq!(bytes, r.to_canonical());
        assert_eq!(r.binding, r.compute_binding());
    }

    #[test]
    fn canonical_sorts_and_indents() {
        let v: Value =
            serde_json::from_str(r#"{"b":[1,{"z":null,"a":"x\n"}],"a":{},"c":[]}"#).unwrap();
        assert_eq!(
            canonical_json(&v),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"a\": \"x\\n\",\n      \"z\": null\n    }\n  ],\n  \"c\": []\n}\n"
        );
    }
}
