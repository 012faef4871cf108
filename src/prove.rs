//! Proving: the compiled seal's bytes are read back (the seatbelt profile
//! with the SBPL grammar, the bubblewrap plan as a mount model) and every
//! `[[assert]]` is evaluated on them; a Codex permission profile passes the
//! strict `[permissions]` check. No IO: bytes in, diagnostics out.

use std::collections::BTreeMap;

use crate::diag::{self, Diagnostics};
use crate::ir::{self, Ir};
use crate::{backend, mounts, ruleset, sbpl, spec};

/// A Linux seal read back: the bubblewrap mount model or the Landlock rules.
trait ReadBack {
    /// The artifact's file name, as answers name it.
    fn file(&self) -> &'static str;
    fn ask(&self, op: &str, path: &str) -> Option<mounts::Answer>;
    fn connect(&self, host: &str, port: u16) -> mounts::Answer;
}

impl ReadBack for mounts::Model {
    fn file(&self) -> &'static str {
        backend::BWRAP
    }
    fn ask(&self, op: &str, path: &str) -> Option<mounts::Answer> {
        mounts::Model::ask(self, op, path, None)
    }
    fn connect(&self, host: &str, port: u16) -> mounts::Answer {
        mounts::Model::connect(self, host, port)
    }
}

impl ReadBack for ruleset::Model {
    fn file(&self) -> &'static str {
        backend::LANDLOCK
    }
    fn ask(&self, op: &str, path: &str) -> Option<mounts::Answer> {
        ruleset::Model::ask(self, op, path, None)
    }
    fn connect(&self, host: &str, port: u16) -> mounts::Answer {
        ruleset::Model::connect(self, host, port)
    }
}

/// Evaluate every `[[assert]]` on the compiled seal's bytes, read back: the
/// seatbelt profile (parsed with the SBPL grammar) or the bubblewrap argv
/// (as a mount model). A false, ambiguous or undetermined assertion is an
/// error that names the subject, the operation and the deciding rule.
pub fn assertions(ir: &Ir, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Diagnostics> {
    if ir.asserts.is_empty() {
        return Ok(());
    }
    let unreadable = |file: &str, e: String| {
        Diagnostics::from(diag::Diagnostic::error(
            crate::diag::code::ASSERT_FAILED,
            format!("the compiled `{file}` does not read back: {e}"),
        ))
    };
    let seal = backend::seal_name(ir);
    let bytes = files.get(seal).map(Vec::as_slice).unwrap_or_default();
    // The profile's text and the arena its lists are read into: the model
    // read from it borrows both.
    let text;
    let arena;
    let judge: Box<Judge<'_>> = match ir.platform {
        spec::Platform::Linux if seal == backend::LANDLOCK => {
            let model = ruleset::Model::from_artifact(bytes).map_err(|e| unreadable(seal, e))?;
            Box::new(move |a, t| judge_read_back(&model, a, t))
        }
        spec::Platform::Macos => {
            // sealc's profiles are UTF-8: checked whole (a fast scan), and
            // only a profile that is not is read with replacements.
            text = match std::str::from_utf8(bytes) {
                Ok(t) => std::borrow::Cow::Borrowed(t),
                Err(_) => String::from_utf8_lossy(bytes),
            };
            // Room for the lists of one of sealc's profiles in one block
            // (with their comments, they take about 2.5 bytes a byte read).
            arena = sbpl::parse::Arena::with_capacity(text.len() * 3);
            let parsed =
                sbpl::parse::parse(&text, &arena).map_err(|e| unreadable(seal, e.to_string()))?;
            // Only the rules that can decide the operations asserted are
            // evaluated; the rest keep their operations, unread.
            let ops: Vec<&str> = ir.asserts.iter().map(|a| a.op.as_str()).collect();
            let model = sbpl::eval::Model::for_operations(&parsed, &Default::default(), &ops);
            Box::new(move |a, t| judge_sbpl(&model, a, t))
        }
        spec::Platform::Linux => {
            let model = mounts::Model::from_artifact(bytes).map_err(|e| unreadable(seal, e))?;
            Box::new(move |a, t| judge_read_back(&model, a, t))
        }
    };
    let mut diags = Diagnostics::default();
    for a in &ir.asserts {
        for subject in &a.subjects {
            let target = match subject {
                ir::Subject::Path(p) => Target::Path(p.clone()),
                ir::Subject::Name(n) => match crate::ops::NameKind::of(&a.op) {
                    Some(kind) => Target::Name {
                        kind,
                        name: n.clone(),
                    },
                    None => continue, // the IR refuses names for such an operation
                },
                ir::Subject::Remote(r) => {
                    let parsed = r.rsplit_once(':').and_then(|(h, p)| {
                        p.parse::<u16>()
                            .ok()
                            .map(|p| (h.trim_matches(['[', ']']).to_string(), p))
                    });
                    match parsed {
                        Some((host, port)) => Target::Remote { host, port },
                        None => {
                            diags.push(
                                diag::Diagnostic::error(
                                    crate::diag::code::ASSERT_FAILED,
                                    format!("remote {} is not `host:port`", diag::quote(r)),
                                )
                                .at(a.span.clone()),
                            );
                            continue;
                        }
                    }
                }
            };
            if let Some((message, label)) = judge(a, &target) {
                diags.push(
                    diag::Diagnostic::error(crate::diag::code::ASSERT_FAILED, message)
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

use sbpl::eval::Target;

/// One assertion on one subject: `None` when it holds, else the message and
/// the label naming the deciding rule.
type Judge<'a> = dyn Fn(&ir::AssertIr, &Target) -> Option<(String, String)> + 'a;

fn shown(t: &Target) -> String {
    match t {
        Target::Path(p) => diag::quote(p),
        Target::Remote { host, port } => diag::quote(&format!("{host}:{port}")),
        Target::Name { kind, name } => format!("the {} {}", kind.noun(), diag::quote(name)),
    }
}

fn want_of(a: &ir::AssertIr) -> &'static str {
    match a.verdict {
        ir::Verdict::Allow => "allow",
        ir::Verdict::Deny => "deny",
    }
}

/// One assertion on one subject, against the seatbelt profile.
fn judge_sbpl(
    model: &sbpl::eval::Model,
    a: &ir::AssertIr,
    target: &Target,
) -> Option<(String, String)> {
    use sbpl::eval::{Action, Verdict};
    let want = match a.verdict {
        ir::Verdict::Allow => Action::Allow,
        ir::Verdict::Deny => Action::Deny,
    };
    // The subject as answers show it, made only for an answer that fails.
    let shown = || shown(target);
    let rule_of = |d: &sbpl::eval::Decision| {
        d.rule
            .as_ref()
            .map_or("no rule (the implicit allow)".to_string(), |r| {
                format!("line {}: {}", r.line, r.text())
            })
    };
    match model.query(&a.op, target) {
        Verdict::Decided(d) if d.action == want => None,
        Verdict::Decided(d) => Some((
            format!(
                "`{} {}` on {} is false: seal.sb says {}",
                want.as_str(),
                a.op,
                shown(),
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
                shown()
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
                shown()
            ),
            format!("cannot evaluate {construct} (line {line})"),
        )),
    }
}

/// One assertion on one subject, against a Linux seal read back.
fn judge_read_back(
    model: &dyn ReadBack,
    a: &ir::AssertIr,
    target: &Target,
) -> Option<(String, String)> {
    let want = want_of(a);
    let shown = || shown(target);
    let file = model.file();
    let answer = match target {
        Target::Path(p) => match model.ask(&a.op, p) {
            Some(answer) => answer,
            None => {
                return Some((
                    format!("`{want} {}` on {} is undetermined", a.op, shown()),
                    format!("{file} does not model `{}` on one path", a.op),
                ))
            }
        },
        Target::Remote { host, port }
            if mounts::question_of(&a.op) == Some(mounts::Question::Connect) =>
        {
            model.connect(host, *port)
        }
        Target::Remote { .. } => {
            return Some((
                format!("`{want} {}` on {} is undetermined", a.op, shown()),
                format!("{file} does not model `{}` on an endpoint", a.op),
            ))
        }
        // Linux has no Mach services, Apple Events, IOKit classes or
        // preference domains: nothing of the kind can be reached, so a
        // `deny` holds and an `allow` cannot.
        Target::Name { .. } if want == "deny" => return None,
        Target::Name { kind, .. } => {
            return Some((
                format!("`{want} {}` on {} is false", a.op, shown()),
                format!("there is no {} on Linux", kind.noun()),
            ))
        }
    };
    let says = if answer.allowed { "allow" } else { "deny" };
    (says != want).then(|| {
        (
            format!(
                "`{want} {}` on {} is false: {file} says {says}",
                a.op,
                shown()
            ),
            format!("decided by {}", answer.why),
        )
    })
}

/// A Codex permission profile sealc wrote passes the strict schema of the
/// `[permissions]` section (Codex itself lets typos through).
pub fn codex_profile(ir: &Ir, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Diagnostics> {
    if !ir.codex.profile {
        return Ok(());
    }
    let text = files
        .get(backend::CODEX)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    backend::codex_profile::check_config(&text, &ir.codex.versions).map_err(|bad| {
        Diagnostics::from(
            diag::Diagnostic::error(
                crate::diag::code::CODEX_PROFILE,
                format!(
                    "the Codex permission profile fails the strict check for Codex {}: {}",
                    ir.codex.versions.join(", "),
                    bad.join("; ")
                ),
            )
            .help("change the roots the profile is made from, or use `sandbox = \"outer\"`"),
        )
    })
}
