//! Prepare: the plan of a run (the program, its argv, the descriptors it is
//! handed, the bridge for the proxy), made from the IR and this host.

use super::*;

/// What runs: the program, its arguments and the command's whole environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub program: String,
    /// The arguments; on Linux a descriptor's number is filled in by [`run`]
    /// at each of [`Plan::fds`] (shown as `<fd:...>` until then).
    pub args: Vec<OsString>,
    /// Exactly the environment of the command, sorted by name.
    pub env: Vec<(String, OsString)>,
    /// Names in `env` whose values are secrets (never shown).
    pub secrets: Vec<String>,
    pub timeout: Option<Duration>,
    /// `host:port` of the host's proxy, to bridge to (Linux, `proxy` and
    /// `allowlist` mode).
    pub bridge: Option<BridgePlan>,
    /// `allowlist` mode: sealc's own proxy, which serves the bridge (Linux)
    /// or the loopback proxy address (macOS) while the command runs.
    pub proxy: Option<crate::proxy::Own>,
    /// How the command is confined (what the program is, and whether
    /// sealc's init runs inside).
    pub mechanism: super::Mechanism,
    /// Descriptors [`run`] opens and names in `args`.
    pub fds: Vec<FdSlot>,
    /// Started by root: the unprivileged user the sandbox runs as.
    pub user: Option<Ids>,
    /// Steps left out because this kernel's `/proc` lacks their entry.
    pub skipped: Vec<String>,
    /// The run's limits.
    pub limits: crate::ir::LimitsIr,
}

/// One descriptor named in argv.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdSlot {
    /// Index in `args` of the number.
    pub at: usize,
    pub source: FdSource,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FdSource {
    /// A root, opened without following any link and checked to be `kind`;
    /// the option before it becomes its `-fd` form. `within`: the write
    /// root (its realpath) that holds it, for a protected root or a pin:
    /// where that write root is idmapped, it is opened again from the
    /// idmapped tree.
    Bind {
        path: String,
        kind: PathKind,
        within: Option<String>,
    },
    /// sealc's own binary.
    Exe,
    /// The bridge's private directory.
    BridgeDir,
    /// The read end of the pipe that carries the command's environment.
    Env,
    /// The write end of the pipe bubblewrap reports the sandbox on (`--info-fd`).
    Info,
    /// The write end of the pipe the inside reports the command's start and end on.
    Status,
}

/// The bridge of a Linux `proxy` seal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgePlan {
    /// The private directory bound into the sandbox.
    pub dir: PathBuf,
    /// The host's proxy, as recorded (`None`: no proxy, only MCP servers).
    pub upstream: Option<String>,
    /// `codex.mcp_servers`: served from the same directory.
    pub mcp: Vec<crate::ir::McpIr>,
}

/// What the plan needs from the running host.
pub struct Runtime<'a> {
    /// sealc's own binary, bound read-only into every Linux sandbox.
    pub exe: &'a Path,
    /// The private directory of the bridge.
    pub bridge_dir: &'a Path,
    /// The seatbelt profile's verified bytes (macOS).
    pub profile: &'a [u8],
    /// Started by root: the user to run as.
    pub user: Option<Ids>,
    /// The ids that user has inside the sandbox (bubblewrap's `--uid` and
    /// `--gid`) when they differ: a uid of the run's own is seen inside as
    /// `nobody` ([`user::allocate`]).
    pub inside: Option<Ids>,
    /// Does this kernel's `/proc` have the entry (see [`bwrap::kernel_entry`])?
    pub has_proc_entry: &'a dyn Fn(&str) -> bool,
    /// The caller's working directory, where the command starts inside
    /// the sandbox if it is there (else in `/`); bubblewrap itself starts
    /// in `/`.
    pub cwd: Option<&'a Path>,
}

pub(super) fn placeholder(what: &str) -> OsString {
    format!("<fd:{what}>").into()
}

/// Build the plan. `secret` gives a secret's value from sealc's environment.
pub fn plan(
    ir: &Ir,
    command: &[OsString],
    secret: &dyn Fn(&str) -> Option<OsString>,
    rt: &Runtime<'_>,
) -> Result<Plan, Diagnostic> {
    if command.is_empty() {
        return Err(
            Diagnostic::error(crate::diag::code::EXEC_COMMAND, "no command to run")
                .help("give it after the record: `sealc exec seal/seal.json -- codex exec ...`"),
        );
    }
    let mut env: Vec<(String, OsString)> = ir
        .env
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), OsString::from(v)))
        .collect();
    let mut missing = Vec::new();
    for name in &ir.env.secrets {
        match secret(name) {
            Some(v) => env.push((name.clone(), v)),
            None => missing.push(name.as_str()),
        }
    }
    // Held keys: taken like the others, kept out of the environment, and
    // given to sealc's own proxy, which adds them on the host side.
    let mut held = Vec::new();
    if let Some(h) = ir.codex.provider.as_ref().and_then(|p| p.held.as_ref()) {
        match secret(&h.secret) {
            Some(v) => held.push(crate::proxy::HeldKey::new(h, &v).map_err(|why| {
                Diagnostic::error(
                    crate::diag::code::EXEC_SECRET,
                    format!("{why}, so nothing was started"),
                )
                .help(
                    "export the API key itself, one word, in the environment `sealc exec` runs in",
                )
            })?),
            None => missing.push(h.secret.as_str()),
        }
    }
    if !missing.is_empty() {
        let names = missing.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
        return Err(Diagnostic::error(
            crate::diag::code::EXEC_SECRET,
            format!(
                "secret {} {} not set, so nothing was started",
                names.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            ),
        )
        .help("export each secret in the environment `sealc exec` runs in; its value is passed to the agent and never written"));
    }
    env.sort();
    let timeout = ir
        .exec
        .timeout
        .as_ref()
        .map(|(_, s)| *s)
        .or(ir.exec.limits.wall_seconds)
        .map(Duration::from_secs);
    let secrets = ir.env.secrets.iter().cloned().collect();
    let mut plan = Plan {
        program: String::new(),
        args: Vec::new(),
        env,
        secrets,
        timeout,
        bridge: None,
        proxy: (ir.network.mode == NetMode::Allowlist).then(|| crate::proxy::Own {
            held,
            ..crate::proxy::Own::new(&ir.network)
        }),
        mechanism: super::Mechanism::of(ir),
        fds: Vec::new(),
        user: rt.user,
        skipped: Vec::new(),
        limits: ir.exec.limits.clone(),
    };
    match plan.mechanism {
        super::Mechanism::Seatbelt => {
            // The verified bytes, not the file: nothing can swap the profile
            // between `verify` and `sandbox-exec` reading it.
            let mut args: Vec<OsString> = vec![
                "-p".into(),
                String::from_utf8_lossy(rt.profile).into_owned().into(),
            ];
            if let Some((bin, secs)) = &ir.exec.timeout {
                args.extend([bin.into(), "--foreground".into(), secs.to_string().into()]);
            }
            args.extend(command.iter().cloned());
            plan.program = ir.exec.sandbox_exec.clone();
            plan.args = args;
            Ok(plan)
        }
        super::Mechanism::Bubblewrap => {
            linux(ir, command, rt, &mut plan)?;
            Ok(plan)
        }
        super::Mechanism::Landlock => {
            landlock_only(ir, command, rt, &mut plan);
            Ok(plan)
        }
    }
}

/// The plan of the Landlock mode: sealc's own binary (the running one,
/// through `/proc/self/exe`, so the agent's user need not reach its path)
/// as the init, then `__confine` with the seal's rules, then the command.
fn landlock_only(ir: &Ir, command: &[OsString], rt: &Runtime<'_>, plan: &mut Plan) {
    let mut args: Vec<OsString> = vec!["__init".into(), "--landlock".into()];
    let mut fds = Vec::new();
    let mut slot = |args: &mut Vec<OsString>, source: FdSource, what: &str| {
        fds.push(FdSlot {
            at: args.len(),
            source,
        });
        args.push(placeholder(what));
    };
    if let Some(cwd) = rt.cwd {
        args.extend(["--cwd".into(), cwd.as_os_str().to_owned()]);
    }
    args.push("--env-fd".into());
    slot(&mut args, FdSource::Env, "env");
    args.push("--status-fd".into());
    slot(&mut args, FdSource::Status, "status");
    args.extend(["--".into(), SELF_EXE.into(), "__confine".into()]);
    args.push("--env-fd".into());
    slot(&mut args, FdSource::Env, "env");
    args.push("--status-fd".into());
    slot(&mut args, FdSource::Status, "status");
    for (k, v) in ir.exec.limits.set() {
        if !k.outside() {
            args.extend(["--limit".into(), format!("{}={v}", k.key()).into()]);
        }
    }
    if ir.network.mode != NetMode::Open {
        args.push("--offline".into());
    }
    let policy = crate::backend::landlock::policy(ir);
    args.extend([
        "--landlock-abi".into(),
        crate::backend::landlock::abi_needed(ir).to_string().into(),
    ]);
    if shared_user(rt.user) {
        args.push("--shared-user".into());
    }
    use crate::backend::landlock::Access;
    for r in &policy.rules {
        let opt = match r.access {
            Access::Read => "--read",
            Access::List => "--list",
            Access::Write => "--write",
        };
        args.extend([opt.into(), r.path.clone().into()]);
    }
    for h in &policy.hidden {
        args.extend(["--hide".into(), h.path.clone().into()]);
    }
    match &policy.tcp_connect {
        None => args.push("--tcp-any".into()),
        Some(ports) => {
            for p in ports {
                args.extend(["--tcp-port".into(), p.to_string().into()]);
            }
        }
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    plan.program = SELF_EXE.into();
    plan.args = args;
    plan.fds = fds;
}

/// In the Landlock mode: may the agent's user own files outside the write
/// roots (the caller's own user, or a `--user`), rather than a uid of the
/// run's own?
pub fn shared_user(user: Option<Ids>) -> bool {
    !user.is_some_and(|u| super::user::of_a_run(u.uid))
}

/// The running sealc, whatever its path names now (also to a user that
/// cannot reach that path).
pub const SELF_EXE: &str = "/proc/self/exe";

/// The command as it runs: a bare command name that is the recorded
/// launcher's file name (`codex` for `.../bin/codex`) becomes the launcher's
/// path, whose chain and digest `host_drift` has checked; anything else runs
/// as given.
pub fn resolve_launcher(ir: &Ir, command: &[OsString]) -> Vec<OsString> {
    let mut out = command.to_vec();
    let (Some(first), Some(launcher)) = (out.first_mut(), ir.launcher.first()) else {
        return out;
    };
    let name = launcher.path.rsplit('/').next().unwrap_or_default();
    let bare = first.to_str().is_some_and(|c| !c.contains('/'));
    if bare && !name.is_empty() && first.as_os_str() == name {
        *first = OsString::from(&launcher.path);
    }
    out
}

/// What the seal binds at `dest`, as recorded: a root's kind (a protected
/// root's object included), a directory for a pin, a file for a launcher
/// chain entry; and, for a protected root or a pin, the write root that
/// holds it. `None`: nothing the IR binds there.
pub(super) fn kind_at(ir: &Ir, dest: &str) -> Option<(PathKind, Option<String>)> {
    let root = ir
        .roots
        .iter()
        .filter(|r| r.real.as_deref() == Some(dest))
        .find_map(|r| {
            let within = r.protect.as_ref().map(|p| p.within.clone());
            r.host_kind.map(|k| (k, within))
        });
    let pin = || {
        ir.pins
            .iter()
            .find(|p| p.path == dest)
            .map(|p| (PathKind::Dir, Some(p.within.clone())))
    };
    let launcher = || {
        ir.launcher
            .iter()
            .any(|l| l.path == dest && l.kind == crate::facts::LinkKind::File)
            .then_some((PathKind::File, None))
    };
    root.or_else(pin).or_else(launcher)
}

pub(super) fn linux(
    ir: &Ir,
    command: &[OsString],
    rt: &Runtime<'_>,
    plan: &mut Plan,
) -> Result<(), Diagnostic> {
    let bridge = match (&ir.network.mode, &ir.network.proxy) {
        (NetMode::Proxy | NetMode::Allowlist, Some(p)) => Some(format!("{}:{}", p.host, p.port)),
        _ => None,
    };
    let mcp = &ir.codex.mcp;
    let bridged = bridge.is_some() || !mcp.is_empty();
    let mut args: Vec<OsString> = Vec::new();
    let mut fds = Vec::new();
    let mut slot = |args: &mut Vec<OsString>, source: FdSource, what: &str| {
        fds.push(FdSlot {
            at: args.len(),
            source,
        });
        args.push(placeholder(what));
    };
    // bubblewrap says when the sandbox is built: a run that ends before
    // that could not start.
    args.push("--info-fd".into());
    slot(&mut args, FdSource::Info, "info");
    if let Some(ids) = rt.inside {
        args.extend(
            [
                "--uid".to_string(),
                ids.uid.to_string(),
                "--gid".to_string(),
                ids.gid.to_string(),
            ]
            .map(OsString::from),
        );
    }
    for s in bwrap::steps(ir) {
        if let Some(entry) = bwrap::kernel_entry(&s) {
            if !(rt.has_proc_entry)(entry) {
                plan.skipped.push(s.args.join(" "));
                continue;
            }
        }
        use bwrap::{Bind, Op};
        let by_fd = match &s.op {
            Op::Bind {
                how: Bind::Writable,
                try_: false,
                src,
                dst,
            } => Some(("--bind-fd", src, dst)),
            Op::Bind {
                how: Bind::ReadOnly,
                try_: false,
                src,
                dst,
            } => Some(("--ro-bind-fd", src, dst)),
            _ => None,
        };
        match by_fd {
            // A root bound onto itself: through a descriptor.
            // (`/proc`, with `exec.proc = "host"`, is the kernel's, by path:
            // no caller can put another in its place.)
            Some((opt, src, dst)) if src == dst && src != "/" && src != "/proc" => {
                args.push(opt.into());
                let Some((kind, within)) = kind_at(ir, src) else {
                    return Err(Diagnostic::error(
                        crate::diag::code::LINUX_KIND,
                        format!(
                            "the seal binds {} but does not record what it is",
                            quote(src)
                        ),
                    )
                    .help("compile the spec again on the host instead of editing the record"));
                };
                let source = FdSource::Bind {
                    path: src.clone(),
                    kind,
                    within,
                };
                slot(&mut args, source, src);
                args.push(dst.into());
            }
            _ => args.extend(s.args.iter().map(OsString::from)),
        }
        // sealc's own mounts, in the sandbox's fresh /dev: its binary and
        // the bridge's directory, both read-only (the command may connect
        // to the bridge's socket, not put another in its place).
        if s.op == Op::Tmpfs("/dev/shm".into()) {
            args.push("--ro-bind-fd".into());
            slot(&mut args, FdSource::Exe, "sealc");
            args.push(bwrap::INIT_PATH.into());
            if bridged {
                args.push("--ro-bind-fd".into());
                slot(&mut args, FdSource::BridgeDir, "bridge");
                args.push(bwrap::BRIDGE_PATH.into());
            }
        }
    }
    args.push("--".into());
    // The init keeps the two pipes open for `__confine`, and reports the
    // command's end on the status pipe.
    args.extend([bwrap::INIT_PATH.into(), "__init".into()]);
    if let Some(cwd) = rt.cwd {
        args.extend(["--cwd".into(), cwd.as_os_str().to_owned()]);
    }
    args.push("--env-fd".into());
    slot(&mut args, FdSource::Env, "env");
    args.push("--status-fd".into());
    slot(&mut args, FdSource::Status, "status");
    if let Some(listen) = &bridge {
        args.extend(["--listen".into(), listen.into(), "--socket".into()]);
        args.push(format!("{}/{BRIDGE_SOCKET}", bwrap::BRIDGE_PATH).into());
    }
    // Each MCP server's loopback port, forwarded to its socket.
    for m in mcp {
        args.push("--forward".into());
        args.push(
            format!(
                "127.0.0.1:{}={}/{}",
                m.port,
                bwrap::BRIDGE_PATH,
                super::mcp::socket_name(&m.name)
            )
            .into(),
        );
    }
    args.push("--".into());
    args.extend([
        bwrap::INIT_PATH.into(),
        "__confine".into(),
        "--env-fd".into(),
    ]);
    slot(&mut args, FdSource::Env, "env");
    args.push("--status-fd".into());
    slot(&mut args, FdSource::Status, "status");
    for (k, v) in ir.exec.limits.set() {
        if k.outside() {
            continue; // sealc's own, outside
        }
        args.extend(["--limit".into(), format!("{}={v}", k.key()).into()]);
    }
    if ir.network.mode != NetMode::Open {
        args.push("--offline".into());
    }
    if ir.exec.proc == crate::spec::ProcMode::Host {
        args.push("--require-landlock".into());
    }
    let ll = bwrap::landlock(ir);
    match &ll.tcp_connect {
        None => args.push("--tcp-any".into()),
        Some(ports) => {
            for p in ports {
                args.extend(["--tcp-port".into(), p.to_string().into()]);
            }
        }
    }
    for w in &ll.write {
        args.extend(["--write".into(), w.into()]);
    }
    args.push("--".into());
    args.extend(command.iter().cloned());
    plan.program = ir.exec.bwrap.clone();
    plan.args = args;
    plan.fds = fds;
    plan.bridge = bridged.then(|| BridgePlan {
        dir: rt.bridge_dir.to_path_buf(),
        upstream: bridge,
        mcp: mcp.clone(),
    });
    Ok(())
}

/// The write root (as written in the spec) that reaches the directory
/// `dir`, or the file `name` in it: by the realpath it was opened at, or by
/// identity (`dir` or a directory above it is a write root's object, as
/// where a bind mount gives a root a second path). What lies there the
/// agent may have put there, or may change after: sealc neither reads
/// evidence nor credentials from there, nor writes a report there.
pub fn write_root_reaching<'a>(
    ir: &'a Ir,
    dir: &crate::hostfs::Dir,
    name: Option<&std::ffi::OsStr>,
) -> Option<&'a str> {
    use std::os::unix::fs::MetadataExt;
    let path = match name {
        Some(n) => dir.path().join(n),
        None => dir.path().to_path_buf(),
    };
    let path = path.to_string_lossy();
    let above = dir.ancestry().unwrap_or_default();
    ir.roots
        .iter()
        .filter(|r| r.kind == crate::ir::RootKind::Write)
        .find(|r| {
            r.real.as_deref().is_some_and(|real| {
                crate::ir::is_within(&path, real)
                    || std::fs::symlink_metadata(real)
                        .is_ok_and(|m| above.contains(&(m.dev(), m.ino())))
            })
        })
        .map(|r| r.origin.as_str())
}
