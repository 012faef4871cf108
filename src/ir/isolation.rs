//! `exec.isolation = "landlock"`: what a seal without namespaces cannot
//! enforce is refused here, each at the entry that asks for it. Landlock
//! only ever adds access beneath a path: it cannot take back, deeper in a
//! write root, what that root grants, and it has no network of its own to
//! bridge sealc's proxy into.

use super::*;
use crate::spec::{Isolation, ProcMode};

impl Lower<'_> {
    /// The seal's isolation, with the refusals of the Landlock mode.
    pub(super) fn isolation(&mut self, spec: &Spec, roots: &[Root], network: &NetIr) {
        if self.platform(spec) == Platform::Macos {
            // Said, not silently dropped: a spec shared by both platforms
            // compiles, and its macOS seal is seatbelt's whatever it asks.
            let linux_only = [
                (
                    "exec.isolation",
                    spec.exec.isolation.as_ref().map(|i| i.span.clone()),
                ),
                ("exec.proc", spec.exec.proc.as_ref().map(|p| p.span.clone())),
            ];
            for (key, span) in linux_only {
                if let Some(span) = span {
                    self.diags.push(
                        Diagnostic::warning(
                            crate::diag::code::EXEC_ISOLATION,
                            format!("`{key}` applies to Linux seals; this macOS seal runs under seatbelt whatever it says"),
                        )
                        .at(span)
                        .label("ignored for `--platform macos`"),
                    );
                }
            }
            return;
        }
        let Some(mode) = &spec.exec.isolation else {
            return;
        };
        if mode.value != Isolation::Landlock {
            return;
        }
        let code = crate::diag::code::EXEC_ISOLATION;
        let why =
            "Landlock only adds access beneath a path; it cannot take back part of a write root";
        for r in roots {
            let within = |w: &Root| {
                w.kind == RootKind::Write
                    && w.spellings
                        .iter()
                        .any(|s| r.spellings.iter().any(|p| is_within(p, s)))
            };
            let refused = match r.kind {
                RootKind::Protect => Some("a protected path"),
                RootKind::DenyRead | RootKind::MetadataOnly if roots.iter().any(within) => {
                    Some("a denied root inside a write root")
                }
                _ => None,
            };
            let Some(what) = refused else { continue };
            let entry = r.entry();
            self.diags.push(
                Diagnostic::error(
                    code,
                    format!(
                        "{what} ({}) cannot be kept with `exec.isolation = \"landlock\"`",
                        visible(&entry)
                    ),
                )
                .at(r.span.clone())
                .label(why)
                .help(if r.protect.as_ref().is_some_and(|p| p.standing == Standing::CodexConfig) {
                    "a Codex seal keeps its config read-only inside CODEX_HOME, which needs the namespaces mode: remove `exec.isolation` (`sealc doctor` says whether this host can run it)".to_string()
                } else {
                    "move the root out of the write root, or remove `exec.isolation` to use the namespaces mode (`sealc doctor` says whether this host can run it)".to_string()
                }),
            );
        }
        if network.mode == NetMode::Allowlist {
            let span = spec
                .network
                .mode
                .as_ref()
                .map_or_else(|| mode.span.clone(), |m| m.span.clone());
            self.diags.push(
                Diagnostic::error(
                    code,
                    "network mode `allowlist` cannot be kept with `exec.isolation = \"landlock\"`",
                )
                .at(span)
                .label("sealc's own proxy is bridged into the sandbox's network namespace, which this mode has none of")
                .help("run your own proxy with network mode `proxy` (Landlock lets TCP connect only to its port), or remove `exec.isolation`"),
            );
        }
        if network.mode == NetMode::Proxy {
            // Landlock's TCP rules name a port, never an address.
            let span = spec
                .network
                .mode
                .as_ref()
                .map_or_else(|| mode.span.clone(), |m| m.span.clone());
            let port = network.proxy.as_ref().map_or(0, |p| p.port);
            self.diags.push(
                Diagnostic::warning(
                    code,
                    format!("with `exec.isolation = \"landlock\"`, network mode `proxy` lets the command connect to port {port} on any address, not only the proxy's"),
                )
                .at(span)
                .label("Landlock's TCP rules name a port, not an address")
                .help("a server the agent picks that listens on that port is reachable (a way out for data); where the namespaces mode can run, it bridges only the proxy's own address"),
            );
        }
        if let Some(p) = &spec.exec.proc {
            if p.value != ProcMode::Host {
                self.diags.push(
                    Diagnostic::error(
                        code,
                        format!(
                            "`exec.proc = \"{}\"` cannot be kept with `exec.isolation = \"landlock\"`",
                            p.value.as_str()
                        ),
                    )
                    .at(p.span.clone())
                    .label("without a mount namespace the command sees the host's /proc")
                    .help("remove `exec.proc` (the Landlock mode always has the host's /proc, and Landlock keeps the command out of other processes' entries)"),
                );
            }
        }
    }
}
