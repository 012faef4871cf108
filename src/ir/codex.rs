//! Lowering `[codex]`: the releases, the workspace, the provider, the
//! Codex home, the credentials, and Codex's own permission profile.

use super::*;

impl Lower<'_> {
    pub(super) fn codex(&mut self, spec: &Spec, roots: &[Root], env: &EnvIr) -> CodexIr {
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
        let provider = self.codex_provider(spec, env);
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
    pub(super) fn codex_provider(&mut self, spec: &Spec, env: &EnvIr) -> Option<ProviderIr> {
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
            if !env.secrets.contains(&k.value) {
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
        Some(ProviderIr {
            base_url: url,
            env_key: p.env_key.as_ref().map(|k| k.value.clone()),
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
