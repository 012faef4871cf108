//! The limits a seal can set (`[limits]`), as one type: the spec's name of
//! each, whether sealc enforces it outside the sandbox or the kernel inside,
//! and what the run report says enforces it. The reader, the IR, the plan,
//! `__confine`, the watcher and the report all name a limit by this type;
//! only the spec, the `--limit` flag of `__confine` and the report spell it
//! as a string, through [`Limit::key`].

use serde::{Serialize, Serializer};

/// One limit of `[limits]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Limit {
    WallSeconds,
    CpuSeconds,
    MemoryMib,
    Processes,
    OpenFiles,
    FileSizeMib,
    OutputBytes,
}

impl Limit {
    /// Every limit, in the order the spec documents them.
    pub const ALL: [Limit; 7] = [
        Limit::WallSeconds,
        Limit::CpuSeconds,
        Limit::MemoryMib,
        Limit::Processes,
        Limit::OpenFiles,
        Limit::FileSizeMib,
        Limit::OutputBytes,
    ];

    /// Its name in the spec's `[limits]`, in `__confine --limit` and in the
    /// run report.
    pub fn key(self) -> &'static str {
        match self {
            Limit::WallSeconds => "wall_seconds",
            Limit::CpuSeconds => "cpu_seconds",
            Limit::MemoryMib => "memory_mib",
            Limit::Processes => "processes",
            Limit::OpenFiles => "open_files",
            Limit::FileSizeMib => "file_size_mib",
            Limit::OutputBytes => "output_bytes",
        }
    }

    pub fn from_key(key: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.key() == key)
    }

    /// The values a spec may give it (the JSON Schema's `minimum` and
    /// `maximum` of `[limits]`, checked against these by `tests/schema.rs`).
    pub fn range(self) -> (i64, i64) {
        match self {
            Limit::WallSeconds | Limit::CpuSeconds => (1, 604_800),
            Limit::MemoryMib | Limit::FileSizeMib => (1, 1 << 20),
            Limit::Processes => (1, 65_536),
            Limit::OpenFiles => (16, 1 << 20),
            Limit::OutputBytes => (1, 1 << 40),
        }
    }

    /// Enforced by sealc outside the sandbox (its clock, its relay), not by
    /// a resource limit of the command's processes.
    pub fn outside(self) -> bool {
        matches!(self, Limit::WallSeconds | Limit::OutputBytes)
    }

    /// What the run report says enforces it, on Linux or on macOS.
    pub fn enforced_by(self, linux: bool) -> &'static str {
        match (self, linux) {
            (Limit::WallSeconds, _) => "sealc: SIGTERM, then SIGKILL two seconds later",
            (Limit::CpuSeconds, _) => "RLIMIT_CPU",
            (Limit::MemoryMib, true) => {
                "sealc: resident memory of the sandbox's processes, polled every 50 ms; RLIMIT_DATA of each at twice the limit"
            }
            (Limit::MemoryMib, false) => "RLIMIT_DATA at twice the limit",
            (Limit::Processes, _) => "RLIMIT_NPROC of the agent's user",
            (Limit::OpenFiles, _) => "RLIMIT_NOFILE",
            (Limit::FileSizeMib, _) => "RLIMIT_FSIZE",
            (Limit::OutputBytes, _) => "sealc: the relay of stdout and stderr",
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_names_its_limit() {
        for l in Limit::ALL {
            assert_eq!(Limit::from_key(l.key()), Some(l));
        }
        assert_eq!(Limit::from_key("memory"), None);
    }
}
