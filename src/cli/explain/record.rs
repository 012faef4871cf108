//! A record given where the seal goes: `sealc explain seal.json` answers
//! from the seal the record lists beside it.

use std::path::{Path, PathBuf};

use crate::diag::quote;

/// When `path` is a seal record (`seal.json`): the seal beside it that it
/// lists, or why there is none to explain.
pub(super) fn seal_of_record(path: &Path) -> Option<Result<PathBuf, String>> {
    let bytes = crate::hostfs::read_text(path, crate::hostfs::MAX_RECORD).ok()?;
    let v: serde_json::Value = serde_json::from_str(&bytes).ok()?;
    if v.get("schema").and_then(|s| s.as_str()) != Some(crate::record::SCHEMA) {
        return None;
    }
    let shown = quote(&path.display().to_string());
    let listed = |name: &str| {
        v.get("artifacts")
            .and_then(|a| a.as_array())
            .is_some_and(|a| {
                a.iter()
                    .any(|f| f.get("file").and_then(|f| f.as_str()) == Some(name))
            })
    };
    let Some(name) = [
        crate::backend::SEATBELT,
        crate::backend::BWRAP,
        crate::backend::LANDLOCK,
    ]
    .into_iter()
    .find(|n| listed(n)) else {
        return Some(Err(format!("the record {shown} lists no seal")));
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    Some(Ok(dir.join(name)))
}
