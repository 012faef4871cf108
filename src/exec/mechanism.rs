//! How a command is confined: the seam where another isolation mode is
//! added. Each mechanism is one case here, and the runtime asks it rather
//! than the seal's platform: what program starts the sandbox, whether
//! sealc's own init runs inside it (so signals go to the processes inside
//! and the watcher can see them), whether the network reaches a proxy
//! through a bridge.

use crate::ir::Ir;
use crate::spec::Platform;

/// One way of confining a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// macOS: `sandbox-exec -p PROFILE` with the verified profile; the
    /// command is its child, limits are rlimits set before it starts.
    Seatbelt,
    /// Linux: bubblewrap's namespaces with sealc's init as pid 1 and
    /// `__confine` (Landlock, seccomp, rlimits) before the command.
    Bubblewrap,
    /// Linux, `exec.isolation = "landlock"`: no namespace; sealc's init
    /// (the command's subreaper, in a session of its own) and `__confine`,
    /// whose Landlock rules hold reads as well as writes.
    Landlock,
}

impl Mechanism {
    /// The mechanism a seal is run with.
    pub fn of(ir: &Ir) -> Mechanism {
        match (ir.platform, ir.exec.isolation) {
            (Platform::Macos, _) => Mechanism::Seatbelt,
            (Platform::Linux, crate::spec::Isolation::Namespaces) => Mechanism::Bubblewrap,
            (Platform::Linux, crate::spec::Isolation::Landlock) => Mechanism::Landlock,
        }
    }

    /// sealc's init runs inside the sandbox: signals go to the processes
    /// inside it, the environment goes to the init, and sealc can watch
    /// every process of the sandbox.
    pub fn has_init(self) -> bool {
        match self {
            Mechanism::Seatbelt => false,
            Mechanism::Bubblewrap | Mechanism::Landlock => true,
        }
    }

    /// The sandbox has no network of its own but a bridge to the proxy (a
    /// proxied network mode of a seal that isolates the network).
    pub fn bridges(self, ir: &Ir) -> bool {
        match self {
            // The Landlock mode shares the host's network: the command
            // connects to the proxy itself, and Landlock allows that port.
            Mechanism::Seatbelt | Mechanism::Landlock => false,
            Mechanism::Bubblewrap => ir.network.mode.proxied() || !ir.codex.mcp.is_empty(),
        }
    }

    /// What the report says of how the limits are enforced: on Linux, the
    /// kernel's and sealc's watcher inside; on macOS, rlimits only.
    pub fn watches_memory(self) -> bool {
        self.has_init()
    }
}
