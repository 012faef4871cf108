//! `sealc init`: write a commented starter spec.
//!
//! The spec is a committed template (`starter.toml`, so its comments are
//! reviewed as a file) with three kinds of variable part, filled in here:
//! lines marked `@codex ` or `@plain ` are kept (without the mark) for
//! `--agent codex` or without an agent, and `@platform@` / `@schema@` become
//! TOML strings rendered by the `toml` crate. Nothing else varies, so the
//! output is a function of the flags alone.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::render_diagnostics;
use super::{PlatformArg, BAD_INPUT, DIFFERS, OK};
use crate::diag::{quote, Diagnostic};

const TEMPLATE: &str = include_str!("starter.toml");

/// Where the `#:schema` line points: the file `sealc schema spec` writes,
/// beside the spec (the template's second line says how to make it).
pub(super) const SCHEMA_REF: &str = "./seal-spec.schema.json";

/// The platform this sealc was built for, `init`'s default.
const HOST_PLATFORM: &str = if cfg!(target_os = "macos") {
    "macos"
} else {
    "linux"
};

/// `--help`'s closing sections: the exit codes from [`crate::exit::INIT`].
pub(super) fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::INIT,
        "\n\
Example:
  sealc init --agent codex && sealc lint seal.toml --platform both",
    )
}

/// Write a commented starter spec: an agent in one checkout, its
/// credentials denied, an env allowlist and limits.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The agent the seal is for: `codex` adds its launcher, the
    /// `api.openai.com:443` allowlist, the `OPENAI_API_KEY` secret and a
    /// `[codex]` config. Without it: no network.
    #[arg(long, value_enum)]
    agent: Option<Agent>,
    /// The target written to `[target] platform` (default: this build's).
    #[arg(long, value_enum, default_value = HOST_PLATFORM)]
    platform: PlatformArg,
    /// The file to write, `-` for stdout.
    #[arg(long, value_name = "FILE", default_value = "seal.toml")]
    out: PathBuf,
    /// Replace an existing file that differs.
    #[arg(long)]
    force: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Agent {
    Codex,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let text = starter(a.agent, a.platform.into());
    if a.out.as_os_str() == "-" {
        let _ = write!(out, "{text}");
        return OK;
    }
    let display = a.out.display().to_string();
    let fail = |err: &mut dyn Write, d: Diagnostic, code: i32| {
        let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, ""));
        code
    };
    match crate::hostfs::read_path(&a.out, crate::hostfs::MAX_SPEC) {
        Ok(existing) if existing == text.as_bytes() => {
            if !super::quiet() {
                let _ = writeln!(err, "{display} already holds this starter spec");
            }
            return OK;
        }
        Ok(_) if !a.force => {
            let d = Diagnostic::error(
                crate::diag::code::OUT_DIFFERS,
                format!("{} exists and differs from the starter spec", quote(&display)),
            )
            .help("pass `--force` to replace it, `--out FILE` to write elsewhere, or `--out -` for stdout");
            return fail(err, d, DIFFERS);
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            let d = Diagnostic::error(
                crate::diag::code::IO_READ,
                format!("cannot read {}: {e}", quote(&display)),
            );
            return fail(err, d, BAD_INPUT);
        }
    }
    if let Err(e) = write_atomically(&a.out, text.as_bytes()) {
        let d = Diagnostic::error(
            crate::diag::code::IO_WRITE,
            format!("cannot write {}: {e}", quote(&display)),
        )
        .help("check that the directory exists and is writable");
        return fail(err, d, BAD_INPUT);
    }
    if super::quiet() {
        return OK;
    }
    let _ = writeln!(err, "wrote {display}; next:");
    let _ = writeln!(
        err,
        "  sealc schema spec > seal-spec.schema.json   # for your editor"
    );
    let _ = writeln!(err, "  sealc lint {display} --platform both");
    let mut compile = format!("  sealc compile {display} --var checkout=\"$PWD\"");
    let name = if a.agent == Some(Agent::Codex) {
        compile.push_str(" --var codex=\"$(command -v codex)\"");
        "codex-agent"
    } else {
        "agent"
    };
    // Outside the checkout (a write root), where the agent cannot rewrite it.
    compile.push_str(&format!(" --out ~/.local/state/sealc/{name}"));
    let _ = writeln!(err, "{compile}");
    let _ = writeln!(
        err,
        "  sealc show ~/.local/state/sealc/{name}/seal.json   # then `sealc exec ... --expect <its binding> -- CMD`"
    );
    OK
}

/// A temp file of a random name beside the target, never through a link,
/// then a rename ([`crate::hostfs`]).
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::hostfs::Target::open(path)?.write(bytes, 0o644)
}

/// The starter spec for these choices.
pub(super) fn starter(agent: Option<Agent>, platform: crate::spec::Platform) -> String {
    let keep = match agent {
        Some(Agent::Codex) => "@codex",
        None => "@plain",
    };
    let toml_string = |s: &str| toml::Value::String(s.to_string()).to_string();
    let mut text = String::with_capacity(TEMPLATE.len());
    for line in TEMPLATE.lines() {
        let line = match line.split_once(' ').filter(|(m, _)| m.starts_with('@')) {
            Some((mark, rest)) if mark == keep => rest,
            Some(_) => continue,
            None if line.starts_with('@') && line == keep => "",
            None if line.starts_with('@') => continue,
            None => line,
        };
        let line = line
            .replace("@platform@", &toml_string(platform.as_str()))
            .replace("@schema@", SCHEMA_REF);
        text.push_str(&line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Platform;

    fn all() -> Vec<(Option<Agent>, Platform, String)> {
        let mut v = Vec::new();
        for agent in [None, Some(Agent::Codex)] {
            for p in [Platform::Linux, Platform::Macos] {
                v.push((agent, p, starter(agent, p)));
            }
        }
        v
    }

    #[test]
    fn init_every_starter_parses_with_no_mark_left() {
        for (agent, p, text) in all() {
            assert!(
                text.starts_with(&format!("#:schema {SCHEMA_REF}\n")),
                "{text}"
            );
            assert!(
                !text.contains('@'),
                "a mark is left ({agent:?}, {p:?}):\n{text}"
            );
            let spec = crate::spec::parse(&text)
                .unwrap_or_else(|d| panic!("{agent:?} {p:?}: {d:?}\n{text}"));
            assert_eq!(spec.target.platform.map(|s| s.value), Some(p));
            assert_eq!(spec.codex.span.is_some(), agent.is_some());
            assert_eq!(spec.launcher.is_some(), agent.is_some());
        }
    }

    #[test]
    fn init_starters_lint_without_errors_or_warnings() {
        for (agent, p, text) in all() {
            let diags = crate::lint::lint_for(&text, Some(crate::platform::Select::Both));
            let loud: Vec<_> = diags
                .0
                .iter()
                .filter(|d| d.severity != crate::diag::Severity::Advice)
                .map(|d| format!("{}: {}", d.code, d.message))
                .collect();
            assert!(loud.is_empty(), "{agent:?} {p:?}: {loud:#?}");
        }
    }

    #[test]
    fn init_the_template_is_deterministic() {
        assert_eq!(all(), all());
    }
}
