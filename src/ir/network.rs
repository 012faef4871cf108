//! Lowering the network (the mode, the proxy, the allowlist) and the env
//! allowlist that goes with it.

use super::*;

impl Lower<'_> {
    pub(super) fn network(&mut self, spec: &Spec) -> NetIr {
        let n = &spec.network;
        let mode = spec.net_mode();
        if let (NetMode::Open, Some(m)) = (mode, &n.mode) {
            self.diags.push(
                Diagnostic::warning(
                    crate::diag::code::NETWORK_OPEN,
                    "`network.mode = \"open\"` leaves the network unrestricted",
                )
                .at(m.span.clone())
                .label("every connection is allowed, on macOS and on Linux")
                .help("use `mode = \"allowlist\"` with `hosts` and `ports`: sealc's own proxy enforces them"),
            );
        }
        let proxy = match (&n.proxy, mode) {
            (Some(p), NetMode::Proxy | NetMode::Allowlist) => self.proxy(p),
            (None, NetMode::Allowlist) => Some(Proxy {
                host: DEFAULT_PROXY_HOST.to_string(),
                port: DEFAULT_PROXY_PORT,
            }),
            (None, NetMode::Proxy) => {
                let span = n.mode.as_ref().map(|m| m.span.clone());
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::NETWORK_PROXY,
                        "`network.mode = \"proxy\"` needs `network.proxy`",
                    )
                    .at_opt(span)
                    .help("add `proxy = \"127.0.0.1:PORT\"`, or use `mode = \"allowlist\"`, where sealc runs the proxy"),
                );
                None
            }
            (Some(p), _) => {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::NETWORK_PROXY,
                        format!(
                            "`network.proxy` is set but `network.mode` is `{}`",
                            mode.as_str()
                        ),
                    )
                    .at(p.span.clone())
                    .label("unused unless the mode is `proxy` or `allowlist`")
                    .help("set `mode = \"proxy\"` or `mode = \"allowlist\"`, or remove `proxy`"),
                );
                None
            }
            (None, _) => None,
        };
        let mut hosts = BTreeSet::new();
        for h in &n.hosts {
            // A host may come from a var (`${api}`), so one spec points at
            // a stand-in a harness picks; lint, which reads no host, checks
            // the value when it is compiled.
            let Some(value) = self.subst(h) else {
                continue;
            };
            if self.symbolic && value.contains("${") {
                hosts.insert(value);
                continue;
            }
            match crate::netpolicy::canonical_entry(&value) {
                Ok(c) => {
                    hosts.insert(c);
                }
                Err(why) => self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::NETWORK_HOST,
                        format!("{} cannot be allowed: {why}", quote(&value)),
                    )
                    .at(h.span.clone())
                    .label("a name, `*.name` for its subdomains, or an IP literal")
                    .help("write a host such as `api.openai.com`, `*.oaiusercontent.com` or `192.0.2.7`"),
                ),
            }
        }
        let mut ports = BTreeSet::new();
        for p in &n.ports {
            let (written, span) = match p {
                crate::spec::PortEntry::Number(p) => (p.value.to_string(), &p.span),
                // A port may come from a var (`"${port}"`), so one spec
                // points at a stand-in on a port a harness picks; lint,
                // which knows no value, checks it when it is compiled.
                crate::spec::PortEntry::Var(v) => match self.subst(v) {
                    None => continue,
                    Some(value) if self.symbolic && value.contains("${") => continue,
                    Some(value) => (value, &v.span),
                },
            };
            match written.parse::<u16>() {
                Ok(v) if v >= 1 && v.to_string() == written => {
                    ports.insert(v);
                }
                _ => self.diags.push(port_error(written, span.clone())),
            }
        }
        let mut allow_ranges = BTreeSet::new();
        for r in &n.allow_ranges {
            match crate::netpolicy::Cidr::parse(&r.value) {
                Ok(c) => {
                    allow_ranges.insert(c);
                }
                Err(why) => self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::NETWORK_RANGE,
                        format!("{} is not an address range: {why}", quote(&r.value)),
                    )
                    .at(r.span.clone())
                    .label("CIDR: an address and a prefix length")
                    .help("write a range such as `10.20.0.0/16` or `fd00::/8`"),
                ),
            }
        }
        if mode == NetMode::Allowlist {
            let span = n.mode.as_ref().map(|m| m.span.clone());
            for (list, empty) in [("hosts", n.hosts.is_empty()), ("ports", n.ports.is_empty())] {
                if empty {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::NETWORK_ALLOWLIST,
                            format!("`network.mode = \"allowlist\"` with no `network.{list}` lets nothing through"),
                        )
                        .at_opt(span.clone())
                        .help(format!("list the {list} the agent may reach, or use `mode = \"none\"`")),
                    );
                }
            }
        } else if let Some(r) = n.allow_ranges.first() {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::NETWORK_ALLOWLIST,
                    format!(
                        "`network.allow_ranges` is set but `network.mode` is `{}`",
                        mode.as_str()
                    ),
                )
                .at(r.span.clone())
                .label("only sealc's own proxy reads it")
                .help("set `mode = \"allowlist\"`, or remove `allow_ranges`"),
            );
        }
        NetIr {
            mode,
            proxy,
            hosts,
            ports,
            allow_ranges,
        }
    }

    pub(super) fn proxy(&mut self, p: &Spanned<String>) -> Option<Proxy> {
        // A URL: the spec names the address, and sealc writes the URL.
        if let Some((scheme, rest)) = p.value.split_once("://") {
            let address = rest.trim_end_matches('/');
            let help = if scheme.eq_ignore_ascii_case("http") && !address.contains('/') {
                format!("did you mean `proxy = \"{address}\"`? sealc sets `HTTPS_PROXY`, `HTTP_PROXY` and `ALL_PROXY` to `http://` and that address")
            } else {
                "write the proxy's loopback `host:port`, such as `127.0.0.1:8080`: sealc sets `HTTPS_PROXY`, `HTTP_PROXY` and `ALL_PROXY` to `http://` and that address, so it must be an HTTP proxy".to_string()
            };
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::NETWORK_PROXY,
                    format!("proxy {} is a URL, not a `host:port`", quote(&p.value)),
                )
                .at(p.span.clone())
                .label("`network.proxy` is the address of an HTTP proxy on this machine")
                .help(help),
            );
            return None;
        }
        let v = self.subst(p)?;
        let Some((host, port)) = v.rsplit_once(':') else {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::NETWORK_PROXY,
                    format!("proxy {} has no port", quote(&v)),
                )
                .at(p.span.clone())
                .help("write `127.0.0.1:PORT`"),
            );
            return None;
        };
        if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::NETWORK_PROXY,
                    format!("proxy host {} is not loopback", quote(host)),
                )
                .at(p.span.clone())
                .label("the agent may reach only a proxy on this machine")
                .help("use `127.0.0.1`, `localhost` or `[::1]`; seatbelt can name no other host"),
            );
            return None;
        }
        if self.symbolic && port.contains("${") {
            return Some(Proxy {
                host: host.to_string(),
                port: 0,
            });
        }
        match port.parse::<u16>() {
            Ok(n) if n >= 1 && port.bytes().all(|b| b.is_ascii_digit()) => Some(Proxy {
                host: host.to_string(),
                port: n,
            }),
            _ => {
                self.diags
                    .push(port_error(port.to_string(), p.span.clone()));
                None
            }
        }
    }

    pub(super) fn env<'s>(&mut self, spec: &'s Spec, net: &NetIr) -> EnvIr {
        let e = &spec.env;
        // Each name and where it is listed: names borrowed from the spec,
        // in one list sorted by name (stably: a name's places stay in the
        // order noted), not a list a name.
        let mut listed: Vec<(&str, &'static str, Span)> =
            Vec::with_capacity(e.pass.len() + e.set_keys.len() + e.secret.len() + PROXY_VARS.len());
        let mut note = |name: &'s str, list: &'static str, span: Span| {
            listed.push((name, list, span));
        };
        for p in &e.pass {
            note(&p.value, "pass", p.span.clone());
        }
        for (k, span) in &e.set_keys {
            note(k, "set", span.clone());
        }
        for s in &e.secret {
            note(&s.value, "secret", s.span.clone());
        }
        if net.mode.proxied() {
            let why = match net.mode {
                NetMode::Allowlist => "network.mode = \"allowlist\"",
                _ => "network.mode = \"proxy\"",
            };
            for v in PROXY_VARS {
                note(v, why, 0..0);
            }
        }
        let loader_ok = e.allow_loader_vars.as_ref().is_some_and(|a| a.value);
        listed.sort_by_key(|(name, _, _)| *name);
        let mut ok_names: BTreeSet<&str> = BTreeSet::new();
        for places in listed.chunk_by(|a, b| a.0 == b.0) {
            let name = places[0].0;
            // The places written in the spec (the proxy's own have no span).
            let spanned = || places.iter().filter(|(_, _, s)| s.end > 0);
            if let Some((_, _, span)) = spanned().next() {
                if !check_env_name(name, span, &mut self.diags) {
                    continue;
                }
            }
            if is_loader_var(name) && !loader_ok {
                for (_, list, span) in spanned() {
                    self.diags.push(
                        Diagnostic::error(
                            crate::diag::code::ENV_LOADER,
                            format!(
                                "`env.{list}` names `{}`, a variable that changes what programs load",
                                visible(name)
                            ),
                        )
                        .at(span.clone())
                        .label("a loader or libc variable")
                        .help("remove it, or set `env.allow_loader_vars = true` if the command inside the sandbox needs it: it then reaches that command only"),
                    );
                }
            }
            // Most names are in one list: only one in two makes a set.
            if places.iter().any(|(_, k, _)| *k != places[0].1) {
                let kinds: BTreeSet<&str> = places.iter().map(|(_, k, _)| *k).collect();
                let (last_kind, last_span) = spanned()
                    .next_back()
                    .map(|(_, k, s)| (*k, s.clone()))
                    .unwrap_or(("", 0..0));
                let others: Vec<&str> = kinds.iter().copied().filter(|k| *k != last_kind).collect();
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::ENV_DUPLICATE,
                        format!("env var `{}` is in both `{}` and `{}`", visible(name), others.join("`, `"), last_kind),
                    )
                    .at(last_span)
                    .label("listed more than once")
                    .help("an env var crosses one way only: keep it in one of `pass`, `set`, `secret`"),
                );
                continue;
            }
            ok_names.insert(name);
        }
        let mut vars = BTreeMap::new();
        for p in &e.pass {
            if !ok_names.contains(p.value.as_str()) {
                continue;
            }
            match self.facts.env.get(&p.value) {
                Some(Some(v)) => {
                    if v.contains('\0') {
                        self.diags.push(nul_error(&p.value, p.span.clone()));
                    } else {
                        vars.insert(p.value.clone(), v.clone());
                    }
                }
                Some(None) => {}
                None if self.symbolic => {}
                None => self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::ENV_ABSENT,
                        format!("no captured value is recorded for `pass` var `{}`", p.value),
                    )
                    .at(p.span.clone())
                    .help("recompile to capture it"),
                ),
            }
        }
        for (k, v) in &e.set {
            if !ok_names.contains(k.as_str()) {
                continue;
            }
            let Some(val) = self.subst(v) else { continue };
            if val.contains('\0') {
                self.diags.push(nul_error(k, v.span.clone()));
                continue;
            }
            vars.insert(k.clone(), val);
        }
        if let (true, Some(p)) = (net.mode.proxied(), &net.proxy) {
            let url = format!("http://{}:{}", p.host, p.port);
            for v in PROXY_VARS {
                let bypass = v.eq_ignore_ascii_case("NO_PROXY");
                vars.insert(
                    v.to_string(),
                    if bypass { String::new() } else { url.clone() },
                );
            }
        }
        let mut secrets: BTreeSet<String> = e
            .secret
            .iter()
            .filter(|s| ok_names.contains(s.value.as_str()))
            .map(|s| s.value.clone())
            .collect();
        // A key sealc holds for the Codex provider never crosses (the
        // provider's lowering checks the rest).
        let mut held = BTreeSet::new();
        if let Some(p) = &spec.codex.provider {
            if let (Some(k), Some(true)) = (&p.env_key, p.hold_key.as_ref().map(|h| h.value)) {
                if secrets.remove(&k.value) {
                    held.insert(k.value.clone());
                }
            }
        }
        EnvIr {
            vars,
            secrets,
            held,
        }
    }
}
