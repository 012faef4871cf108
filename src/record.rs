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

/// The record, `seal.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "sealc record")]
pub struct Record {
    /// Always `sealc.record/v1`.
    pub schema: String,
    /// The sealc version that wrote the record.
    pub sealc_version: String,
    /// The spec, byte for byte.
    pub spec: SpecRecord,
    /// Everything read from the host at compile time.
    pub facts: Facts,
    /// Every artifact, sorted by file name.
    pub artifacts: Vec<ArtifactRecord>,
    /// How the sandbox is started.
    pub exec: ExecRecord,
    /// `sha256:<hex>` over the canonical JSON of every other field.
    pub binding: String,
}

/// The spec, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecRecord {
    /// The spec's file name (no directories).
    pub file: String,
    /// The spec's text.
    pub text: String,
    /// `sha256:<hex>` of the text.
    pub digest: String,
}

/// One artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRecord {
    /// Path relative to the record's directory.
    pub file: String,
    /// Length in bytes.
    pub bytes: u64,
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
}

/// How the sandbox is started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecRecord {
    /// The argv before the agent's command (see `env.json`).
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
        let mut r = Record {
            schema: SCHEMA.to_string(),
            sealc_version: env!("CARGO_PKG_VERSION").to_string(),
            spec: SpecRecord {
                file: spec_file.to_string(),
                text: spec_text.to_string(),
                digest: sha256(spec_text.as_bytes()),
            },
            facts: facts.clone(),
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
        r.binding = r.compute_binding();
        r
    }

    /// `sha256` over the canonical JSON of the record without `binding`.
    pub fn compute_binding(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.remove("binding");
        }
        sha256(canonical_json(&v).as_bytes())
    }

    /// The record's bytes in canonical form.
    pub fn to_canonical(&self) -> String {
        canonical_json(&serde_json::to_value(self).unwrap_or(Value::Null))
    }
}

/// Canonical JSON: object keys sorted by their bytes, two-space indentation,
/// `[]`/`{}` for empty containers, a trailing newline. Sorting is done here,
/// so the form does not depend on serde_json's map features.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_value(v, 0, &mut out);
    out.push('\n');
    out
}

fn write_value(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                pad(indent + 1, out);
                write_value(item, indent + 1, out);
                if i + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(indent, out);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("{\n");
            for (i, k) in keys.iter().enumerate() {
                pad(indent + 1, out);
                write_str(k, out);
                out.push_str(": ");
                write_value(&map[k.as_str()], indent + 1, out);
                if i + 1 < keys.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(indent, out);
            out.push('}');
        }
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
        Value::String(s) => write_str(s, out),
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A JSON string, escaped as serde_json escapes it.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn pad(n: usize, out: &mut String) {
    for _ in 0..n {
        out.push_str("  ");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_does() {
        for s in [
            "plain",
            "q\"b\\s",
            "\n\r\t\u{8}\u{c}\u{1}\u{1f}",
            "é ☃ \u{7f}",
        ] {
            let mut ours = String::new();
            write_str(s, &mut ours);
            assert_eq!(ours, serde_json::to_string(s).unwrap());
        }
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
