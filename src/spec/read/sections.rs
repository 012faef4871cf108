//! Reading each section of a spec (`[target]`, `[vars]`, `[filesystem]`,
//! `[network]`, `[env]`, `[ipc]`, `[exec]`, `[limits]`, `[codex]`,
//! `[[assert]]`) into its typed form, every problem collected.

use super::*;

impl Cx {
    pub(super) fn target(&mut self, v: &Val<'_>) -> Target {
        let Some(t) = self.table("target", v) else {
            return Target::default();
        };
        t.finish(self, &["platform", "base"]);
        Target {
            platform: self.enum_value(
                &t,
                "platform",
                &[("macos", Platform::Macos), ("linux", Platform::Linux)],
            ),
            base: self.enum_value(
                &t,
                "base",
                &[
                    ("allow-default", Base::AllowDefault),
                    ("deny-default", Base::DenyDefault),
                ],
            ),
        }
    }

    pub(super) fn vars(&mut self, v: &Val<'_>) -> BTreeMap<String, VarDecl> {
        let mut out = BTreeMap::new();
        let Some(t) = self.table("vars", v) else {
            return out;
        };
        for (k, val) in &t.entries {
            let name = k.get_ref().to_string();
            let path = format!("vars.{name}");
            if !is_var_name(&name) {
                self.push(
                    Diagnostic::error(
                        crate::diag::code::SPEC_VALUE,
                        format!("var name {} is not allowed", quote(&name)),
                    )
                    .at(k.span())
                    .label("letters, digits and `_`, not starting with a digit")
                    .help("rename the var, e.g. `proxy_port`"),
                );
                continue;
            }
            let Some(vt) = self.table(&path, val) else {
                continue;
            };
            vt.finish(self, &["env", "default", "required", "help"]);
            let decl = VarDecl {
                name: Spanned::new(name.clone(), k.span()),
                env: self.opt_string(&vt, "env"),
                default: self.opt_string(&vt, "default"),
                required: vt
                    .get("required")
                    .and_then(|b| self.boolean(format_args!("{path}.required"), b)),
                help: self.opt_string(&vt, "help"),
            };
            if let (Some(r), Some(d)) = (&decl.required, &decl.default) {
                if r.value {
                    self.push(
                        Diagnostic::error(
                            crate::diag::code::SPEC_VALUE,
                            format!("var `{name}` is required and also has a default"),
                        )
                        .at(d.span.clone())
                        .label("a required var takes no default")
                        .help("remove `default`, or remove `required = true`"),
                    );
                }
            }
            if let Some(e) = &decl.env {
                crate::spec::check_env_name(&e.value, &e.span, &mut self.diags);
            }
            out.insert(name, decl);
        }
        out
    }

    pub(super) fn filesystem(&mut self, v: &Val<'_>) -> Filesystem {
        let Some(t) = self.table("filesystem", v) else {
            return Filesystem::default();
        };
        t.finish(
            self,
            &[
                "deny_read",
                "allow_read",
                "metadata_only",
                "write",
                "write_devices",
                "protect",
            ],
        );
        Filesystem {
            deny_read: self.strings("filesystem.deny_read", t.get("deny_read")),
            allow_read: self.strings("filesystem.allow_read", t.get("allow_read")),
            metadata_only: self.strings("filesystem.metadata_only", t.get("metadata_only")),
            write: self.strings("filesystem.write", t.get("write")),
            write_devices: self.strings("filesystem.write_devices", t.get("write_devices")),
            protect: self.strings("filesystem.protect", t.get("protect")),
        }
    }

    pub(super) fn launcher(&mut self, v: &Val<'_>) -> Option<Launcher> {
        let t = self.table("launcher", v)?;
        t.finish(self, &["path"]);
        let path = match t.get("path") {
            Some(p) => self.string("launcher.path", p),
            None => {
                t.missing(self, "path", "\"/path/to/agent\"");
                None
            }
        };
        Some(Launcher { path: path? })
    }

    pub(super) fn network(&mut self, v: &Val<'_>) -> Network {
        let Some(t) = self.table("network", v) else {
            return Network::default();
        };
        t.finish(self, &["mode", "proxy", "hosts", "ports", "allow_ranges"]);
        let mut ports = Vec::new();
        if let Some(pv) = t.get("ports") {
            for (i, item) in self
                .array("network.ports", pv, "an array of integers")
                .into_iter()
                .enumerate()
            {
                let path = format!("network.ports[{i}]");
                // A string is a port given by a var, checked once substituted.
                match item.get_ref() {
                    DeValue::String(s) if is_port_var(s) => {
                        ports.push(PortEntry::Var(Spanned::new(s.to_string(), item.span())));
                    }
                    DeValue::String(_) => self.type_error(&path, item, "an integer or a `${var}`"),
                    _ => {
                        if let Some(p) = self.integer(&path, item) {
                            ports.push(PortEntry::Number(p));
                        }
                    }
                }
            }
        }
        Network {
            mode: self.enum_value(
                &t,
                "mode",
                &[
                    ("none", NetMode::None),
                    ("proxy", NetMode::Proxy),
                    ("open", NetMode::Open),
                    ("allowlist", NetMode::Allowlist),
                ],
            ),
            proxy: self.opt_string(&t, "proxy"),
            hosts: self.strings("network.hosts", t.get("hosts")),
            ports,
            allow_ranges: self.strings("network.allow_ranges", t.get("allow_ranges")),
        }
    }

    pub(super) fn env(&mut self, v: &Val<'_>) -> EnvSpec {
        let Some(t) = self.table("env", v) else {
            return EnvSpec::default();
        };
        t.finish(self, &["pass", "set", "secret", "allow_loader_vars"]);
        let mut set = BTreeMap::new();
        let mut set_keys = BTreeMap::new();
        if let Some(sv) = t.get("set") {
            if let Some(st) = self.table("env.set", sv) {
                for (k, val) in &st.entries {
                    let name = k.get_ref().to_string();
                    if let Some(s) = self.string(format_args!("env.set.{name}"), val) {
                        set_keys.insert(name.clone(), k.span());
                        set.insert(name, s);
                    }
                }
            }
        }
        EnvSpec {
            pass: self.strings("env.pass", t.get("pass")),
            set,
            set_keys,
            secret: self.strings("env.secret", t.get("secret")),
            allow_loader_vars: t
                .get("allow_loader_vars")
                .and_then(|v| self.boolean("env.allow_loader_vars", v)),
        }
    }

    pub(super) fn ipc(&mut self, v: &Val<'_>) -> crate::spec::Ipc {
        let Some(t) = self.table("ipc", v) else {
            return crate::spec::Ipc::default();
        };
        t.finish(self, &["allow"]);
        crate::spec::Ipc {
            allow: self.strings("ipc.allow", t.get("allow")),
        }
    }

    pub(super) fn exec(&mut self, v: &Val<'_>) -> Exec {
        let Some(t) = self.table("exec", v) else {
            return Exec::default();
        };
        t.finish(
            self,
            &[
                "sandbox_exec",
                "bwrap",
                "timeout",
                "proc",
                "isolation",
                "reset",
                "outputs",
            ],
        );
        let timeout = t.get("timeout").and_then(|tv| {
            let tt = self.table("exec.timeout", tv)?;
            tt.finish(self, &["bin", "seconds"]);
            let bin = match tt.get("bin") {
                Some(b) => self.string("exec.timeout.bin", b),
                None => {
                    tt.missing(self, "bin", "\"/usr/bin/timeout\"");
                    None
                }
            };
            let seconds = match tt.get("seconds") {
                Some(s) => self.integer("exec.timeout.seconds", s),
                None => {
                    tt.missing(self, "seconds", "240");
                    None
                }
            };
            Some(Timeout {
                bin: bin?,
                seconds: seconds?,
            })
        });
        Exec {
            reset: self.strings("exec.reset", t.get("reset")),
            outputs: self.strings("exec.outputs", t.get("outputs")),
            sandbox_exec: self.opt_string(&t, "sandbox_exec"),
            bwrap: self.opt_string(&t, "bwrap"),
            timeout,
            proc: self.enum_value(
                &t,
                "proc",
                &[
                    ("fresh", ProcMode::Fresh),
                    ("none", ProcMode::None),
                    ("host", ProcMode::Host),
                ],
            ),
            isolation: self.enum_value(
                &t,
                "isolation",
                &[
                    ("namespaces", Isolation::Namespaces),
                    ("landlock", Isolation::Landlock),
                ],
            ),
        }
    }

    pub(super) fn limits(&mut self, v: &Val<'_>) -> Limits {
        let Some(t) = self.table("limits", v) else {
            return Limits::default();
        };
        use crate::limit::Limit;
        let keys = Limit::ALL.map(Limit::key);
        t.finish(self, &keys);
        let mut get = |l: Limit| {
            let k = l.key();
            t.get(k)
                .and_then(|v| self.integer(format_args!("limits.{k}"), v))
        };
        Limits {
            wall_seconds: get(Limit::WallSeconds),
            cpu_seconds: get(Limit::CpuSeconds),
            memory_mib: get(Limit::MemoryMib),
            processes: get(Limit::Processes),
            open_files: get(Limit::OpenFiles),
            file_size_mib: get(Limit::FileSizeMib),
            output_bytes: get(Limit::OutputBytes),
        }
    }

    pub(super) fn codex(&mut self, v: &Val<'_>) -> Codex {
        let Some(t) = self.table("codex", v) else {
            return Codex::default();
        };
        t.finish(
            self,
            &[
                "version",
                "model",
                "reasoning_effort",
                "workspace",
                "sandbox",
                "provider",
                "allow_system_config",
                "allow_project_config",
                "credentials",
                "mcp_servers",
            ],
        );
        let provider = t.get("provider").and_then(|pv| {
            let pt = self.table("codex.provider", pv)?;
            pt.finish(self, &["base_url", "env_key", "hold_key"]);
            let base_url = match pt.get("base_url") {
                Some(b) => self.string("codex.provider.base_url", b),
                None => {
                    pt.missing(self, "base_url", "\"http://127.0.0.1:8080/v1\"");
                    None
                }
            };
            Some(CodexProvider {
                base_url: base_url?,
                env_key: self.opt_string(&pt, "env_key"),
                hold_key: pt
                    .get("hold_key")
                    .and_then(|v| self.boolean("codex.provider.hold_key", v)),
            })
        });
        Codex {
            span: Some(v.span()),
            version: self.opt_string(&t, "version"),
            model: self.opt_string(&t, "model"),
            reasoning_effort: self.opt_string(&t, "reasoning_effort"),
            workspace: self.opt_string(&t, "workspace"),
            sandbox: self.opt_string(&t, "sandbox"),
            provider,
            credentials: self.opt_string(&t, "credentials"),
            allow_system_config: t
                .get("allow_system_config")
                .and_then(|v| self.boolean("codex.allow_system_config", v)),
            allow_project_config: t
                .get("allow_project_config")
                .and_then(|v| self.boolean("codex.allow_project_config", v)),
            mcp_servers: t
                .get("mcp_servers")
                .map(|v| self.mcp_servers(v))
                .unwrap_or_default(),
        }
    }

    /// `[codex.mcp_servers.NAME]`: each server's seal, binding and command.
    fn mcp_servers(&mut self, v: &Val<'_>) -> BTreeMap<String, McpServer> {
        let mut out = BTreeMap::new();
        let Some(t) = self.table("codex.mcp_servers", v) else {
            return out;
        };
        for (k, val) in &t.entries {
            let name = k.get_ref().to_string();
            let path = format!("codex.mcp_servers.{name}");
            let Some(st) = self.table(&path, val) else {
                continue;
            };
            st.finish(self, &["seal", "binding", "command", "port", "starts"]);
            let need = |cx: &mut Self, key: &str, example: &str| match st.get(key) {
                Some(v) => cx.string(format_args!("{path}.{key}"), v),
                None => {
                    st.missing(cx, key, example);
                    None
                }
            };
            let seal = need(self, "seal", "\"/path/to/server/seal.json\"");
            let binding = need(self, "binding", "\"sha256:...\"");
            let command = match st.get("command") {
                Some(c) => self.strings(format_args!("{path}.command"), Some(c)),
                None => {
                    st.missing(
                        self,
                        "command",
                        "[\"/usr/bin/python3\", \"/srv/mcp/docs.py\"]",
                    );
                    continue;
                }
            };
            let port = st
                .get("port")
                .and_then(|v| self.integer(format_args!("{path}.port"), v));
            let starts = st
                .get("starts")
                .and_then(|v| self.integer(format_args!("{path}.starts"), v));
            let (Some(seal), Some(binding)) = (seal, binding) else {
                continue;
            };
            out.insert(
                name.clone(),
                McpServer {
                    name: Spanned::new(name, k.span()),
                    seal,
                    binding,
                    command,
                    port,
                    starts,
                },
            );
        }
        out
    }

    pub(super) fn asserts(&mut self, v: &Val<'_>) -> Vec<Assert> {
        let mut out = Vec::new();
        for (i, item) in self
            .array("assert", v, "an array of tables (`[[assert]]`)")
            .into_iter()
            .enumerate()
        {
            let path = format!("assert[{i}]");
            let Some(t) = self.table(&path, item) else {
                continue;
            };
            t.finish(
                self,
                &["allow", "deny", "names", "paths", "platform", "remote"],
            );
            out.push(Assert {
                span: item.span(),
                allow: self.opt_string(&t, "allow"),
                deny: self.opt_string(&t, "deny"),
                paths: self.strings(format_args!("{path}.paths"), t.get("paths")),
                remote: self.strings(format_args!("{path}.remote"), t.get("remote")),
                names: self.strings(format_args!("{path}.names"), t.get("names")),
                platform: self.opt_string(&t, "platform"),
            });
        }
        out
    }
}
