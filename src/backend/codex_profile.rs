//! Stage 4d, **render** the seal as a Codex permission profile
//! (`[codex] sandbox = "profile"`): the `default_permissions` key and the
//! `[permissions.sealc]` table of `codex/config.toml`, built (as a
//! [`super::toml_doc`] document) from the IR alone, and the strict check of
//! that section.
//!
//! | IR | profile |
//! | --- | --- |
//! | base `allow-default` | `":root" = "read"` |
//! | base `deny-default` | each Linux system root (`bwrap::SYSTEM_ROOTS`) `= "read"` |
//! | `deny_read` root | every spelling `= "deny"` |
//! | `allow_read` root, re-allowed launcher entry | every spelling `= "read"` |
//! | `write` root (a directory) | every spelling `= "write"` |
//! | `protect` root (and a Codex seal's config) | every spelling `= "read"` |
//! | `write_devices` entry in Codex's minimal `/dev` | none: writable there already |
//! | `write_devices` entry elsewhere, `write` root that is a file | none: a compile error |
//! | `metadata_only` root | none: a compile error (`sealc::codex::profile`) |
//! | network `none` | `network.enabled = false` |
//! | network `proxy` | `network.enabled = true`, `proxy_url`, `domains` = the allowlist |
//! | network `open` | `network.enabled = true`, `mode = "full"` |
//!
//! Codex fails open on typos in `[permissions.*]` (an unknown key passes
//! `--strict-config`, an unknown special path is dropped with a warning), so
//! [`check_config`] checks what sealc wrote against a strict schema of the
//! section; `compile` (and so `verify`) runs it on every profile.

use std::collections::BTreeMap;

use toml::{Table, Value};

use super::toml_doc::Doc;

use crate::ir::{Ir, Root, RootKind};
use crate::spec::{Base, NetMode};

/// The name of the permission profile sealc writes.
pub const PROFILE_ID: &str = "sealc";

pub use crate::known::PATH_SINCE;

/// The special paths of a profile's `filesystem` table, each with the first
/// tested release that reads it (`None`: all of them).
pub const SPECIAL_PATHS: &[(&str, Option<&str>)] = &[
    (":minimal", None),
    (":project_roots", Some("0.169.0")),
    (":root", None),
    (":slash_tmp", None),
    (":tmpdir", None),
    (":workspace_roots", None),
];

/// The keys of a profile table.
const PROFILE_KEYS: &[&str] = &["description", "extends", "filesystem", "network"];
/// Boolean keys of a profile's `network` table.
const NETWORK_BOOLS: &[&str] = &[
    "allow_local_binding",
    "allow_upstream_proxy",
    "dangerously_allow_all_unix_sockets",
    "dangerously_allow_non_loopback_proxy",
    "enable_socks5",
    "enable_socks5_udp",
    "enabled",
];
/// String keys of a profile's `network` table.
const NETWORK_STRINGS: &[&str] = &["proxy_url", "socks_url"];

pub use crate::ir::codex_inexpressible as inexpressible;

/// The `filesystem` table: path (or special path) to access mode. A path
/// named twice keeps the mode of the later IR entry (roots are sorted by
/// kind: deny, allow, write), the same as the more specific seal rule.
pub fn filesystem(ir: &Ir) -> BTreeMap<String, &'static str> {
    let mut fs = BTreeMap::new();
    match ir.base {
        Base::AllowDefault => {
            fs.insert(":root".to_string(), "read");
        }
        Base::DenyDefault => {
            for r in crate::backend::bwrap::SYSTEM_ROOTS {
                fs.insert(r.to_string(), "read");
            }
        }
    }
    for l in ir.launcher.iter().filter(|l| l.reallow) {
        for p in &l.spellings {
            fs.insert(p.clone(), "read");
        }
    }
    for r in &ir.roots {
        if codex_guards(ir, r) {
            continue;
        }
        let mode = match r.kind {
            RootKind::DenyRead => "deny",
            RootKind::AllowRead => "read",
            RootKind::Write => "write",
            // Codex's own minimal /dev has them writable already; an entry
            // for a file would stop its sandbox from starting.
            RootKind::WriteDevice => continue,
            RootKind::MetadataOnly => continue, // refused when lowering
            // Read-only inside its write root, as the outer seal keeps it.
            RootKind::Protect => "read",
        };
        for p in &r.spellings {
            fs.insert(p.clone(), mode);
        }
    }
    fs
}

/// An absent denied `.codex` right below a write root: Codex's sandbox
/// guards that name itself (a stand-in is mounted there, so nothing can be
/// read or made), and a `deny` entry on top stops its sandbox from starting
/// ("Can't create file at <root>/.codex: Is a directory", every tested
/// release). The outer seal refuses to start once it appears.
fn codex_guards(ir: &Ir, r: &Root) -> bool {
    r.kind == RootKind::DenyRead
        && r.real.is_none()
        && r.path.rsplit_once('/').is_some_and(|(parent, name)| {
            name == ".codex"
                && ir
                    .roots
                    .iter()
                    .any(|w| w.kind == RootKind::Write && w.path == parent)
        })
}

/// The `network` table.
pub fn network<'a>(ir: &'a Ir, t: &mut Doc<'a>) {
    match ir.network.mode {
        NetMode::None => {
            t.set("enabled", false);
        }
        // allowlist: the same proxy variables, pointing at sealc's own proxy.
        NetMode::Proxy | NetMode::Allowlist => {
            t.set("enabled", true);
            if let Some(p) = &ir.network.proxy {
                let host = if p.host.contains(':') {
                    format!("[{}]", p.host)
                } else {
                    p.host.clone()
                };
                t.set("proxy_url", format!("http://{host}:{}", p.port));
            }
            if !ir.network.hosts.is_empty() {
                let domains = t.table("domains");
                for h in &ir.network.hosts {
                    domains.set(h.as_str(), "allow");
                }
            }
        }
        NetMode::Open => {
            t.set("enabled", true).set("mode", "full");
        }
    }
}

/// Add `default_permissions` and `[permissions.sealc]` to a config table.
pub fn insert<'a>(ir: &'a Ir, t: &mut Doc<'a>) {
    t.set("default_permissions", PROFILE_ID);
    let profile = t.table("permissions").table(PROFILE_ID);
    profile.set(
        "description",
        format!(
            "seal `{}`, generated by sealc",
            crate::diag::visible(&ir.name)
        ),
    );
    let fs = profile.table("filesystem");
    for (path, mode) in filesystem(ir) {
        fs.set(path, mode);
    }
    network(ir, profile.table("network"));
}

fn older(v: &str, since: &str) -> bool {
    match (semver::Version::parse(v), semver::Version::parse(since)) {
        (Ok(v), Ok(s)) => v < s,
        _ => true,
    }
}

fn mode_ok(v: &Value) -> bool {
    matches!(v.as_str(), Some("read" | "write" | "deny"))
}

/// Check a config's `default_permissions` and `[permissions]` strictly, for
/// the releases it targets: every profile key known, every filesystem key an
/// absolute path or a special path all of them read, every value of the
/// right kind. Each problem is one line naming its TOML path.
pub fn check_config(config: &str, versions: &[String]) -> Result<(), Vec<String>> {
    let t: Table = toml::from_str(config).map_err(|e| vec![format!("not TOML: {e}")])?;
    check_table(&t, versions)
}

/// [`check_config`] on a parsed config.
pub fn check_table(t: &Table, versions: &[String]) -> Result<(), Vec<String>> {
    let mut bad = Vec::new();
    let perms = match t.get("permissions") {
        None => None,
        Some(Value::Table(p)) => Some(p),
        Some(_) => {
            bad.push("permissions: not a table".to_string());
            None
        }
    };
    match t.get("default_permissions") {
        None => {}
        Some(Value::String(name)) if name.starts_with(':') => {}
        Some(Value::String(name)) if !perms.is_some_and(|p| p.contains_key(name)) => {
            bad.push(format!(
                "default_permissions: no profile `{name}` in [permissions]"
            ));
        }
        Some(Value::String(_)) => {}
        Some(_) => bad.push("default_permissions: not a string".into()),
    }
    for (name, profile) in perms.into_iter().flatten() {
        let at = format!("permissions.{name}");
        let Some(profile) = profile.as_table() else {
            bad.push(format!("{at}: not a table"));
            continue;
        };
        for (k, v) in profile {
            match (k.as_str(), v) {
                ("description" | "extends", Value::String(_)) => {}
                ("filesystem", Value::Table(fs)) => check_filesystem(&at, fs, versions, &mut bad),
                ("network", Value::Table(n)) => check_network(&at, n, &mut bad),
                (k, _) if PROFILE_KEYS.contains(&k) => bad.push(format!("{at}.{k}: wrong type")),
                (k, _) => bad.push(format!("{at}.{k}: unknown key")),
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad)
    }
}

fn check_filesystem(at: &str, fs: &Table, versions: &[String], bad: &mut Vec<String>) {
    for (k, v) in fs {
        let at = format!("{at}.filesystem.\"{k}\"");
        if k == "glob_scan_max_depth" {
            if v.as_integer().is_none_or(|n| n < 1) {
                bad.push(format!("{at}: not a positive integer"));
            }
            continue;
        }
        if k.starts_with(':') {
            match SPECIAL_PATHS.iter().find(|(p, _)| p == k) {
                None => bad.push(format!("{at}: unknown special path")),
                Some((_, Some(since))) => {
                    let old: Vec<&str> = versions
                        .iter()
                        .filter(|v| older(v, since))
                        .map(String::as_str)
                        .collect();
                    if !old.is_empty() {
                        bad.push(format!(
                            "{at}: Codex {} ignores it (read from {since} on)",
                            old.join(", ")
                        ));
                    }
                }
                Some((_, None)) => {}
            }
        } else if !k.starts_with('/') {
            bad.push(format!("{at}: not an absolute path or a special path"));
        } else if k.contains('*') || k.contains('?') || k.contains('[') {
            bad.push(format!("{at}: a glob (only warned about by some releases)"));
        }
        if !mode_ok(v) {
            bad.push(format!("{at}: not \"read\", \"write\" or \"deny\""));
        }
    }
}

fn check_network(at: &str, n: &Table, bad: &mut Vec<String>) {
    for (k, v) in n {
        let at = format!("{at}.network.{k}");
        let ok = match k.as_str() {
            k if NETWORK_BOOLS.contains(&k) => v.is_bool(),
            k if NETWORK_STRINGS.contains(&k) => v.is_str(),
            "mode" => matches!(v.as_str(), Some("limited" | "full")),
            "domains" | "unix_sockets" => v.as_table().is_some_and(|d| {
                d.values()
                    .all(|x| matches!(x.as_str(), Some("allow" | "deny")))
            }),
            _ => {
                bad.push(format!("{at}: unknown key"));
                continue;
            }
        };
        if !ok {
            bad.push(format!("{at}: wrong type or value"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_strict_check_refuses_what_codex_lets_through() {
        let ok = "default_permissions = \"p\"\n[permissions.p.filesystem]\n\":root\" = \"read\"\n\"/w\" = \"write\"\n[permissions.p.network]\nenabled = false\n";
        assert_eq!(check_config(ok, &v(&["0.137.0"])), Ok(()));
        for (bad, what) in [
            ("[permissions.p]\nfilesytem = {}\n", "unknown key"),
            (
                "[permissions.p.filesystem]\n\":home\" = \"deny\"\n",
                "unknown special path",
            ),
            (
                "[permissions.p.filesystem]\n\"/x\" = \"none\"\n",
                "not \"read\"",
            ),
            (
                "[permissions.p.filesystem]\n\"x\" = \"read\"\n",
                "not an absolute path",
            ),
            (
                "[permissions.p.filesystem]\n\"/x/**\" = \"deny\"\n",
                "a glob",
            ),
            ("[permissions.p.network]\nenable = false\n", "unknown key"),
            ("[permissions.p.network]\nmode = \"open\"\n", "wrong type"),
            (
                "default_permissions = \"q\"\n[permissions.p]\n",
                "no profile `q`",
            ),
            (
                "[permissions.p.filesystem]\n\":project_roots\" = \"read\"\n",
                "ignores it",
            ),
        ] {
            let e = check_config(bad, &v(&["0.137.0"])).unwrap_err();
            assert!(e.iter().any(|l| l.contains(what)), "{bad}: {e:?}");
        }
        assert_eq!(
            check_config(
                "[permissions.p.filesystem]\n\":project_roots\" = \"read\"\n",
                &v(&["0.171.0"])
            ),
            Ok(())
        );
    }
}
