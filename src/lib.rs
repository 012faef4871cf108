//! sealc: a compiler for sandbox policy.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! spec.toml ─parse─▶ Spec ─resolve(host)─▶ Facts ─lower─▶ Ir ─render─▶ artifacts ─▶ record
//! ```
//!
//! [`spec`] parses, [`facts`] is the only stage that reads the host, [`ir`]
//! validates and normalizes, [`backend`] renders, [`record`] binds it all.
//! [`cli`] is the only module that prints.
#![forbid(unsafe_code)]

pub mod backend;
pub mod cli;
pub mod diag;
pub mod digest;
pub mod facts;
pub mod ir;
pub mod lint;
pub mod record;
pub mod spec;
pub mod verify;

use std::collections::BTreeMap;

use diag::Diagnostics;
use facts::{Facts, Host, VarFlags};
use ir::Ir;
use record::Record;

/// The result of a compile: the IR, the facts, every artifact and the record.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub ir: Ir,
    pub facts: Facts,
    /// Every output file by relative path, the record (`seal.json`) included.
    pub files: BTreeMap<String, Vec<u8>>,
    pub record: Record,
    pub warnings: Diagnostics,
}

/// Compile spec text on a host: parse, resolve facts, lower, render, record.
pub fn compile(
    spec_file: &str,
    src: &str,
    flags: &VarFlags,
    host: &dyn Host,
) -> Result<Compiled, Diagnostics> {
    let spec = spec::parse(src)?;
    let (facts, warnings) = facts::gather(&spec, src, flags, host)?;
    let mut c = compile_parsed(spec_file, src, &spec, facts)?;
    let mut all = warnings;
    all.extend(c.warnings);
    c.warnings = all.sorted();
    Ok(c)
}

/// Compile spec text against recorded facts, reading nothing from the host.
pub fn compile_with_facts(
    spec_file: &str,
    src: &str,
    facts: Facts,
) -> Result<Compiled, Diagnostics> {
    let spec = spec::parse(src)?;
    compile_parsed(spec_file, src, &spec, facts)
}

fn compile_parsed(
    spec_file: &str,
    src: &str,
    spec: &spec::Spec,
    facts: Facts,
) -> Result<Compiled, Diagnostics> {
    let (ir, warnings) = ir::lower(spec, src, &facts)?;
    let mut files = backend::render_all(&ir);
    let argv = backend::env::argv_prefix(&ir);
    let (record, bytes) = Record::with_bytes(spec_file, src, &facts, &files, argv);
    files.insert(record::FILE.to_string(), bytes.into_bytes());
    Ok(Compiled {
        ir,
        facts,
        files,
        record,
        warnings,
    })
}
