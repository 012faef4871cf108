//! Canonical JSON, the one form every JSON file sealc writes and digests
//! takes (the record, the env allowlist, the bubblewrap plan, reports), so
//! that the same value always has the same bytes.
//!
//! Architecture Invariant: this module imports nothing of the crate.

use serde_json::Value;

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
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            use std::fmt::Write as _;
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
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
}
