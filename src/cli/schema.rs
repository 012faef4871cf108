//! `sealc schema`: the JSON Schemas (also committed under schemas/).

use std::io::Write;

use super::OK;

/// `--help`'s closing sections: the exit codes from [`crate::exit::SCHEMA`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::SCHEMA,
        "\n\
Example:
  sealc schema spec > seal-spec.schema.json",
    )
}

/// Print a JSON Schema (also committed under schemas/).
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// Which schema.
    #[arg(value_enum, default_value = "spec")]
    which: Which,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Which {
    Spec,
    Record,
}

pub(super) fn run(a: Args, out: &mut dyn Write, _err: &mut dyn Write) -> i32 {
    let v = match a.which {
        Which::Spec => crate::spec::json_schema(),
        Which::Record => crate::record::json_schema(),
    };
    let _ = write!(out, "{}", crate::record::canonical_json(&v));
    OK
}
