//! Lowering `[codex]`: the releases, the workspace, the provider, the
//! Codex home, the credentials, and Codex's own permission profile.

use super::*;

/// A key sealc holds for a provider, and where it adds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldKey {
    /// The `env.secret` whose value is the key.
    pub secret: String,
    /// The API's host (as the proxy normalizes it) and port, over TLS.
    pub host: String,
    pub port: u16,
    /// The base URL's path: the key is added only to requests under it.
    pub path: String,
}

impl Lower<'_> {
    pub(super) fn codex(
        &mut self,
        spec: &Spec,
        roots: &[Root],
        env: &EnvIr,
        net: &NetIr,
    ) -> CodexIr {
        let c = &spec.codex;
        if let Some(m) = &c.model {
            if m.value.is_empty() || m.value.chars().any(char::is_control) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::SPEC_VALUE,
                        format!("model {} is not a model name", quote(&m.value)),
                    )
                    .at(m.span.clone())
                    .help("write a model name such as `gpt-5.5`"),
                );
            }
        }
        if let Some(r) = &c.reasoning_effort {
            if !REASONING_EFFORTS.contains(&r.value.as_str()) {
                let mut d = Diagnostic::error(
                    crate::diag::code::SPEC_VALUE,
                    format!("`codex.reasoning_effort` cannot be {}", quote(&r.value)),
                )
                .at(r.span.clone())
                .label(format!("one of: {}", REASONING_EFFORTS.join(", ")));
                d = match crate::diag::did_you_mean(&r.value, REASONING_EFFORTS) {
                    Some(m) => d.help(format!("did you mean `{m}`?")),
                    None => d.help(format!("use one of: {}", REASONING_EFFORTS.join(", "))),
                };
                self.diags.push(d);
            }
        }
        let versions = self.codex_versions(spec);
        let profile = self.codex_sandbox(spec, roots, env, &versions);
        let workspaces = self.codex_workspace(spec, roots);
        let provider = self.codex_provider(spec, env, net);
        let home = if spec.is_codex_seal() {
            self.codex_home(spec, roots, env)
        } else {
            None
        };
        let credentials = self.codex_credentials(spec, roots);
        if spec.is_codex_seal() {
            self.codex_credentials_shared(spec, env, credentials.as_deref());
        }
        CodexIr {
            sealed: spec.is_codex_seal(),
            versions,
            model: c.model.as_ref().map(|m| m.value.clone()),
            reasoning_effort: c.reasoning_effort.as_ref().map(|r| r.value.clone()),
            provider,
            workspaces,
            trust_workspace: c.allow_project_config.as_ref().is_some_and(|b| b.value),
            profile,
            home,
            credentials,
            mcp: Vec::new(),
        }
    }

    /// `[codex] credentials`: a file outside every write root (by every
    /// spelling), which `sealc exec` copies into each run's fresh home.
    pub(super) fn codex_credentials(&mut self, spec: &Spec, roots: &[Root]) -> Option<String> {
        let c = spec.codex.credentials.as_ref()?;
        let path = self.path(c, "`codex.credentials`")?;
        if let Some(w) = write_root_holding(roots, &path) {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_CREDENTIALS,
                    format!(
                        "the Codex credentials {} lie inside the write root {}",
                        quote(&path),
                        quote(&w.origin)
                    ),
                )
                .at(c.span.clone())
                .label("`sealc exec` copies this file into every run's Codex home")
                .help("name a file outside every write root (the agent could put anything in its place), such as `${home}/.codex/auth.json`"),
            );
            return None;
        }
        Some(path)
    }

    /// What a Codex seal gives Codex to authenticate (a credentials file
    /// copied into its home, secrets in its environment) every tool it runs
    /// can read as well: said once, loudly, with what bounds it.
    fn codex_credentials_shared(&mut self, spec: &Spec, env: &EnvIr, file: Option<&str>) {
        let mut what: Vec<String> = Vec::new();
        if let Some(f) = file {
            what.push(format!(
                "the credentials file {} (copied into each run's Codex home)",
                quote(f)
            ));
        }
        if !env.secrets.is_empty() {
            let names: Vec<String> = env.secrets.iter().map(|n| format!("`{n}`")).collect();
            what.push(format!(
                "the secrets {} (in Codex's environment)",
                names.join(", ")
            ));
        }
        let span = match (&spec.codex.credentials, spec.env.secret.first()) {
            (Some(c), _) if file.is_some() => c.span.clone(),
            (_, Some(s)) => s.span.clone(),
            _ => return,
        };
        self.diags.push(
            Diagnostic::advice(
                crate::diag::code::CODEX_CREDENTIALS_SHARED,
                format!(
                    "what Codex is given to authenticate, {}, every tool Codex runs can read too",
                    what.join(" and ")
                ),
            )
            .at(span)
            .label("Codex's tools run as Codex's user: they read its home, and its environment through /proc (Codex leaves itself dumpable)")
            .help("no seal tells Codex from its tools; what a tool could do with a key is bounded by `[network]`: keep it to the API's host, and give the run a key of its own that can be revoked"),
        );
    }

    /// `[codex] sandbox`: `profile` only when every meaning of the seal has
    /// a Codex permission-profile spelling on every targeted release.
    pub(super) fn codex_sandbox(
        &mut self,
        spec: &Spec,
        roots: &[Root],
        env: &EnvIr,
        versions: &[String],
    ) -> bool {
        const SANDBOXES: [&str; 2] = ["outer", "profile"];
        let Some(v) = &spec.codex.sandbox else {
            return false;
        };
        if !SANDBOXES.contains(&v.value.as_str()) {
            let mut d = Diagnostic::error(
                crate::diag::code::SPEC_VALUE,
                format!("`codex.sandbox` cannot be {}", quote(&v.value)),
            )
            .at(v.span.clone())
            .label("one of: outer, profile");
            d = match crate::diag::did_you_mean(&v.value, SANDBOXES) {
                Some(m) => d.help(format!("did you mean `{m}`?")),
                None => d.help("use `outer` or `profile`"),
            };
            self.diags.push(d);
            return false;
        }
        if v.value != "profile" {
            return false;
        }
        for r in roots {
            if let Some(why) = codex_inexpressible(r) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::CODEX_PROFILE,
                        format!(
                            "Codex {} cannot express the {} root {} in a permission profile",
                            versions.join(", "),
                            r.kind.key(),
                            quote(&r.path)
                        ),
                    )
                    .at(r.span.clone())
                    .label(why)
                    .help("change or drop this root (a `metadata_only` one can be `deny_read`), or use `sandbox = \"outer\"`"),
                );
            }
        }
        // Codex's sandbox takes the search right below a denied directory.
        for r in roots.iter().filter(|r| r.kind == RootKind::AllowRead) {
            if roots.iter().any(|d| {
                d.kind == RootKind::DenyRead && is_within(&r.path, &d.path) && d.path != r.path
            }) {
                self.diags.push(
                    Diagnostic::warning(
                        crate::diag::code::CODEX_REALLOW,
                        format!(
                            "Codex {} refuses reads of {} inside its denied directory: stricter than the seal",
                            versions.join(", "),
                            quote(&r.path)
                        ),
                    )
                    .at(r.span.clone())
                    .label("a `deny` entry takes the search right of everything below it, whatever a more specific `read` says")
                    .help("the outer seal still means it; deny the denied directory's other entries instead to let Codex read it too"),
                );
            }
        }
        let old: Vec<&str> = versions
            .iter()
            .filter(|v| {
                semver::Version::parse(v).is_ok_and(|v| {
                    semver::Version::parse(crate::known::PATH_SINCE).is_ok_and(|s| v < s)
                })
            })
            .map(String::as_str)
            .collect();
        if env.vars.contains_key("PATH") && !old.is_empty() {
            let mut d = Diagnostic::warning(
                crate::diag::code::CODEX_SANDBOX_PATH,
                format!(
                    "Codex {} cannot start its own sandbox with the allowlist's PATH",
                    old.join(", ")
                ),
            )
            .label("it starts its helper (`codex-linux-sandbox`) by the PATH of `shell_environment_policy`, which lacks Codex's helper directory")
            .help(format!(
                "target Codex {} or newer (`version = \">={}\"`), or leave PATH out of the allowlist",
                crate::known::PATH_SINCE,
                crate::known::PATH_SINCE
            ));
            if let Some(sp) = spec.codex.version.as_ref().map(|v| v.span.clone()) {
                d = d.at(sp);
            }
            self.diags.push(d);
        }
        true
    }

    /// `[codex] version`: the tested releases it selects (default the newest).
    pub(super) fn codex_versions(&mut self, spec: &Spec) -> Vec<String> {
        use crate::known::{select_versions, DEFAULT_VERSION, TESTED};
        let Some(v) = &spec.codex.version else {
            return vec![DEFAULT_VERSION.to_string()];
        };
        let Some(want) = self.subst(v) else {
            return vec![DEFAULT_VERSION.to_string()];
        };
        if self.symbolic && want.contains("${") {
            return vec![DEFAULT_VERSION.to_string()]; // lint: known only on a host
        }
        match select_versions(&want) {
            Ok(vs) => {
                let vs: Vec<String> = vs.into_iter().map(str::to_string).collect();
                vs
            }
            Err(why) => {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::CODEX_VERSION,
                        format!("`codex.version` {}: {why}", quote(&want)),
                    )
                    .at(v.span.clone())
                    .label(format!("tested: {}", TESTED.join(", ")))
                    .help("name a tested release, or a range such as `>=0.137, <0.172` over them"),
                );
                vec![DEFAULT_VERSION.to_string()]
            }
        }
    }

    /// `[codex] workspace`: one of the write roots; every spelling of it.
    pub(super) fn codex_workspace(&mut self, spec: &Spec, roots: &[Root]) -> Vec<String> {
        let Some(ws) = &spec.codex.workspace else {
            return Vec::new();
        };
        let Some(path) = self.path(ws, "`codex.workspace`") else {
            return Vec::new();
        };
        match roots
            .iter()
            .find(|r| r.kind == RootKind::Write && r.path == path)
        {
            Some(r) => r.spellings.iter().cloned().collect(),
            None => {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::CODEX_WORKSPACE,
                        format!("the Codex workspace {} is not a write root", quote(&path)),
                    )
                    .at(ws.span.clone())
                    .label("Codex works and records trust here")
                    .help("list it under `filesystem.write`, or name one of the write roots"),
                );
                Vec::new()
            }
        }
    }

    /// `[codex.provider]`: an http(s) base URL, and a key that is a secret.
    pub(super) fn codex_provider(
        &mut self,
        spec: &Spec,
        env: &EnvIr,
        net: &NetIr,
    ) -> Option<ProviderIr> {
        let p = spec.codex.provider.as_ref()?;
        let url = self.subst(&p.base_url)?;
        let scheme_ok = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .is_some_and(|rest| !rest.is_empty());
        if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::CODEX_PROVIDER,
                    format!(
                        "`codex.provider.base_url` {} is not an http(s) URL",
                        quote(&url)
                    ),
                )
                .at(p.base_url.span.clone())
                .help("write a URL such as `http://127.0.0.1:${proxy_port}/v1`"),
            );
            return None;
        }
        if let Some(k) = &p.env_key {
            if !env.secrets.contains(&k.value) && !env.held.contains(&k.value) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::CODEX_PROVIDER,
                        format!("`codex.provider.env_key` {} is not an `env.secret`", quote(&k.value)),
                    )
                    .at(k.span.clone())
                    .label("Codex reads the API key from this variable")
                    .help(format!("list {} under `env.secret`, so the runner supplies it and nothing records it", quote(&k.value))),
                );
            }
        }
        let held = match &p.hold_key {
            Some(h) if h.value => self.held_key(p, h.span.clone(), &url, env, net),
            _ => None,
        };
        Some(ProviderIr {
            base_url: url,
            env_key: p.env_key.as_ref().map(|k| k.value.clone()),
            held,
        })
    }

    /// `hold_key = true`: the key stays with sealc, whose own proxy adds it
    /// over TLS to the one host and port of an `https` base URL that the
    /// allowlist lets through. Anything else would leave the key nowhere
    /// to go, or send it in the clear.
    fn held_key(
        &mut self,
        p: &crate::spec::CodexProvider,
        span: Span,
        url: &str,
        env: &EnvIr,
        net: &NetIr,
    ) -> Option<HeldKey> {
        let mut refuse = |msg: String, help: &str| {
            self.diags.push(
                Diagnostic::error(crate::diag::code::CODEX_PROVIDER, msg)
                    .at(span.clone())
                    .label("sealc's proxy would add the key on the host side")
                    .help(help.to_string()),
            );
            None
        };
        let Some(secret) = p.env_key.as_ref().map(|k| k.value.clone()) else {
            return refuse(
                "`codex.provider.hold_key` needs `env_key`, the secret that holds the key".into(),
                "name the secret: `env_key = \"OPENAI_API_KEY\"`, listed under `env.secret`",
            );
        };
        if !env.held.contains(&secret) {
            // Not an `env.secret`: said once, above.
            return None;
        }
        if net.mode != NetMode::Allowlist {
            return refuse(
                format!(
                    "`codex.provider.hold_key` needs `network.mode = \"allowlist\"`, not {}",
                    quote(net.mode.as_str())
                ),
                "only sealc's own proxy can add the key; set `[network] mode = \"allowlist\"` with the API's host and port",
            );
        }
        let Some(rest) = url.strip_prefix("https://") else {
            return refuse(
                format!("`codex.provider.base_url` {} is not `https://`", quote(url)),
                "sealc sends a held key only over TLS: give the API's `https://` URL",
            );
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let parsed = split_authority(authority)
            .and_then(|(h, port)| Some((crate::netpolicy::parse_host(h).ok()?, port)));
        let Some((parsed, port)) = parsed else {
            return refuse(
                format!(
                    "the host and port of `codex.provider.base_url` {} do not parse",
                    quote(url)
                ),
                "write `https://HOST[:PORT]/PATH`, with no user name",
            );
        };
        let policy = crate::netpolicy::Policy::new(
            &net.hosts,
            net.ports.iter().copied(),
            net.allow_ranges.iter().copied(),
        );
        if let Err(r) = policy.check_target(&parsed, port) {
            return refuse(
                format!(
                    "sealc's proxy would refuse {parsed}:{port}, the held key's API: {}",
                    r.0
                ),
                "list the API's host in `network.hosts` and its port in `network.ports`",
            );
        }
        Some(HeldKey {
            secret,
            host: parsed.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// The seal's `CODEX_HOME`, where `sealc exec` installs the config: it
    /// must lie in a write root (nothing else is written on the host).
    pub(super) fn codex_home(
        &mut self,
        spec: &Spec,
        roots: &[Root],
        env: &EnvIr,
    ) -> Option<String> {
        let home = match (env.vars.get("CODEX_HOME"), env.vars.get("HOME")) {
            (Some(h), _) => h.clone(),
            (None, Some(h)) => format!("{}/.codex", h.trim_end_matches('/')),
            (None, None) => return None,
        };
        let inside = roots
            .iter()
            .filter(|r| r.kind == RootKind::Write)
            .any(|r| is_within(&home, &r.path) && home != r.path);
        if !inside {
            let span = spec
                .env
                .set
                .get("CODEX_HOME")
                .or_else(|| spec.env.set.get("HOME"))
                .map(|s| s.span.clone())
                .or_else(|| spec.codex.span.clone());
            let mut d = Diagnostic::error(
                crate::diag::code::CODEX_HOME,
                format!(
                    "the seal's CODEX_HOME {} lies strictly below no write root",
                    quote(&home)
                ),
            )
            .label("`sealc exec` makes the Codex home fresh for every run there, and Codex writes its state there")
            .help("set `CODEX_HOME` (or `HOME`) in `env.set` to a directory below a write root (not the write root itself: it is made and removed with each run)");
            if let Some(span) = span {
                d = d.at(span);
            }
            self.diags.push(d);
            return None;
        }
        Some(home)
    }
}

/// Why a root has no spelling in a Codex permission profile, if it has none.
pub fn codex_inexpressible(r: &Root) -> Option<&'static str> {
    match r.kind {
        RootKind::MetadataOnly => Some(
            "a profile entry is `read`, `write` or `deny`: there is no \"metadata but not data\"",
        ),
        RootKind::WriteDevice if !crate::known::DEV_SET.contains(&r.path.as_str()) => Some(
            "Codex's sandbox shows only its minimal /dev (null, zero, full, random, urandom, tty), and a writable file entry makes it fail to start",
        ),
        RootKind::Write if r.host_kind == Some(PathKind::File) => Some(
            "a writable file entry makes Codex's sandbox fail to start (it mounts stand-ins for `.git`, `.codex` and the like below every write root)",
        ),
        _ => None,
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port` (443 when none is given): the
/// host as written and the port; `None` for a user name, an empty or zero
/// port, or anything after a bracket but a port.
fn split_authority(a: &str) -> Option<(&str, u16)> {
    if a.contains('@') {
        return None;
    }
    let (host, port) = match a.strip_prefix('[') {
        Some(after) => {
            let close = after.find(']')? + 2;
            let tail = &a[close..];
            match tail.strip_prefix(':') {
                Some(p) => (&a[..close], Some(p)),
                None if tail.is_empty() => (&a[..close], None),
                None => return None,
            }
        }
        None => match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        },
    };
    let port = match port {
        None => 443,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u16>().ok().filter(|p| *p != 0)?
        }
        Some(_) => return None,
    };
    Some((host, port))
}

#[cfg(test)]
mod authority_tests {
    use super::split_authority;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("api.openai.com"),
            Some(("api.openai.com", 443))
        );
        assert_eq!(split_authority("h:8443"), Some(("h", 8443)));
        assert_eq!(split_authority("[::1]"), Some(("[::1]", 443)));
        assert_eq!(split_authority("[::1]:9"), Some(("[::1]", 9)));
        for bad in [
            "h:", "h:0", "h:+1", "h:70000", "u@h", "[::1]x", "[::1", "h:1a",
        ] {
            assert_eq!(split_authority(bad), None, "{bad}");
        }
    }
}

#[cfg(test)]
mod held_key_tests {
    fn compiled(provider: &str, network: &str) -> Result<crate::Compiled, Vec<String>> {
        let src = format!(
            "version = 1\nname = \"h\"\n[target]\nplatform = \"linux\"\n[filesystem]\nwrite = [\"/w\"]\n[network]\n{network}\n[env]\nset = {{ CODEX_HOME = \"/w/.codex\" }}\nsecret = [\"K\"]\n[codex]\nversion = \"0.171.0\"\n[codex.provider]\n{provider}\n"
        );
        crate::compile(
            "h.toml",
            &src,
            &Vec::new(),
            &crate::facts::FakeHost::new().dir("/w"),
        )
        .map_err(|e| e.0.iter().map(|d| d.message.clone()).collect())
    }

    const ALLOW: &str = "mode = \"allowlist\"\nhosts = [\"api.example.com\"]\nports = [443]";

    #[test]
    fn a_held_key_goes_only_over_tls_to_a_listed_host_through_sealcs_proxy() {
        let c = compiled(
            "base_url = \"https://api.example.com/v1\"\nenv_key = \"K\"\nhold_key = true",
            ALLOW,
        )
        .unwrap();
        assert!(c.ir.env.secrets.is_empty(), "{:?}", c.ir.env);
        assert_eq!(c.ir.env.held.iter().collect::<Vec<_>>(), ["K"]);
        let held = c.ir.codex.provider.as_ref().unwrap().held.clone().unwrap();
        assert_eq!(
            (held.host.as_str(), held.port, held.path.as_str()),
            ("api.example.com", 443, "/v1")
        );
        let config = String::from_utf8(c.files["codex/config.toml"].clone()).unwrap();
        assert!(
            config.contains("base_url = \"http://api.example.com:443/v1\""),
            "{config}"
        );
        assert!(!config.contains("env_key"), "{config}");

        let refused = |provider: &str, network: &str, says: &str| {
            let e = compiled(provider, network).unwrap_err();
            assert!(e.iter().any(|m| m.contains(says)), "{says}: {e:#?}");
        };
        refused(
            "base_url = \"http://api.example.com/v1\"\nenv_key = \"K\"\nhold_key = true",
            ALLOW,
            "is not `https://`",
        );
        refused(
            "base_url = \"https://api.example.com/v1\"\nhold_key = true",
            ALLOW,
            "needs `env_key`",
        );
        refused(
            "base_url = \"https://api.example.com/v1\"\nenv_key = \"K\"\nhold_key = true",
            "mode = \"proxy\"\nproxy = \"127.0.0.1:3128\"",
            "needs `network.mode = \"allowlist\"`",
        );
        refused(
            "base_url = \"https://other.example.com/v1\"\nenv_key = \"K\"\nhold_key = true",
            ALLOW,
            "would refuse other.example.com:443",
        );
        refused(
            "base_url = \"https://api.example.com:8443/v1\"\nenv_key = \"K\"\nhold_key = true",
            ALLOW,
            "would refuse api.example.com:8443",
        );
        refused(
            "base_url = \"https://u@api.example.com/v1\"\nenv_key = \"K\"\nhold_key = true",
            ALLOW,
            "do not parse",
        );
    }
}
