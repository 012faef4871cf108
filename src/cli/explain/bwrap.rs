//! `sealc explain` on a `seal.bwrap.json`: the mount model's answer, the
//! step that decides, and its spec entry.

use super::*;

/// `sealc explain seal.bwrap.json ...`: the mount model's answer, the
/// step that decides it, and the spec entry that step comes from.
#[allow(clippy::too_many_arguments)]
pub(super) fn explain_bwrap(
    profile: &Path,
    text: &str,
    op: &str,
    target: &Target,
    to: Option<&str>,
    checked: &Checked,
    format: Format,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    use crate::mounts::Question;
    let model = match crate::mounts::Model::from_artifact(text.as_bytes()) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: {} is not a readable seal.bwrap.json: {e}",
                quote(&profile.display().to_string())
            );
            return BAD_INPUT;
        }
    };
    let seal = crate::backend::BWRAP;
    let mut said = Said::new(seal, op, target, to, checked);
    let question = crate::mounts::question_of(op);
    let answer = match target {
        Target::Path(p) => model.ask(op, p, to),
        Target::Remote { host, port } if question == Some(Question::Connect) => {
            Some(model.connect(host, *port))
        }
        Target::Remote { .. } | Target::Name { .. } => None,
    };
    let (code, mut text_out) = match answer {
        Some(a) => {
            let mut named = model.steps_named(&a).into_iter().map(|s| By {
                line: None,
                rule: s.text.clone(),
                source: seal,
                spec_entry: s.spec.clone(),
                step: Some(s.number),
                why: (!s.why.is_empty()).then(|| s.why.clone()),
            });
            said.answer = if a.allowed { "allow" } else { "deny" };
            said.decided_by = named.next();
            said.also = named.collect();
            said.detail = Some(a.why.clone());
            let mut t = format!("{}\n  decided by {}\n", said.answer, a.why);
            let by: Vec<&By> = said.decided_by.iter().chain(&said.also).collect();
            t.push_str(&entry_lines(&by));
            (OK, t)
        }
        None => {
            let how = match (question, target, to) {
                (Some(Question::Move(_)), Target::Path(_), None) => {
                    format!("`{op}` needs the new name: `--to PATH`")
                }
                (Some(Question::Connect), Target::Path(_), _) => {
                    format!("`{op}` is asked of an endpoint: `--remote HOST:PORT`")
                }
                (Some(_), Target::Path(_), _) => {
                    format!("`{op}` takes one path, without `--to`")
                }
                (Some(_), Target::Remote { .. }, _) => {
                    format!("seal.bwrap.json answers `{op}` on a path, not an endpoint")
                }
                (Some(_), Target::Name { .. }, _) => {
                    format!("seal.bwrap.json answers `{op}` on a path, not a name")
                }
                (None, _, _) => format!(
                    "seal.bwrap.json does not model `{op}` (a seatbelt profile does; `sealc explain --list-ops` lists what each answers)"
                ),
            };
            said.detail = Some(how.clone());
            said.undetermined = Some(Undetermined {
                construct: op.to_string(),
                line: None,
            });
            (UNDECIDED, format!("undetermined\n  {how}\n"))
        }
    };
    checked.annotate(&mut text_out);
    write_said(&said, text_out, format, out);
    code
}
