//! Lowering `[[assert]]`: each assertion's operation, subjects and verdict,
//! checked against the operation table.

use super::*;

impl Lower<'_> {
    pub(super) fn asserts(&mut self, spec: &Spec) -> Vec<AssertIr> {
        let mut out = Vec::new();
        for a in &spec.asserts {
            let shape = |msg: &str| {
                Diagnostic::error(crate::diag::code::ASSERT_SHAPE, msg.to_string())
                    .at(a.span.clone())
                    .help("write `allow = \"OP\"` or `deny = \"OP\"`, and `paths = [...]` or `remote = [...]`")
            };
            let (verdict, op) = match (&a.allow, &a.deny) {
                (Some(op), None) => (Verdict::Allow, op),
                (None, Some(op)) => (Verdict::Deny, op),
                _ => {
                    self.diags.push(shape(
                        "an `[[assert]]` names exactly one of `allow` and `deny`",
                    ));
                    continue;
                }
            };
            if crate::ops::find(&op.value).is_none() {
                // The list itself is `sealc explain --list-ops`: wrapped in
                // a diagnostic, its names would break at their hyphens.
                let (near, _) = crate::ops::unknown(&op.value);
                let list = format!(
                    "`sealc explain --list-ops` lists the {} operations modelled, and which seal answers each",
                    crate::ops::OPERATIONS.len()
                );
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::ASSERT_OP,
                        format!("{} is not an operation sealc models", quote(&op.value)),
                    )
                    .at(op.span.clone())
                    .label("not a modelled operation")
                    .help(match near {
                        Some(m) => format!("did you mean `{m}`? {list}"),
                        None => list,
                    }),
                );
                continue;
            }
            // For one platform only: left out of the other's seal.
            if let Some(p) = &a.platform {
                match p.value.as_str() {
                    "macos" | "linux" => {
                        if p.value != self.platform(spec).as_str() {
                            continue;
                        }
                    }
                    other => {
                        self.diags.push(
                            Diagnostic::error(
                                crate::diag::code::ASSERT_SHAPE,
                                format!("assertion platform {} is not `macos` or `linux`", quote(other)),
                            )
                            .at(p.span.clone())
                            .label("not a platform")
                            .help("write `platform = \"macos\"` or `platform = \"linux\"`, or leave it out to prove it on both"),
                        );
                        continue;
                    }
                }
            }
            let named = crate::ops::NameKind::of(&op.value);
            let subjects: Vec<Subject> = match (
                a.paths.is_empty(),
                a.remote.is_empty(),
                a.names.is_empty(),
            ) {
                (false, true, true) => a
                    .paths
                    .iter()
                    .filter_map(|p| self.path(p, "`assert` path").map(Subject::Path))
                    .collect(),
                (true, false, true) => a
                    .remote
                    .iter()
                    .filter_map(|r| self.subst(r).map(Subject::Remote))
                    .collect(),
                (true, true, false) if named.is_some() => a
                    .names
                    .iter()
                    .filter_map(|n| self.subst(n).map(Subject::Name))
                    .collect(),
                (true, true, false) => {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::ASSERT_SHAPE,
                            format!("{} is not applied to a name", quote(&op.value)),
                        )
                        .at(op.span.clone())
                        .label("an operation on paths or endpoints")
                        .help("`names` go with `mach-lookup`, `appleevent-send`, `iokit-open`, the `ipc-posix` and `sysctl` operations, `user-preference-read`/`-write` and `signal`; give `paths` or `remote` for this one"),
                    );
                    continue;
                }
                _ => {
                    self.diags.push(shape(
                        "an `[[assert]]` names exactly one of `paths`, `remote` and `names`, not empty",
                    ));
                    continue;
                }
            };
            out.push(AssertIr {
                verdict,
                op: op.value.clone(),
                subjects,
                span: a.span.clone(),
            });
        }
        out
    }
}
