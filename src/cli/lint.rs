//! `sealc lint`: check a spec without a host.

use std::io::Write;
use std::path::PathBuf;

use super::render_diagnostics;
use super::{Format, PlatformSel, BAD_INPUT, DIFFERS, OK};
use crate::diag::{quote, Diagnostic};

/// `--help`'s closing sections: the exit codes from [`crate::exit::LINT`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::LINT,
        "\n\
Example:
  sealc lint seal.toml --platform both",
    )
}

/// Check a spec without a host: the JSON Schema, the compiler's checks, and advice.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The seal spec (TOML).
    spec: PathBuf,
    /// Also report where the seal for this platform (or either) cannot
    /// mean what the other one means (docs/platform-differences.md).
    #[arg(long, value_enum)]
    platform: Option<PlatformSel>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let Args {
        spec,
        platform,
        format,
    } = a;
    let display = spec.display().to_string();
    let src = match crate::hostfs::read_text(&spec, crate::hostfs::MAX_SPEC) {
        Ok(s) => s,
        Err(e) => {
            let d = Diagnostic::error(
                crate::diag::code::IO_READ,
                format!("cannot read spec {}: {e}", quote(&display)),
            );
            let _ = write!(err, "{}", render_diagnostics(&d.into(), &display, ""));
            return BAD_INPUT;
        }
    };
    let diags = crate::lint::lint_for(&src, platform.map(Into::into));
    match format {
        Format::Text => {
            let text = crate::diag::Render {
                file: &display,
                src: &src,
                color: super::color(),
                all_in: Some("`--format json`"),
            }
            .render(&diags);
            let _ = write!(out, "{text}");
            let count = |sev| diags.0.iter().filter(|d| d.severity == sev).count();
            let _ = (!super::quiet()).then(|| {
                writeln!(
                    out,
                    "{display}: {} error(s), {} warning(s), {} advice",
                    count(crate::diag::Severity::Error),
                    count(crate::diag::Severity::Warning),
                    count(crate::diag::Severity::Advice)
                )
            });
        }
        Format::Json => {
            let _ = write!(out, "{}", crate::lint::to_json(&diags, &display, &src));
        }
    }
    if diags.has_errors() {
        DIFFERS
    } else {
        OK
    }
}
