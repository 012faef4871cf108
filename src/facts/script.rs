//! A launcher that is a script (`#!`): the seal pins the script's bytes,
//! not the interpreter that runs it nor what it starts. npm installs Codex
//! as such a script (`@openai/codex/bin/codex.js`, run by `node`), which
//! starts a native binary of another package; pinning the script alone
//! would leave the program that actually runs unpinned. So compile warns,
//! naming the interpreter and, for npm's Codex, the native binary to point
//! `launcher.path` at instead.

use super::host::{Host, Kind};
use crate::diag::{quote, Diagnostic};

/// The most of a launcher read to find its `#!` line.
const HEAD: u64 = 1 << 20;

/// The warning for a launcher whose last file (`path`) is a script.
pub(super) fn script_warning(path: &str, host: &dyn Host) -> Option<Diagnostic> {
    let bytes = host.read_at_most(path, HEAD)?;
    let line = bytes.strip_prefix(b"#!")?;
    let end = line.iter().position(|b| *b == b'\n').unwrap_or(line.len());
    let interpreter = String::from_utf8_lossy(&line[..end]).trim().to_string();
    let native = npm_codex_native(path, host);
    let mut d = Diagnostic::warning(
        crate::diag::code::LAUNCHER_SCRIPT,
        format!(
            "the launcher {} is a script run by `{}`: the seal pins the script's bytes, not the interpreter nor the program the script starts",
            quote(path),
            crate::diag::visible(&interpreter)
        ),
    )
    .label("a `#!` script");
    d = match native {
        // In full (a shortened path is no use to copy).
        Some((binary, tools)) => d.help(format!(
            "this is npm's Codex: point `launcher.path` at the native binary it starts, `{}` (its bundled tools are in `{}`: where a denied root holds them, the seal shows that package read-only with the binary)",
            crate::diag::visible(&binary),
            crate::diag::visible(&tools)
        )),
        None => d.help(
            "point `launcher.path` at the program the script starts, so that what runs is what the seal pins",
        ),
    };
    Some(d)
}

/// npm's native Codex, `.../vendor/<triple>/bin/codex`: its package
/// directory `.../vendor/<triple>`, which holds what it runs from beside
/// it (`codex-path/rg`, `codex-resources/`). A function of the path alone:
/// the IR asks it too, to re-allow that directory with the launcher.
pub fn npm_codex_package(binary: &str) -> Option<&str> {
    let package = binary.strip_suffix("/bin/codex")?;
    let (vendor, triple) = package.rsplit_once('/')?;
    (!triple.is_empty() && vendor.ends_with("/vendor")).then_some(package)
}

/// npm's Codex: for `.../node_modules/@openai/codex/bin/codex.js`, the
/// native binary of this machine's platform package and its bundled tools'
/// directory, where they exist (the platform package beside the launcher's,
/// or inside it).
fn npm_codex_native(path: &str, host: &dyn Host) -> Option<(String, String)> {
    let package = path.strip_suffix("/bin/codex.js")?;
    let modules = package.strip_suffix("/@openai/codex")?;
    let (platform, triple) = match std::env::consts::ARCH {
        "x86_64" => ("codex-linux-x64", "x86_64-unknown-linux-musl"),
        "aarch64" => ("codex-linux-arm64", "aarch64-unknown-linux-musl"),
        _ => return None,
    };
    let candidates = [
        format!("{modules}/@openai/{platform}/vendor/{triple}"),
        format!("{package}/node_modules/@openai/{platform}/vendor/{triple}"),
        format!("{package}/vendor/{triple}"),
    ];
    candidates.iter().find_map(|vendor| {
        ["bin/codex", "codex/codex"].iter().find_map(|b| {
            let binary = format!("{vendor}/{b}");
            (host.lstat(&binary) == Some(Kind::File))
                .then(|| (binary, format!("{vendor}/codex-path")))
        })
    })
}
