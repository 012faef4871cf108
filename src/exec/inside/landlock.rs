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
        AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, Scope, ABI,
    };
    let abi = ABI::V7;
    let err = |e: landlock::RulesetError| Failure::of(e);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_write(abi))
        .map_err(err)?;
    if let Tcp::Only(_) = c.tcp {
        ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(err)?;
    }
    ruleset = ruleset
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(err)?;
    let mut created = ruleset.create().map_err(err)?;
    for p in &c.write {
        let Ok(meta) = std::fs::metadata(p) else {
            continue; // not in this sandbox: nothing to allow
        };
        let Ok(fd) = PathFd::new(p) else { continue };
        let access = if meta.is_dir() {
            AccessFs::from_write(abi)
        } else {
            AccessFs::from_write(abi) & AccessFs::from_file(abi)
        };
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
        return Err(Failure::new(
            "Landlock is not enforced on this kernel, and this seal needs it (`exec.proc = \"host\"`)",
        ));
    }
    Ok(())
}
