//! `sealc man`: manual pages (roff), by clap_mangen, with each command's
//! exit codes and example as sections of their own.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_mangen::roff::{roman, Roff};

use super::{render_diagnostics, Cli, BAD_INPUT, OK};
use crate::diag::{quote, Diagnostic};

/// `--help`'s closing sections: the exit codes from [`crate::exit::MAN`].
pub(super) fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::MAN,
        "\n\
Example:
  sealc man --dir ~/.local/share/man/man1 && man sealc-compile",
    )
}

/// Print the manual page of sealc (or of one command) as roff, or write
/// every page to a directory.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The command whose page to print (default: sealc's own).
    command: Option<String>,
    /// Write every page there instead (`sealc.1`, `sealc-compile.1`, ...).
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<PathBuf>,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let pages = pages();
    if let Some(dir) = &a.dir {
        return match write_pages(dir, &pages) {
            Ok(()) => {
                for (name, _) in pages.iter().filter(|_| !super::quiet()) {
                    let _ = writeln!(out, "{}", dir.join(name).display());
                }
                OK
            }
            Err(e) => {
                let shown = dir.display().to_string();
                let d = Diagnostic::error(
                    crate::diag::code::IO_WRITE,
                    format!("cannot write the manual pages to {}: {e}", quote(&shown)),
                )
                .help("check that the directory exists and is writable");
                let _ = write!(err, "{}", render_diagnostics(&d.into(), &shown, ""));
                BAD_INPUT
            }
        };
    }
    let want = match &a.command {
        None => "sealc.1".to_string(),
        Some(c) => format!("sealc-{c}.1"),
    };
    match pages.iter().find(|(name, _)| *name == want) {
        Some((_, page)) => {
            let _ = out.write_all(page);
            OK
        }
        None => {
            let names: Vec<&str> = pages
                .iter()
                .filter_map(|(n, _)| n.strip_prefix("sealc-")?.strip_suffix(".1"))
                .collect();
            let asked = a.command.unwrap_or_default();
            let help = match crate::diag::did_you_mean(&asked, names.iter().copied()) {
                Some(m) => format!("did you mean `{m}`?"),
                None => format!("one of `{}`", names.join("`, `")),
            };
            let _ = writeln!(
                err,
                "error: sealc has no command {}\n  help: {help}",
                quote(&asked)
            );
            BAD_INPUT
        }
    }
}

fn write_pages(dir: &Path, pages: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    let dir = crate::hostfs::Dir::create_all(dir, 0o755)?;
    for (name, bytes) in pages {
        dir.write(name.as_ref(), bytes, 0o644)?;
    }
    Ok(())
}

/// Every page: `sealc.1`, then one per visible command, by name.
fn pages() -> Vec<(String, Vec<u8>)> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    cli.build();
    let mut pages = vec![("sealc.1".to_string(), page(&cli))];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push((format!("sealc-{}.1", sub.get_name()), page(sub)));
    }
    pages
}

/// One page: clap_mangen's, then the command's after-help split at its
/// headings (`Exit codes:` becomes EXIT STATUS, `Example:` EXAMPLE), each
/// kept line for line.
fn page(cmd: &clap::Command) -> Vec<u8> {
    let after = cmd.get_after_long_help().or(cmd.get_after_help()).cloned();
    let plain = cmd.clone().after_help(None).after_long_help(None);
    let mut bytes = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = clap_mangen::Man::new(plain)
        .source(concat!("sealc ", env!("CARGO_PKG_VERSION")))
        .render(&mut bytes);
    if let Some(after) = after {
        let mut roff = Roff::default();
        let mut open = false;
        for line in after.to_string().lines() {
            if let Some(heading) = line.strip_suffix(':').filter(|h| !h.starts_with(' ')) {
                if open {
                    roff.control("fi", []);
                }
                let heading = match heading {
                    "Exit codes" => "EXIT STATUS".to_string(),
                    other => other.to_uppercase(),
                };
                roff.control("SH", [heading.as_str()]);
                roff.control("nf", []);
                open = true;
            } else if !line.is_empty() {
                roff.text([roman(line)]);
            }
        }
        if open {
            roff.control("fi", []);
        }
        let _ = roff.to_writer(&mut bytes);
    }
    bytes
}
