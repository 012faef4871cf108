//! Evaluating a profile's expressions: params, `define`d values, strings,
//! and every filter the model knows.

use super::*;

/// Each pattern compiled, or the first that does not compile, as opaque.
pub(super) fn regexes<'a>(patterns: Pats<'a>, line: usize) -> Result<Vec<Regex>, Value<'a>> {
    patterns
        .into_iter()
        .map(|p| Regex::new(&p).map_err(|why| Value::Opaque(format!("regex {p:?}: {why}"), line)))
        .collect()
}

/// Evaluate an expression to a value: strings, params, booleans, filters.
pub(super) fn eval<'a>(e: &Expr<'a>, env: &Env<'_, 'a>) -> Value<'a> {
    let opaque = || Value::Opaque(text_of(e), e.line);
    match &e.node {
        Node::Str { raw, value: None } => Value::Str(Cow::Borrowed(raw)),
        Node::Str {
            value: Some(value), ..
        } => Value::Str(Cow::Borrowed(value)),
        Node::RawStr(s) => Value::Str(Cow::Borrowed(s)),
        Node::Bool(b) => Value::Bool(*b),
        Node::Int { raw, .. } => Value::Str(Cow::Borrowed(raw)),
        Node::Symbol(s) => env.defines.get(s).cloned().unwrap_or_else(opaque),
        Node::List { items, tail: None } => {
            let Some(head) = items.first().and_then(Expr::symbol) else {
                return opaque();
            };
            let args = &items[1..];
            let strings = || -> Result<Pats<'a>, Value<'a>> {
                args.iter()
                    .map(|a| match eval(a, env) {
                        Value::Str(s) => Ok(s),
                        Value::Opaque(w, l) => Err(Value::Opaque(w, l)),
                        _ => Err(Value::Opaque(text_of(a), a.line)),
                    })
                    .collect()
            };
            let path = |kind: PathKind| match strings() {
                Ok(v) if !v.is_empty() => Value::Filter(Filter::Path(kind, v)),
                Ok(_) => opaque(),
                Err(o) => o,
            };
            match head {
                "param" => match args.first().and_then(Expr::string) {
                    Some(name) => env
                        .params
                        .get(name)
                        .map_or(Value::Bool(false), |v| Value::Str(Cow::Owned(v.clone()))),
                    None => opaque(),
                },
                "string-append" => match strings() {
                    Ok(v) => Value::Str(Cow::Owned(v.concat())),
                    Err(o) => o,
                },
                // A sandbox extension is a token a process is handed at run
                // time (an app's open panel, `sandbox_extension_issue_*`);
                // `sandbox-exec` hands none, and sealc issues none, so a
                // process under a seal holds none and such a filter matches
                // nothing (`docs/ipc.md` says so).
                "extension" => Value::Filter(Filter::Any(Vec::new())),
                "literal" | "path" | "path-literal" => path(PathKind::Literal),
                "subpath" => path(PathKind::Subpath),
                // The path and each of its ancestors, by literal path.
                "path-ancestors" => match strings() {
                    Ok(v) if !v.is_empty() => {
                        let mut lits = Pats::new();
                        for p in &v {
                            if !p.starts_with('/') {
                                return opaque();
                            }
                            lits.extend(
                                crate::paths::ancestors_or_self(p)
                                    .map(|a| Cow::Owned(a.to_string())),
                            );
                        }
                        Value::Filter(Filter::Path(PathKind::Literal, lits))
                    }
                    Ok(_) => opaque(),
                    Err(o) => o,
                },
                "prefix" | "path-prefix" => path(PathKind::Prefix),
                "regex" | "path-regex" => match strings() {
                    Ok(v) if !v.is_empty() => match regexes(v, e.line) {
                        Ok(res) => Value::Filter(Filter::Regex(res)),
                        Err(o) => o,
                    },
                    Ok(_) => opaque(),
                    Err(o) => o,
                },
                "target" => match args {
                    [a] => match a.symbol() {
                        Some(t @ ("self" | "same-sandbox" | "others")) => {
                            // `same-sandbox` holds for the process itself.
                            let mut v = Pats::from_buf([Cow::Borrowed(t)]);
                            if t == "same-sandbox" {
                                v.push(Cow::Borrowed("self"));
                            }
                            Value::Filter(Filter::Name(
                                NameKind::SignalTarget,
                                PathKind::Literal,
                                v,
                            ))
                        }
                        _ => opaque(),
                    },
                    _ => opaque(),
                },
                h if NAME_FILTERS.iter().any(|(n, _, _)| *n == h) => {
                    let Some((_, kind, how)) = NAME_FILTERS.iter().find(|(n, _, _)| *n == h) else {
                        return opaque();
                    };
                    match strings() {
                        Ok(v) if !v.is_empty() => {
                            Value::Filter(Filter::Name(*kind, how.clone(), v))
                        }
                        Ok(_) => opaque(),
                        Err(o) => o,
                    }
                }
                h if NAME_REGEX_FILTERS.iter().any(|(n, _)| *n == h) => {
                    let Some((_, kind)) = NAME_REGEX_FILTERS.iter().find(|(n, _)| *n == h) else {
                        return opaque();
                    };
                    match strings() {
                        Ok(v) if !v.is_empty() => match regexes(v, e.line) {
                            Ok(res) => Value::Filter(Filter::NameRegex(*kind, res)),
                            Err(o) => o,
                        },
                        Ok(_) => opaque(),
                        Err(o) => o,
                    }
                }
                "require-any" | "require-all" => {
                    let mut fs = Vec::new();
                    for a in args {
                        match eval(a, env) {
                            Value::Filter(f) => fs.push(f),
                            Value::Opaque(w, l) => fs.push(Filter::Opaque { what: w, line: l }),
                            _ => fs.push(Filter::Opaque {
                                what: text_of(a),
                                line: a.line,
                            }),
                        }
                    }
                    Value::Filter(if head == "require-any" {
                        Filter::Any(fs)
                    } else {
                        Filter::All(fs)
                    })
                }
                "require-not" => match args.first().map(|a| eval(a, env)) {
                    Some(Value::Filter(f)) => Value::Filter(Filter::Not(Box::new(f))),
                    Some(Value::Opaque(w, l)) => Value::Opaque(w, l),
                    _ => opaque(),
                },
                "remote" | "local" => {
                    let proto = args.first().and_then(Expr::symbol).unwrap_or("");
                    if ![
                        "ip", "ip4", "ip6", "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6",
                    ]
                    .contains(&proto)
                    {
                        return opaque();
                    }
                    let addr = match args.get(1).map(|a| eval(a, env)) {
                        None => None,
                        Some(Value::Str(s)) => Some(s),
                        Some(_) => return opaque(),
                    };
                    Value::Filter(Filter::Net {
                        remote: head == "remote",
                        proto,
                        addr,
                    })
                }
                _ => opaque(),
            }
        }
        _ => opaque(),
    }
}
