//! sealc: a compiler for sandbox policy.
//!
//! The pipeline, one module per stage:
//!
//! ```text
//! spec.toml ─parse─▶ Spec ─resolve(host)─▶ Facts ─lower─▶ Ir ─render─▶ artifacts ─▶ record
//! ```
//!
//! [`spec`] parses, [`facts`] is the only stage that reads the host, [`ir`]
//! validates and normalizes, [`backend`] renders, [`prove`] reads the
//! rendered seal back and proves the spec's assertions on it, [`record`]
//! binds it all.
//! [`cli`] is the only module that prints.
// `unsafe` is denied everywhere but where a platform call needs it, in the
// runtime (`exec/bridge.rs`, `exec/wait.rs`, `exec/outcome.rs`,
// `exec/idmap.rs`, `exec/mcp.rs`, `exec/probe.rs`, `exec/inside.rs`,
// `exec/inside/landlock.rs`, `exec/inside/tree.rs`: descriptors taken over
// from their raw numbers, `pre_exec` hooks, and libc calls rustix does not
// wrap, such as `syscall`, `unshare`, `fork`, `waitid`, `getrusage` and
// `kill`), each allowed at its use and commented there; and `heap.rs`,
// glibc's `mallopt` and a heap on huge pages for a short command. The
// compiler's stages are safe code.
#![deny(unsafe_code)]

pub mod absent;
pub mod agent;
pub mod attest;
pub mod audit;
pub mod backend;
pub mod canonical;
pub mod cli;
pub mod describe;
pub mod diag;
pub mod digest;
pub mod doctor;
pub mod drift;
pub mod exec;
pub mod exit;
pub mod facts;
pub mod failure;
pub mod heap;
pub mod hostfs;
pub mod ipc;
pub mod ir;
pub mod known;
pub mod limit;
pub mod lint;
pub mod mounts;
pub mod netpolicy;
pub mod ops;
pub mod paths;
pub mod platform;
pub mod prove;
pub mod proxy;
pub mod query;
pub mod record;
pub mod refusals;
pub mod ruleset;
pub mod run;
pub mod sbpl;
pub mod signature;
pub mod signers;
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
    /// Every output file by relative path, the record (`seal.json`) included.
    pub files: BTreeMap<String, Vec<u8>>,
    pub record: Record,
    pub warnings: Diagnostics,
}

impl Compiled {
    /// The host facts the seal was compiled with: the record's.
    pub fn facts(&self) -> &Facts {
        &self.record.facts
    }
}

/// Compile spec text on a host: parse, resolve facts, lower, render, record.
pub fn compile(
    spec_file: &str,
    src: &str,
    flags: &VarFlags,
    host: &dyn Host,
) -> Result<Compiled, Diagnostics> {
    compile_for(spec_file, src, flags, None, host)
}

/// [`compile`] for a target platform given on the command line
/// (`--platform`), over the spec's `target.platform`; it is recorded in the
/// facts, so `verify` recompiles for the same target.
pub fn compile_for(
    spec_file: &str,
    src: &str,
    flags: &VarFlags,
    platform: Option<spec::Platform>,
    host: &dyn Host,
) -> Result<Compiled, Diagnostics> {
    let spec = spec::parse(src)?;
    let (facts, warnings) = facts::gather_for(&spec, src, flags, platform, host)?;
    let (ir, lowered) = ir::lower(&spec, src, &facts)?;
    // What `sealc lint` would warn about, so nothing is recorded without a
    // word (a `pass` that looks like a secret above all). It reads the IR
    // only, as the renderers do, so a big seal looks for smells on a second
    // thread while this one renders: the same findings, in the same order.
    let (files, smells) = std::thread::scope(|s| {
        if ir.roots.len() < backend::PARALLEL_FROM {
            return (render_and_prove(&ir), lint::smells_of(&spec, &ir));
        }
        // Where no thread can be had (a limit on processes or memory),
        // the smells are looked for on this one, after rendering.
        let Ok(smells) =
            std::thread::Builder::new().spawn_scoped(s, || lint::smells_of(&spec, &ir))
        else {
            return (render_and_prove(&ir), lint::smells_of(&spec, &ir));
        };
        let files = render_and_prove(&ir);
        // A panic there is this compile's panic, as on one thread.
        let smells = smells
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (files, smells)
    });
    let mut c = seal(spec_file, src, ir, lowered, facts, files?);
    let mut all = warnings;
    all.extend(std::mem::take(&mut c.warnings));
    // One finding per entry: a secret-looking `pass` that is not set is
    // told once, as the secret it looks like.
    let secret_spans: Vec<_> = smells
        .0
        .iter()
        .filter(|d| d.code == crate::diag::code::LINT_SECRET_PASS)
        .filter_map(|d| d.span.clone())
        .collect();
    all.0.retain(|d| {
        d.code != crate::diag::code::ENV_ABSENT
            || d.span.as_ref().is_none_or(|s| !secret_spans.contains(s))
    });
    all.0.extend(
        smells
            .0
            .into_iter()
            .map(|d| recorded_now(d, &spec, c.facts())),
    );
    c.warnings = all.sorted();
    Ok(c)
}

/// The files a `pass` value is written into.
pub const PASS_VALUE_FILES: [&str; 3] = [backend::ENV, record::FILE, backend::CODEX];

/// The `pass` names that look like secrets and whose value this compile
/// recorded: [`PASS_VALUE_FILES`] are then written readable by their owner
/// only.
pub fn recorded_secret_looking(facts: &Facts) -> Vec<&str> {
    facts
        .env
        .iter()
        .filter(|(k, v)| v.is_some() && spec::looks_secret(k))
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Lint's secret-looking `pass` finding, said as it stands after this
/// compile: the value is recorded (or, not set, was not).
fn recorded_now(d: diag::Diagnostic, spec: &spec::Spec, facts: &Facts) -> diag::Diagnostic {
    if d.code != crate::diag::code::LINT_SECRET_PASS {
        return d;
    }
    let Some(name) = spec
        .env
        .pass
        .iter()
        .find(|p| d.span.as_ref() == Some(&p.span))
        .map(|p| p.value.as_str())
    else {
        return d;
    };
    let [env, rec, codex] = PASS_VALUE_FILES;
    match facts.env.get(name) {
        Some(Some(_)) => diag::Diagnostic {
            label: Some(format!(
                "its value is recorded in {env}, {rec} and {codex}, written readable by you only (mode 0600)"
            ).into()),
            help: Some(format!(
                "list `{name}` under `env.secret` instead (the runner supplies it, nothing records it), compile again, and delete copies of these files made meanwhile"
            ).into()),
            ..d
        },
        _ => diag::Diagnostic {
            label: Some(format!(
                "not set while compiling, so nothing was recorded; once set, its value would be written to {env}, {rec} and {codex}"
            ).into()),
            ..d
        },
    }
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
    let files = render_and_prove(&ir)?;
    Ok(seal(spec_file, src, ir, warnings, facts, files))
}

/// Every artifact of the IR, and the seal's assertions proved on them.
fn render_and_prove(ir: &Ir) -> Result<BTreeMap<String, Vec<u8>>, Diagnostics> {
    let files = backend::render_all(ir);
    prove::assertions(ir, &files)?;
    prove::codex_profile(ir, &files)?;
    Ok(files)
}

/// The record over the artifacts, and the compiled seal.
fn seal(
    spec_file: &str,
    src: &str,
    ir: Ir,
    warnings: Diagnostics,
    facts: Facts,
    mut files: BTreeMap<String, Vec<u8>>,
) -> Compiled {
    let argv = backend::argv_prefix(&ir);
    let (record, bytes) = Record::with_bytes(spec_file, src, facts, &files, argv);
    files.insert(record::FILE.to_string(), bytes.into_bytes());
    Compiled {
        ir,
        files,
        record,
        warnings,
    }
}
