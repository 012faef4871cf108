//! SBPL, read back: a reader (`parse`, of the language `grammar/sbpl.pest` defines) and an
//! evaluator (`eval`) that answers "is this operation on this path or
//! endpoint allowed?" under both readings of seatbelt precedence, so sealc's
//! profiles can be proved off macOS.

pub mod eval;
pub mod origin;
pub mod parse;
mod regex;
