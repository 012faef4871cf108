//! `sealc show`: what a seal allows, in plain words.
//!
//! Built from the record alone: its spec text is recompiled against its
//! facts (nothing is read from the host), after the record is verified like
//! `sealc verify` does, with the artifact files beside it. A record that
//! does not verify is still shown, under a header that says so, and exits 1.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::{Format, BAD_INPUT, DIFFERS, OK};
use crate::describe::{Group, PathItem, Policy};
use crate::diag::{quote, render, visible, Diagnostic};
use crate::record::{canonical_json, Record};
use crate::verify::Status;

/// `--help`'s closing sections: the exit codes from [`crate::exit::SHOW`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::SHOW,
        "\n\
Example:
  sealc show seal/seal.json",
    )
}

/// Show what a seal allows: reads, writes, network, env, limits and Codex, in plain words.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    #[command(flatten)]
    seal: super::SealArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// A record, read, verified and described.
pub(super) struct Loaded {
    pub record: Record,
    pub policy: Policy,
    /// The checks that failed (`subject: detail`); empty when it verifies.
    pub problems: Vec<String>,
}

/// Read a record, verify it (with the artifact files in `artifacts`, or
/// none: then only the record's own consistency is checked) and describe it.
/// `Err` when nothing can be shown: an unreadable file, not a record, a
/// recorded spec that does not compile.
pub(super) fn load(path: &Path, artifacts: Option<&Path>) -> Result<Loaded, Diagnostic> {
    let shown = quote(&path.display().to_string());
    let unusable = |msg: String| {
        Diagnostic::error(crate::diag::code::RECORD_UNUSABLE, msg)
            .help("give the `seal.json` that `sealc compile` wrote")
    };
    let bytes = crate::hostfs::read_path(path, crate::hostfs::MAX_RECORD).map_err(|e| {
        Diagnostic::error(
            crate::diag::code::IO_READ,
            format!("cannot read {shown}: {e}"),
        )
    })?;
    let record = crate::verify::read_record(&bytes)
        .map_err(|why| unusable(format!("{shown} is not a usable record: {why}")))?;
    let compiled =
        crate::compile_with_facts(&record.spec.file, &record.spec.text, record.facts.clone())
            .map_err(|diags| {
                let errors: Vec<String> = diags
                    .0
                    .iter()
                    .filter(|d| d.is_error())
                    .map(|d| format!("{}: {}", d.code, d.message))
                    .collect();
                Diagnostic::error(
                    crate::diag::code::RECORD_UNUSABLE,
                    format!(
                        "the spec recorded in {shown} does not compile with this sealc: {}",
                        errors.join("; ")
                    ),
                )
                .help("compile the spec again with this sealc")
            })?;
    // Without a directory of artifact files, the recompiled bytes stand in
    // for them: only the record's own consistency is checked.
    let files = |name: &str| match artifacts {
        Some(dir) => crate::hostfs::read_path(&dir.join(name), crate::hostfs::MAX_RECORD).ok(),
        None => compiled.files.get(name).cloned(),
    };
    let report = crate::verify::verify(&bytes, &files).report;
    let problems = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Drift)
        .map(|c| format!("{}: {}", c.subject, visible(&c.detail)))
        .collect();
    Ok(Loaded {
        policy: crate::describe::describe(&compiled.ir, compiled.facts()),
        record,
        problems,
    })
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let loaded = match load(&a.seal.record, Some(&a.seal.artifact_dir())) {
        Ok(l) => l,
        Err(d) => {
            let _ = write!(err, "{}", render(&d.into(), "", ""));
            return BAD_INPUT;
        }
    };
    let text = match a.format {
        Format::Text => to_text(&loaded),
        Format::Json => canonical_json(&json!({
            "schema": crate::describe::SHOW_SCHEMA,
            "binding": loaded.record.binding,
            "verified": loaded.problems.is_empty(),
            "problems": loaded.problems,
            "policy": loaded.policy,
        })),
    };
    let _ = write!(out, "{text}");
    if loaded.problems.is_empty() {
        OK
    } else {
        DIFFERS
    }
}

/// A root: as written, then the path it names and its realpath where they differ.
pub(super) fn path_line(item: &PathItem) -> String {
    let mut s = visible(&item.written);
    if item.path != item.written {
        s.push_str(" → ");
        s.push_str(&visible(&item.path));
    }
    let mut notes = Vec::new();
    if let Some(real) = &item.realpath {
        notes.push(format!("realpath {}", visible(real)));
    }
    notes.extend(item.notes.iter().map(|n| visible(n)));
    if !notes.is_empty() {
        s.push_str(&format!(" ({})", notes.join("; ")));
    }
    s
}

/// A host entry as a person writes it: `.suffix` is `*.suffix`.
fn host(h: &str) -> String {
    match h.strip_prefix('.') {
        Some(rest) => format!("*.{}", visible(rest)),
        None => visible(h),
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items
            .iter()
            .map(|i| visible(i))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn group(out: &mut String, heading: &str, g: &Group) {
    out.push_str(&format!("\n{heading}: {}\n", g.meaning));
    if g.paths.is_empty() {
        out.push_str("  none\n");
    }
    for p in &g.paths {
        out.push_str(&format!("  {}\n", path_line(p)));
    }
}

fn to_text(l: &Loaded) -> String {
    let p = &l.policy;
    let mut out = format!("seal `{}`", visible(&p.seal));
    if let Some(d) = &p.description {
        out.push_str(&format!(": {}", visible(d)));
    }
    out.push('\n');
    out.push_str(&format!("binding {}\n", l.record.binding));
    if l.problems.is_empty() {
        out.push_str("verified: the record and the artifact files agree with recompilation\n");
    } else {
        out.push_str(
            "NOT VERIFIED: `sealc exec` refuses this seal; below is what its record says\n",
        );
        for problem in &l.problems {
            out.push_str(&format!("  {problem}\n"));
        }
        if l.problems.iter().any(|p| p.starts_with("file ")) {
            out.push_str("  (`--artifacts DIR` names where the artifact files are)\n");
        }
    }
    let artifact = match (p.platform.as_str(), p.isolation.as_deref()) {
        ("linux", Some(i)) if i.starts_with("landlock") => "seal.landlock.json",
        ("linux", _) => "seal.bwrap.json",
        _ => "seal.sb",
    };
    out.push_str(&format!(
        "platform {} ({artifact}), base {}\n",
        p.platform, p.base
    ));
    if let Some(isolation) = &p.isolation {
        out.push_str(&format!("isolation {isolation}\n"));
    }
    if let Some(proc) = &p.proc {
        out.push_str(&format!("/proc {proc}\n"));
    }

    let fs = &p.filesystem;
    out.push_str("\ncan read:\n");
    out.push_str(&format!("  {}\n", fs.base_reads));
    if !fs.system_base.is_empty() {
        out.push_str(&format!("  system base: {}\n", list(&fs.system_base)));
    }
    if !fs.can_write.paths.is_empty() {
        out.push_str("  the write roots below\n");
    }
    if !fs.launcher.is_empty() {
        out.push_str("  the launcher and its symlink chain:\n");
        for l in &fs.launcher {
            let what = match &l.target {
                Some(t) => format!("{} to {}", l.kind, visible(t)),
                None => l.kind.clone(),
            };
            let again = if l.reallowed {
                ", re-allowed by literal path"
            } else {
                ""
            };
            out.push_str(&format!("    {} ({what}{again})\n", visible(&l.path)));
        }
    }
    if !fs.can_read.paths.is_empty() {
        out.push_str(&format!("  {}:\n", fs.can_read.meaning));
        for r in &fs.can_read.paths {
            out.push_str(&format!("    {}\n", path_line(r)));
        }
    }
    group(&mut out, "cannot read", &fs.cannot_read);
    if !fs.stat_only.paths.is_empty() {
        group(&mut out, "stat only", &fs.stat_only);
    }
    group(&mut out, "can write", &fs.can_write);
    let devices: Vec<String> = fs.devices.paths.iter().map(|d| d.path.clone()).collect();
    out.push_str(&format!("  devices: {}\n", list(&devices)));
    if !p.reset.is_empty() {
        let reset: Vec<String> = p.reset.iter().map(|r| visible(r)).collect();
        out.push_str(&format!(
            "  emptied before each run (`exec.reset`): {}\n",
            list(&reset)
        ));
    }
    if !p.outputs.is_empty() {
        let outputs: Vec<String> = p.outputs.iter().map(|o| visible(o)).collect();
        out.push_str(&format!(
            "  hashed after each run, attested when written (`exec.outputs`): {}\n",
            list(&outputs)
        ));
    }
    if !fs.read_only.paths.is_empty() {
        group(&mut out, "protected", &fs.read_only);
    }

    let n = &p.network;
    out.push_str(&format!("\nnetwork: {}\n  {}\n", n.mode, n.meaning));
    if n.mode == "proxy" || n.mode == "allowlist" {
        let hosts: Vec<String> = n.hosts.iter().map(|h| host(h)).collect();
        let ports: Vec<String> = n.ports.iter().map(u16::to_string).collect();
        out.push_str(&format!("  hosts: {}\n", list(&hosts)));
        out.push_str(&format!("  ports: {}\n", list(&ports)));
        if n.mode == "allowlist" || !n.allow_ranges.is_empty() {
            out.push_str(&format!(
                "  special ranges a name may resolve into: {}\n",
                list(&n.allow_ranges)
            ));
        }
    }

    if p.platform == "macos" {
        out.push_str("\nipc (docs/ipc.md):\n");
        // In the table's order (docs/ipc.md), then anything else the record's
        // policy names.
        let order: Vec<&str> = crate::ipc::summary(&Default::default())
            .into_iter()
            .map(|(what, _)| what)
            .collect();
        let mut lines: Vec<(&String, &String)> = p.ipc.iter().collect();
        lines.sort_by_key(|(what, _)| order.iter().position(|o| o == what).unwrap_or(order.len()));
        for (what, has) in lines {
            out.push_str(&format!("  can {what}: {has}\n"));
        }
    }

    let e = &p.env;
    out.push_str("\nenv (only these names cross; their values are in env.json):\n");
    out.push_str(&format!(
        "  passed, with the value captured when compiled: {}\n",
        list(&e.passed)
    ));
    if !e.passed_unset.is_empty() {
        out.push_str(&format!(
            "  listed in `pass` but unset when compiled (not crossing): {}\n",
            list(&e.passed_unset)
        ));
    }
    out.push_str(&format!("  set: {}\n", list(&e.set)));
    if !e.proxy_vars.is_empty() {
        out.push_str(&format!("  set for the proxy: {}\n", list(&e.proxy_vars)));
    }
    out.push_str(&format!(
        "  secrets, supplied by the runner at start and never recorded: {}\n",
        list(&e.secrets)
    ));

    out.push_str("\nlimits:\n");
    if p.limits.is_empty() {
        out.push_str("  none\n");
    }
    for (k, v) in &p.limits {
        out.push_str(&format!("  {k} {v}\n"));
    }

    let c = &p.codex;
    out.push_str("\ncodex:\n");
    if !c.sealed {
        out.push_str(&format!(
            "  not a Codex seal (no `[codex]` table): codex/config.toml is written for Codex {}, and `sealc exec` installs nothing\n",
            list(&c.versions)
        ));
        return out;
    }
    out.push_str(&format!("  a Codex seal for Codex {}\n", list(&c.versions)));
    match &c.config {
        Some(cfg) => out.push_str(&format!(
            "  config: {} (installed by `sealc exec`)\n",
            visible(cfg)
        )),
        None => out
            .push_str("  config: not installed (the seal sets neither `CODEX_HOME` nor `HOME`)\n"),
    }
    out.push_str(match c.sandbox.as_str() {
        "profile" => "  Codex's own sandbox: on, the seal as its permission profile `sealc`\n",
        _ => "  Codex's own sandbox: off (danger-full-access; the seal is the sandbox)\n",
    });
    out.push_str("  approvals: never\n");
    let opt = |v: &Option<String>| v.as_deref().map(visible).unwrap_or("default".into());
    out.push_str(&format!(
        "  model: {}, reasoning effort: {}\n",
        opt(&c.model),
        opt(&c.reasoning_effort)
    ));
    if let Some(ws) = &c.workspace {
        let trust = if c.workspace_trusted {
            "trusted: Codex reads its .codex/"
        } else {
            "untrusted: its .codex/ is hidden"
        };
        out.push_str(&format!("  workspace: {} ({trust})\n", visible(ws)));
    }
    if let Some(pr) = &c.provider {
        let key = match (&pr.env_key, &pr.held_at) {
            (Some(k), Some(at)) => format!(
                ", API key from the secret {}, held by sealc: its proxy adds it over TLS to {} (Codex and its tools never have it, but can use it there)",
                visible(k),
                visible(at)
            ),
            (Some(k), None) => format!(", API key from the secret {}", visible(k)),
            _ => String::new(),
        };
        out.push_str(&format!("  provider: {}{key}\n", visible(&pr.base_url)));
    }
    if let Some(cr) = &c.credentials {
        out.push_str(&format!(
            "  credentials: {}, copied into each run's Codex home: Codex and every tool it runs can read them\n",
            visible(cr)
        ));
    }
    if !p.env.secrets.is_empty() {
        let names: Vec<String> = p.env.secrets.iter().map(|n| visible(n)).collect();
        out.push_str(&format!(
            "  secrets in Codex's environment ({}): every tool Codex runs can read them there (/proc)\n",
            names.join(", ")
        ));
    }
    out
}
