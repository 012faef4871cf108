//! What every Linux seal refuses inside the sandbox, as the artifact records
//! it: the system calls the seccomp policy refuses, and the Landlock layer.

use super::*;

/// What `sealc __confine` refuses by seccomp, as the artifact records it:
/// the text of each entry of [`crate::refusals::TABLE`] that applies (the
/// filter is built from the same entries), the `Offline` ones when the
/// network is not open and the `FileSize` ones when the file size is
/// limited.
pub fn refused_for(offline: bool, file_size: bool) -> Vec<&'static str> {
    crate::refusals::applying(offline, file_size)
        .map(|e| e.text)
        .collect()
}

/// What `sealc __confine` refuses for this seal.
pub fn refused(ir: &Ir) -> Vec<&'static str> {
    refused_for(
        ir.network.mode != NetMode::Open,
        ir.exec.limits.file_size_mib.is_some(),
    )
}

/// The Landlock layer `sealc __confine` applies, as far as the kernel's ABI
/// goes: writes only beneath these paths; TCP connect only to these ports
/// (`None`: not restricted, network `open`); no abstract unix socket or
/// signal outside the command's own domain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Landlock {
    pub scopes: Vec<&'static str>,
    pub tcp_connect: Option<Vec<u16>>,
    pub write: Vec<String>,
}

/// Devices and scratch the command may always write (Landlock).
pub const LANDLOCK_DEVICES: &[&str] = &[
    "/dev/full",
    "/dev/null",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/random",
    "/dev/shm",
    "/dev/tty",
    "/dev/urandom",
    "/dev/zero",
];

/// The Landlock policy of this seal.
pub fn landlock(ir: &Ir) -> Landlock {
    let mut write: Vec<String> = LANDLOCK_DEVICES.iter().map(|d| d.to_string()).collect();
    for r in &ir.roots {
        if matches!(r.kind, RootKind::Write | RootKind::WriteDevice) {
            if let Some(real) = &r.real {
                write.push(real.clone());
            }
        }
    }
    write.sort();
    write.dedup();
    // The proxy's port, and each MCP server's relay port (loopback, inside
    // the seal's own network namespace).
    let tcp_connect = match ir.network.mode {
        NetMode::Open => None,
        NetMode::None | NetMode::Proxy | NetMode::Allowlist => {
            let mut ports: Vec<u16> = ir.network.proxy.iter().map(|p| p.port).collect();
            if ir.network.mode == NetMode::None {
                ports.clear();
            }
            ports.extend(ir.codex.mcp.iter().map(|m| m.port));
            ports.sort_unstable();
            ports.dedup();
            Some(ports)
        }
    };
    Landlock {
        scopes: vec!["abstract-unix-socket", "signal"],
        tcp_connect,
        write,
    }
}
