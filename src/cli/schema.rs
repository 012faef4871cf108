//! `sealc schema`: the JSON Schemas (also committed under schemas/).

use std::io::Write;

use super::OK;

const AFTER_HELP: &str = "\
Exit codes:
  0  the schema was printed
  2  bad input: an unknown schema name

Example:
  sealc schema spec > seal-spec.schema.json";

/// Print a JSON Schema (also committed under schemas/).
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
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
