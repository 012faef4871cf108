//! `exec.reset`: the write roots `sealc exec` empties before each run.

use super::*;

impl Lower<'_> {
    /// Each entry must be a write root of the seal (by its path as
    /// written), holding no other root that exists: emptying it would
    /// remove that root, and the next run's host check would refuse. The
    /// Codex home's config is no such root: `sealc exec` makes that home
    /// fresh for every run, after the reset (which refuses to remove one an
    /// earlier run left, unless `--force`).
    pub(super) fn reset(&mut self, spec: &Spec, roots: &[Root]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for entry in &spec.exec.reset {
            let Some(p) = self.path(entry, "`exec.reset`") else {
                continue;
            };
            let p = normalize(&p);
            let Some(w) = roots.iter().find(|r| {
                r.kind == RootKind::Write && r.protect.is_none() && normalize(&r.path) == p
            }) else {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::EXEC_RESET,
                        format!(
                            "{} in `exec.reset` is not a write root of the seal",
                            quote(&p)
                        ),
                    )
                    .at(entry.span.clone())
                    .label("not an entry of `filesystem.write`")
                    .help("add it to `filesystem.write`, or remove it from `exec.reset`"),
                );
                continue;
            };
            let holds = |r: &Root| {
                !std::ptr::eq(r, w)
                    && r.real.is_some()
                    && r.protect.as_ref().map(|p| p.standing) != Some(Standing::CodexConfig)
                    && !r.made
                    && (is_within(&r.path, &w.path)
                        || matches!((&r.real, &w.real), (Some(a), Some(b)) if is_within(a, b)))
            };
            if let Some(r) = roots.iter().find(|r| holds(r)) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::EXEC_RESET,
                        format!(
                            "{} in `exec.reset` holds the root {} ({}), which exists: emptying it before each run would remove that root",
                            quote(&p),
                            quote(&r.path),
                            r.entry()
                        ),
                    )
                    .at(entry.span.clone())
                    .label("emptied before each run")
                    .help("reset a write root that holds no other root that exists (keep the other root beside it)"),
                );
                continue;
            }
            if !out.contains(&p) {
                out.push(p);
            }
        }
        // Sorted, as the IR is: two specs that list the same roots in
        // another order reset, show and compare alike.
        out.sort();
        out
    }
}
