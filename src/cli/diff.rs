//! `sealc diff`: what two seals allow differently, in policy terms.
//!
//! Each record is read strictly and recompiled from its own spec text and
//! facts (nothing is read from the host, and no artifact file is needed: an
//! old record from version control will do). A record that does not agree
//! with its own recompilation is still compared, by its spec and facts, and
//! the output says so.
//!
//! Exit codes: 0 the two allow the same; 1 they differ; 2 bad input.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use super::show::{load, Loaded};
use super::{Format, BAD_INPUT, DIFFERS, OK};
use crate::describe::{Change, Effect};
use crate::diag::{quote, render, visible};
use crate::record::canonical_json;

/// `--help`'s closing sections: the exit codes from [`crate::exit::DIFF`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::DIFF,
        "\n\
Example:
  sealc diff old/seal.json seal/seal.json",
    )
}

/// Compare what two seals allow: paths, hosts, ports, env names, limits, Codex settings.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// The record before the change (seal.json).
    old: PathBuf,
    /// The record after the change (seal.json).
    new: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let (old, new) = match (load(&a.old, None), load(&a.new, None)) {
        (Ok(o), Ok(n)) => (o, n),
        (o, n) => {
            for d in [o.err(), n.err()].into_iter().flatten() {
                let _ = write!(err, "{}", render(&d.into(), "", ""));
            }
            return BAD_INPUT;
        }
    };
    let changes = crate::describe::diff(&old.policy, &new.policy);
    fn side(
        l: &Loaded,
    ) -> (
        &str,
        &std::collections::BTreeMap<String, String>,
        &crate::describe::Policy,
    ) {
        (l.record.spec.text.as_str(), &l.record.facts.vars, &l.policy)
    }
    let only_vars = crate::describe::only_vars_differ(side(&old), side(&new));
    let text = match a.format {
        Format::Text => to_text(&a, &old, &new, &changes, only_vars.as_deref()),
        Format::Json => {
            let side = |path: &PathBuf, l: &Loaded| {
                json!({
                    "record": path.display().to_string(),
                    "seal": l.policy.seal,
                    "binding": l.record.binding,
                    "verified": l.problems.is_empty(),
                    "problems": l.problems,
                })
            };
            canonical_json(&json!({
                "schema": crate::describe::DIFF_SCHEMA,
                "old": side(&a.old, &old),
                "new": side(&a.new, &new),
                "same": changes.is_empty(),
                "only_vars": only_vars,
                "changes": changes,
            }))
        }
    };
    let _ = write!(out, "{text}");
    if changes.is_empty() {
        OK
    } else {
        DIFFERS
    }
}

fn to_text(
    a: &Args,
    old: &Loaded,
    new: &Loaded,
    changes: &[Change],
    only_vars: Option<&[crate::describe::VarChange]>,
) -> String {
    let mut out = String::new();
    for (label, path, l) in [("old", &a.old, old), ("new", &a.new, new)] {
        out.push_str(&format!(
            "{label} `{}` {} ({})\n",
            visible(&l.policy.seal),
            visible(&path.display().to_string()),
            l.record.binding
        ));
        if !l.problems.is_empty() {
            out.push_str(&format!(
                "  does not verify with this sealc (compared by its spec and facts): {}\n",
                l.problems.join("; ")
            ));
        }
    }
    if changes.is_empty() {
        let records = if old.record.binding == new.record.binding {
            "the same record"
        } else {
            "the records differ in nothing the seal allows"
        };
        out.push_str(&format!(
            "no difference: the two seals allow the same ({records})\n"
        ));
        return out;
    }
    // One spec, one policy once the vars are written back: a harness's
    // run directories, each compiled from the reviewed spec. Said first,
    // in one line; what the values change follows.
    if let Some(vars) = only_vars {
        let vars: Vec<String> = vars
            .iter()
            .map(|v| format!("`{}` {} → {}", v.name, quote(&v.old), quote(&v.new)))
            .collect();
        out.push_str(&format!(
            "only var values differ (the same spec, the same policy with each var as written): {}\n",
            vars.join(", ")
        ));
    }
    let more = changes.iter().filter(|c| c.effect == Effect::More).count();
    out.push_str(&format!(
        "{} difference{}, {more} allowing more\n",
        changes.len(),
        if changes.len() == 1 { "" } else { "s" }
    ));
    let width = changes
        .iter()
        .map(|c| c.section.as_str().len())
        .max()
        .unwrap_or(0);
    let mut last = None;
    for c in changes {
        if last != Some(c.effect) {
            out.push_str(&format!("\n{}:\n", c.effect.heading()));
            last = Some(c.effect);
        }
        out.push_str(&format!(
            "{} {:<width$}  {}\n",
            c.effect.sign(),
            c.section.as_str(),
            visible(&c.text)
        ));
    }
    out
}
