//! `sealc doctor`: what this host gives a Linux seal (`crate::doctor`),
//! printed.

use std::io::Write;

use super::Format;
use crate::doctor::State;
use crate::exit::{BAD_INPUT, OK, SANDBOX_FAILED};

/// `--help`'s closing sections: the exit codes from [`crate::exit::DOCTOR`].
fn after_help() -> String {
    crate::exit::help_section(
        None,
        crate::exit::DOCTOR,
        "\n\
Example:
  sealc doctor --format json",
    )
}

/// Check this host for every layer a Linux seal uses, and say what a seal gets here.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// The bubblewrap a seal would start (a seal's `[exec] bwrap`).
    #[arg(long, default_value = "/usr/bin/bwrap", value_name = "PATH")]
    bwrap: String,
    /// For a root caller: the agent's user, as `sealc exec --user` takes it (default `nobody`).
    #[arg(long, value_name = "USER")]
    user: Option<String>,
}

pub(super) fn run(a: Args, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let uid = rustix::process::getuid().as_raw();
    let agent = if uid == 0 {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let user = a.user.as_deref().unwrap_or(crate::exec::user::DEFAULT_USER);
        match crate::exec::user::parse_user(user, &passwd) {
            Ok(ids) => ids,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return BAD_INPUT;
            }
        }
    } else if a.user.is_some() {
        // As `sealc exec`: only root runs the agent as another user.
        let _ = writeln!(
            err,
            "error: `--user` is for a root caller: bubblewrap runs as you, and so does the probe"
        );
        return BAD_INPUT;
    } else {
        crate::exec::Ids {
            uid,
            gid: rustix::process::getgid().as_raw(),
        }
    };
    let c = crate::doctor::checkup(&a.bwrap, agent);
    let code = if c.default_runs() { OK } else { SANDBOX_FAILED };
    // `-q`: nothing to say when the default mode runs here.
    if code == OK && super::quiet() && matches!(a.format, Format::Text) {
        return code;
    }
    let _ = match a.format {
        Format::Json => serde_json::to_string_pretty(&c)
            .map_err(std::io::Error::other)
            .and_then(|s| writeln!(out, "{s}")),
        Format::Text => write!(out, "{}", text(&c)),
    };
    code
}

fn text(c: &crate::doctor::Checkup) -> String {
    use std::fmt::Write as _;
    let h = &c.host;
    let mut s = String::new();
    let _ = writeln!(s, "sealc {} doctor: Linux {}", c.sealc_version, h.kernel);
    let mut place = Vec::new();
    if let Some(k) = &h.container {
        place.push(format!("in a {k} container"));
    }
    if let Some(ci) = &h.ci {
        place.push(format!("on {ci}"));
    }
    if let Some(w) = h.wsl {
        place.push(format!("on WSL {w}"));
    }
    if !place.is_empty() {
        let _ = writeln!(s, "  {}", place.join(", "));
    }
    let who = if h.uid == 0 {
        format!(
            "root; bubblewrap runs as the agent's user {}:{}",
            h.probed_as.0, h.probed_as.1
        )
    } else {
        format!("uid {}; bubblewrap runs as the caller", h.uid)
    };
    let _ = writeln!(s, "  caller: {who}");
    if h.apparmor_restrict_unprivileged_userns == Some(1) {
        let _ = writeln!(
            s,
            "  AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1)"
        );
    }
    if !h.proc_masks.is_empty() {
        let _ = writeln!(
            s,
            "  /proc has {} path(s) masked over it",
            h.proc_masks.len()
        );
    }
    let _ = writeln!(s, "\nlayers:");
    let width = c.layers.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for l in &c.layers {
        let _ = writeln!(
            s,
            "  {:<width$}  {:<9}  {}",
            l.name,
            l.state.as_str(),
            crate::diag::visible(&l.detail)
        );
        if let (Some(f), State::No) = (&l.fix, l.state) {
            let _ = writeln!(s, "  {:<width$}  {:<9}  fix: {f}", "", "");
        }
    }
    let _ = writeln!(s, "\nmodes:");
    for m in &c.modes {
        let _ = writeln!(
            s,
            "  {}{}: {}",
            m.name,
            if m.default { " (the default)" } else { "" },
            if m.runs {
                "runs here"
            } else {
                "cannot run here"
            }
        );
        if m.runs {
            let _ = writeln!(s, "    with: {}", m.gets.join("; "));
            if !m.lacks.is_empty() {
                let _ = writeln!(s, "    without: {}", m.lacks.join("; "));
            }
        }
        if let Some(f) = &m.fix {
            let _ = writeln!(s, "    fix: {f}");
        }
    }
    s
}
