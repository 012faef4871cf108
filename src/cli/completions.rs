//! `sealc completions`: a shell completion script, by clap_complete.

use std::io::Write;

use clap::CommandFactory;

use super::{Cli, BAD_INPUT, OK};

/// `--help`'s closing sections: the exit codes from [`crate::exit::COMPLETIONS`].
pub(super) fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::COMPLETIONS,
        "\n\
Example:
  sealc completions bash > ~/.local/share/bash-completion/completions/sealc",
    )
}

/// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The shell.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    // The internal commands (`__init`, `__confine`) are hidden from help,
    // but clap_complete would still offer them: leave them out.
    let full = Cli::command();
    let mut cmd = clap::Command::new("sealc")
        .version(env!("CARGO_PKG_VERSION"))
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "sealc", &mut script);
    match out.write_all(&script) {
        Ok(()) => OK,
        Err(e) => {
            let _ = writeln!(err, "error: cannot write the completion script: {e}");
            BAD_INPUT
        }
    }
}
