//! Landlock inside the sandbox: the ABI this kernel has, and the rules
//! that hold the filesystem when every other layer fails.

use super::*;
use crate::failure::Failure;

/// Which Landlock ABI this kernel offers (0: none).
#[allow(unsafe_code)]
pub fn landlock_abi() -> i32 {
    // SAFETY: `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`
    // reads no memory (the attribute pointer is null, as the flag requires)
    // and returns the ABI version, or -1 where the kernel has no Landlock.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// Apply the Landlock layer to this process (and what it starts).
pub(super) fn apply_landlock(c: &Confinement) -> Result<(), Failure> {
    use ::landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    let abi = ABI::V7;
    let err = |e: landlock::RulesetError| Failure::of(e);
    if let Some(r) = &c.reads {
        let have = landlock_abi();
        if have < r.abi {
            return Err(Failure::new(format!(
                "this kernel's Landlock ABI is {have}, and this seal needs {} (`exec.isolation = \"landlock\"`)",
                r.abi
            )));
        }
    }
    // The namespaces mode leaves reads to its mounts; the Landlock mode
    // handles them too.
    let handled = match c.reads {
        Some(_) => AccessFs::from_all(abi),
        None => AccessFs::from_write(abi),
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        .map_err(err)?;
    if let Tcp::Only(_) = c.tcp {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(err)?;
        if c.reads.is_some() {
            // No network namespace: a port bound here is the host's.
            ruleset = ruleset.handle_access(AccessNet::BindTcp).map_err(err)?;
        }
    }
    ruleset = ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(err)?;
    let mut created = ruleset.create().map_err(err)?;
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_all(abi);
    let list = landlock::make_bitflags!(AccessFs::{ReadDir});
    let mut grants: Vec<(OwnedFd, bool, landlock::BitFlags<AccessFs>)> = Vec::new();
    let mut rules: Vec<(&OsString, landlock::BitFlags<AccessFs>)> = Vec::new();
    if let Some(r) = &c.reads {
        rules.extend(r.list.iter().map(|p| (p, list)));
        for p in &r.read {
            let hidden: Vec<&Path> = r
                .hide
                .iter()
                .map(Path::new)
                .filter(|h| h.starts_with(p) && *h != Path::new(p))
                .collect();
            if hidden.is_empty() {
                rules.push((p, read));
            } else {
                // Listed, not read, on the way to what is hidden; read
                // beside it.
                grants.extend(around(Path::new(p), &hidden, read, list)?);
            }
        }
    }
    let written = if c.reads.is_some() {
        write
    } else {
        AccessFs::from_write(abi)
    };
    rules.extend(c.write.iter().map(|p| (p, written)));
    for (p, access) in rules {
        let Ok(meta) = std::fs::metadata(p) else {
            continue; // not there: nothing to allow
        };
        let Some(fd) = open_path(Path::new(p), true) else {
            continue;
        };
        grants.push((fd, meta.is_dir(), access));
    }
    for (fd, is_dir, access) in grants {
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        if access.is_empty() {
            continue;
        }
        created = created
            .set_compatibility(CompatLevel::BestEffort)
            .add_rule(PathBeneath::new(fd, access))
            .map_err(err)?;
    }
    if let Tcp::Only(ports) = &c.tcp {
        for p in ports {
            created = created
                .add_rule(NetPort::new(*p, AccessNet::ConnectTcp))
                .map_err(err)?;
        }
    }
    let status = created.restrict_self().map_err(err)?;
    if c.require_landlock && status.ruleset == landlock::RulesetStatus::NotEnforced {
        return Err(Failure::new(if c.reads.is_some() {
            "Landlock is not enforced on this kernel, and this seal needs it (`exec.isolation = \"landlock\"`)"
        } else {
            "Landlock is not enforced on this kernel, and this seal needs it (`exec.proc = \"host\"`)"
        }));
    }
    Ok(())
}

/// The rules that grant `access` beneath `root` except beneath each of
/// `hidden` (all strictly inside it): `list` on every directory on the way
/// to a hidden path, `access` on every other entry there. Each entry is
/// opened without following a link, so a link beside a hidden root grants
/// nothing of what it leads to. What appears on the way after this is
/// granted nothing (it fails closed).
fn around(
    root: &Path,
    hidden: &[&Path],
    access: landlock::BitFlags<landlock::AccessFs>,
    list: landlock::BitFlags<landlock::AccessFs>,
) -> Result<Vec<(OwnedFd, bool, landlock::BitFlags<landlock::AccessFs>)>, Failure> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if let Some(fd) = open_path(&dir, dir == root) {
            out.push((fd, true, list));
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            // Gone, or not the agent's to list: nothing beneath it is
            // granted (stricter than the rule; never wider).
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
                ) =>
            {
                continue
            }
            Err(e) => {
                return Err(Failure::os(
                    format!("cannot list {} to keep a hidden root out", dir.display()),
                    e,
                ))
            }
        };
        for entry in entries {
            let entry =
                entry.map_err(|e| Failure::os(format!("cannot list {}", dir.display()), e))?;
            let path = entry.path();
            if hidden.iter().any(|h| *h == path) {
                continue;
            }
            if hidden.iter().any(|h| h.starts_with(&path)) {
                stack.push(path);
                continue;
            }
            let Ok(ty) = entry.file_type() else { continue };
            // The entry itself, a link included.
            let Some(fd) = open_path(&path, false) else {
                continue;
            };
            out.push((fd, ty.is_dir(), access));
        }
    }
    Ok(out)
}

/// `O_PATH` of `path`, following a last link or not (`O_NOFOLLOW`: the
/// link itself, which grants nothing of what it leads to).
fn open_path(path: &Path, follow: bool) -> Option<OwnedFd> {
    use rustix::fs::OFlags;
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    rustix::fs::open(path, flags, rustix::fs::Mode::empty()).ok()
}
