//! Resolving the spec's vars: `--var` flags, env and defaults, and the
//! paths among them made absolute against the caller's directory.

use super::*;

/// Parse `NAME=VALUE`.
pub fn parse_var_flag(s: &str) -> Result<(String, String), Diagnostic> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        split => {
            // Name the var the flag was meant for, when there is one.
            let name = match split {
                None if !s.is_empty() && !s.contains(char::is_whitespace) => s,
                _ => "NAME",
            };
            Err(Diagnostic::error(
                crate::diag::code::VAR_FLAG,
                format!(
                    "`--var {}` is not of the form NAME=VALUE",
                    crate::diag::visible(s)
                ),
            )
            .help(format!(
                "write `--var {}=VALUE`",
                crate::diag::visible(name)
            )))
        }
    }
}

/// The vars whose value is used as a path: a path of the spec (a root, the
/// launcher, a program, the workspace, an assertion's path, another var's
/// default) starts with `${name}`.
pub(super) fn path_vars(spec: &Spec) -> BTreeSet<&str> {
    let fs = &spec.filesystem;
    let mut strings: Vec<&str> = fs
        .all_roots()
        .chain(&fs.protect)
        .map(|s| s.value.as_str())
        .collect();
    strings.extend(spec.launcher.as_ref().map(|l| l.path.value.as_str()));
    strings.extend(spec.exec.sandbox_exec.as_ref().map(|s| s.value.as_str()));
    strings.extend(spec.exec.bwrap.as_ref().map(|s| s.value.as_str()));
    strings.extend(spec.exec.timeout.as_ref().map(|t| t.bin.value.as_str()));
    strings.extend(spec.codex.workspace.as_ref().map(|s| s.value.as_str()));
    strings.extend(
        spec.vars
            .values()
            .filter_map(|d| d.default.as_ref())
            .map(|s| s.value.as_str()),
    );
    for a in &spec.asserts {
        strings.extend(a.paths.iter().map(|s| s.value.as_str()));
    }
    spec.vars
        .keys()
        .map(String::as_str)
        .filter(|name| {
            // `${name}` at the start, then the end or a `/`.
            strings.iter().any(|s| {
                s.strip_prefix("${")
                    .and_then(|r| r.strip_prefix(*name))
                    .and_then(|r| r.strip_prefix('}'))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        })
        .collect()
}

/// The value of `--var name=value` for a var used as a path, as recorded:
/// a trailing `/` dropped (tab completion adds one), a relative value (`.`,
/// `ws`, `../runs/r1`) resolved against the current directory. An absolute
/// value is otherwise kept as given, so its problems are reported as the
/// flag's.
pub(super) fn flag_path(name: &str, value: &str, host: &dyn Host) -> Result<String, Diagnostic> {
    let flag = |v: &str| {
        format!(
            "--var {}={}",
            crate::diag::visible(name),
            crate::diag::visible(v)
        )
    };
    let bad =
        |msg: String, help: String| Diagnostic::error(crate::diag::code::VAR_FLAG, msg).help(help);
    if value.starts_with('~') {
        return Err(bad(
            format!(
                "`{}` starts with `~`, which sealc does not expand",
                flag(value)
            ),
            match value.strip_prefix('~') {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => format!(
                    "write the home directory out: `{}`",
                    flag(&format!("$HOME{rest}"))
                ),
                _ => format!("pass an absolute path: `{}`", flag("/path")),
            },
        ));
    }
    let path = if value.starts_with('/') {
        let trimmed = value.trim_end_matches('/');
        if trimmed.is_empty() {
            "/".to_string()
        } else {
            trimmed.to_string()
        }
    } else if value.is_empty() {
        let name = crate::diag::visible(name);
        return Err(bad(
            format!("`{}` gives a path var an empty value", flag(value)),
            format!(
                "the value is empty, as a `$(...)` that printed nothing leaves it (with `$(command -v {name})`: is `{name}` installed and on `PATH`?); pass a path: `{}`",
                flag("/path")
            ),
        ));
    } else {
        let Some(cwd) = host.cwd().filter(|c| c.starts_with('/')) else {
            return Err(bad(
                format!(
                    "`{}` is a relative path, and the current directory cannot be read",
                    flag(value)
                ),
                format!("pass an absolute path: `{}`", flag("/path")),
            ));
        };
        normalize(&format!("{cwd}/{value}"))
    };
    if let Err(problem) = crate::paths::check_path(&path) {
        use crate::paths::PathProblem;
        let help = match &problem {
            PathProblem::DoubleSlash | PathProblem::DotSegment(_) => {
                format!("write `{}`", flag(&normalize(&path)))
            }
            other => other
                .help(&path)
                .unwrap_or_else(|| "pass a plain absolute path".to_string()),
        };
        return Err(bad(
            format!(
                "`{}` is not a usable path: it {}",
                flag(value),
                problem.message()
            ),
            help,
        ));
    }
    Ok(path)
}

pub(super) fn resolve_vars(
    spec: &Spec,
    src: &str,
    flags: &VarFlags,
    host: &dyn Host,
    secrets: &BTreeSet<&str>,
    diags: &mut Diagnostics,
) -> BTreeMap<String, String> {
    let mut given: BTreeMap<&str, String> = BTreeMap::new();
    let paths = path_vars(spec);
    let mut refused = BTreeSet::new();
    for (k, v) in flags {
        if spec.vars.contains_key(k) {
            let value = if paths.contains(k.as_str()) {
                match flag_path(k, v, host) {
                    Ok(p) => p,
                    Err(d) => {
                        let at = spec.vars.get(k).map(|d| d.name.span.clone());
                        diags.push(d.at_opt(at).label("its value is used as a path"));
                        refused.insert(k.clone());
                        continue;
                    }
                }
            } else {
                v.clone()
            };
            given.insert(k, value);
        } else {
            let mut d = Diagnostic::error(
                crate::diag::code::VAR_UNDECLARED,
                format!("`--var {}` names no declared var", crate::diag::visible(k)),
            );
            d = match did_you_mean(k, spec.vars.keys().map(String::as_str)) {
                Some(m) => d.help(format!("did you mean `--var {m}=...`?")),
                None => d.help("declare it under `[vars]`, or drop the flag"),
            };
            diags.push(d);
        }
    }
    let mut r = Resolver {
        spec,
        src,
        host,
        secrets,
        given,
        done: BTreeMap::new(),
        failed: refused,
        stack: Vec::new(),
    };
    for name in spec.vars.keys() {
        r.resolve(name, diags);
    }
    r.done
}

pub(super) struct Resolver<'a> {
    spec: &'a Spec,
    src: &'a str,
    host: &'a dyn Host,
    secrets: &'a BTreeSet<&'a str>,
    given: BTreeMap<&'a str, String>,
    done: BTreeMap<String, String>,
    failed: BTreeSet<String>,
    stack: Vec<String>,
}

impl Resolver<'_> {
    fn resolve(&mut self, name: &str, diags: &mut Diagnostics) -> Option<String> {
        if let Some(v) = self.done.get(name) {
            return Some(v.clone());
        }
        if self.failed.contains(name) {
            return None;
        }
        let decl = self.spec.vars.get(name)?;
        if self.stack.iter().any(|s| s == name) {
            let cycle = self.stack.join(" → ");
            diags.push(
                Diagnostic::error(
                    crate::diag::code::VAR_CYCLE,
                    format!("var `{name}` depends on itself: {cycle} → {name}"),
                )
                .at(decl.name.span.clone())
                .help("give one of these vars a default that does not refer back"),
            );
            self.failed.insert(name.to_string());
            return None;
        }
        let value = self.value_of(name, diags);
        match &value {
            Some(v) => {
                self.done.insert(name.to_string(), v.clone());
            }
            None => {
                self.failed.insert(name.to_string());
            }
        }
        value
    }

    fn value_of(&mut self, name: &str, diags: &mut Diagnostics) -> Option<String> {
        let decl = self.spec.vars.get(name)?;
        if let Some(v) = self.given.get(name) {
            return Some(v.clone());
        }
        if let Some(env) = &decl.env {
            if self.secrets.contains(env.value.as_str()) {
                diags.push(
                    Diagnostic::error(
                        crate::diag::code::VAR_SECRET,
                        format!(
                            "var `{name}` reads `{}`, which is listed as a secret",
                            env.value
                        ),
                    )
                    .at(env.span.clone())
                    .label("its value would be recorded")
                    .help("a secret's value is never read at compile time; use another env var"),
                );
                return None;
            }
            match self.host.env(&env.value) {
                Some(Ok(v)) => return Some(v),
                Some(Err(())) => {
                    diags.push(
                        Diagnostic::error(
                            crate::diag::code::VAR_ENCODING,
                            format!("env var `{}` is not UTF-8", env.value),
                        )
                        .at(env.span.clone())
                        .help(format!("pass `--var {name}=VALUE` instead")),
                    );
                    return None;
                }
                None => {}
            }
        }
        if let Some(default) = &decl.default {
            let refs = match references(default, self.src) {
                Ok(r) => r,
                Err(d) => {
                    diags.push(d);
                    return None;
                }
            };
            self.stack.push(name.to_string());
            let mut ok = true;
            for r in &refs {
                if self.spec.vars.contains_key(&r.name) {
                    ok &= self.resolve(&r.name, diags).is_some();
                }
            }
            self.stack.pop();
            if !ok {
                return None;
            }
            return match interpolate(default, self.src, &self.done) {
                Ok(v) => Some(v),
                Err(d) => {
                    diags.push(d);
                    None
                }
            };
        }
        let mut help = format!("pass `--var {name}=VALUE`");
        if let Some(env) = &decl.env {
            help.push_str(&format!(" or set `{}`", env.value));
        }
        if let Some(h) = &decl.help {
            help.push_str(&format!(" ({})", h.value));
        }
        let required = decl.required.as_ref().is_some_and(|r| r.value);
        diags.push(
            Diagnostic::error(
                crate::diag::code::VAR_MISSING,
                if required {
                    format!("required var `{name}` has no value")
                } else {
                    format!("var `{name}` has no value")
                },
            )
            .at(decl.name.span.clone())
            .label("no `--var`, env var or default gives it a value")
            .help(help),
        );
        None
    }
}
