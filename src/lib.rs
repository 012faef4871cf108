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

// pest_derive without its `std` feature names `alloc` (and so skips pest's
// per-call stack guard, a fifth of the time of reading a profile back).
extern crate alloc;

pub mod backend;
pub mod cli;
pub mod diag;
pub mod digest;
pub mod facts;
pub mod ir;
pub mod lint;
pub mod record;
pub mod sbpl;
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

/// Evaluate every `[[assert]]` on the compiled profile bytes, parsed back.
/// A false, ambiguous or undetermined assertion is an error that names the
/// subject, the operation and the deciding rule.
pub fn prove_assertions(ir: &Ir, profile: &[u8]) -> Result<(), Diagnostics> {
    use sbpl::eval::{Action, Model, Target, Verdict};
    if ir.asserts.is_empty() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(profile);
    let parsed = sbpl::parse::parse(&text).map_err(|e| {
        Diagnostics::from(diag::Diagnostic::error(
            "sealc::assert::failed",
            format!("the compiled profile does not parse back: {e}"),
        ))
    })?;
    let model = Model::new(&parsed, &Default::default());
    let mut diags = Diagnostics::default();
    for a in &ir.asserts {
        let want = match a.verdict {
            ir::Verdict::Allow => Action::Allow,
            ir::Verdict::Deny => Action::Deny,
        };
        for subject in &a.subjects {
            let (target, shown) = match subject {
                ir::Subject::Path(p) => (Target::Path(p.clone()), p.clone()),
                ir::Subject::Remote(r) => {
                    let parsed = r.rsplit_once(':').and_then(|(h, p)| {
                        p.parse::<u16>()
                            .ok()
                            .map(|p| (h.trim_matches(['[', ']']).to_string(), p))
                    });
                    match parsed {
                        Some((host, port)) => (Target::Remote { host, port }, r.clone()),
                        None => {
                            diags.push(
                                diag::Diagnostic::error(
                                    "sealc::assert::failed",
                                    format!("remote {} is not `host:port`", diag::quote(r)),
                                )
                                .at(a.span.clone()),
                            );
                            continue;
                        }
                    }
                }
            };
            let rule_of = |d: &sbpl::eval::Decision| {
                d.rule
                    .as_ref()
                    .map_or("no rule (the implicit allow)".to_string(), |r| {
                        format!("line {}: {}", r.line, r.text)
                    })
            };
            let problem = match model.query(&a.op, &target) {
                Verdict::Decided(d) if d.action == want => None,
                Verdict::Decided(d) => Some((
                    format!(
                        "`{} {}` on {} is false: seal.sb says {}",
                        want.as_str(),
                        a.op,
                        diag::quote(&shown),
                        d.action.as_str()
                    ),
                    format!("decided by {}", rule_of(&d)),
                )),
                Verdict::Ambiguous {
                    filtered_first,
                    source_order,
                } => Some((
                    format!(
                        "`{} {}` on {} is ambiguous in seal.sb",
                        want.as_str(),
                        a.op,
                        diag::quote(&shown)
                    ),
                    format!(
                        "filtered-first reading: {} by {}; source-order reading: {} by {}",
                        filtered_first.action.as_str(),
                        rule_of(&filtered_first),
                        source_order.action.as_str(),
                        rule_of(&source_order)
                    ),
                )),
                Verdict::Undetermined { construct, line } => Some((
                    format!(
                        "`{} {}` on {} is undetermined",
                        want.as_str(),
                        a.op,
                        diag::quote(&shown)
                    ),
                    format!("cannot evaluate {construct} (line {line})"),
                )),
            };
            if let Some((message, label)) = problem {
                diags.push(
                    diag::Diagnostic::error("sealc::assert::failed", message)
                        .at(a.span.clone())
                        .label(label)
                        .help("change the spec so the seal means what the assertion says, or correct the assertion"),
                );
            }
        }
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok(())
    }
}

fn compile_parsed(
    spec_file: &str,
    src: &str,
    spec: &spec::Spec,
    facts: Facts,
) -> Result<Compiled, Diagnostics> {
    let (ir, warnings) = ir::lower(spec, src, &facts)?;
    let mut files = backend::render_all(&ir);
    prove_assertions(&ir, &files[backend::SEATBELT])?;
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
