//! `sealc explain` on a `seal.landlock.json`: the Landlock rules' answer,
//! read back as Landlock applies them, and the rule that decides.

use super::*;

/// `sealc explain seal.landlock.json ...`: what the rules grant.
#[allow(clippy::too_many_arguments)]
pub(super) fn explain_landlock(
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
    let model = match crate::ruleset::Model::from_artifact(text.as_bytes()) {
        Ok(m) => m,
        Err(e) => {
            let _ = writeln!(
                err,
                "error: {} is not a readable seal.landlock.json: {e}",
                quote(&profile.display().to_string())
            );
            return BAD_INPUT;
        }
    };
    let seal = crate::backend::LANDLOCK;
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
            said.answer = if a.allowed { "allow" } else { "deny" };
            said.detail = Some(a.why.clone());
            (OK, format!("{}\n  decided by {}\n", said.answer, a.why))
        }
        None => {
            let how = format!(
                "seal.landlock.json does not model `{op}` on what was asked (`sealc explain --list-ops` lists what each seal answers)"
            );
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
