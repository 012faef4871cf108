//! Lowering what a run is given: the program, the limits.

use super::*;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecIr {
    pub sandbox_exec: String,
    pub bwrap: String,
    pub timeout: Option<(String, u64)>,
    pub limits: LimitsIr,
    /// The Linux sandbox's `/proc` (`exec.proc`; `host` in the Landlock
    /// mode, which has no other).
    pub proc: crate::spec::ProcMode,
    /// How a Linux seal confines the command (`exec.isolation`).
    pub isolation: crate::spec::Isolation,
    /// `exec.reset`: write roots (their paths as written, substituted)
    /// that `sealc exec` empties before each run, sorted.
    pub reset: Vec<String>,
    /// `exec.outputs`: the files a run produces that its report and
    /// attestation name, sorted.
    pub outputs: Vec<super::Output>,
}

/// The run's limits (`[limits]`), each checked to be in range. The wall
/// limit is `limits.wall_seconds` or `exec.timeout.seconds` (never both).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitsIr {
    pub wall_seconds: Option<u64>,
    pub cpu_seconds: Option<u64>,
    pub memory_mib: Option<u64>,
    pub processes: Option<u64>,
    pub open_files: Option<u64>,
    pub file_size_mib: Option<u64>,
    pub output_bytes: Option<u64>,
}

impl LimitsIr {
    /// A limit's value, if the seal sets it.
    pub fn get(&self, l: crate::limit::Limit) -> Option<u64> {
        use crate::limit::Limit;
        match l {
            Limit::WallSeconds => self.wall_seconds,
            Limit::CpuSeconds => self.cpu_seconds,
            Limit::MemoryMib => self.memory_mib,
            Limit::Processes => self.processes,
            Limit::OpenFiles => self.open_files,
            Limit::FileSizeMib => self.file_size_mib,
            Limit::OutputBytes => self.output_bytes,
        }
    }

    /// Every limit that is set.
    pub fn set(&self) -> Vec<(crate::limit::Limit, u64)> {
        crate::limit::Limit::ALL
            .into_iter()
            .filter_map(|l| Some((l, self.get(l)?)))
            .collect()
    }
}

impl Lower<'_> {
    pub(super) fn exec(&mut self, spec: &Spec) -> ExecIr {
        let x = &spec.exec;
        let sandbox_exec = match &x.sandbox_exec {
            Some(s) => self.path(s, "`exec.sandbox_exec`").unwrap_or_default(),
            None => SANDBOX_EXEC.to_string(),
        };
        let bwrap = match &x.bwrap {
            Some(s) => self.path(s, "`exec.bwrap`").unwrap_or_default(),
            None => BWRAP.to_string(),
        };
        let timeout = x.timeout.as_ref().and_then(|t| {
            let bin = self.path(&t.bin, "`exec.timeout.bin`");
            let secs = t.seconds.value;
            if !(1..=MAX_TIMEOUT_SECS).contains(&secs) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::SPEC_VALUE,
                        format!("timeout of `{secs}` seconds is out of range"),
                    )
                    .at(t.seconds.span.clone())
                    .label(format!("1 to {MAX_TIMEOUT_SECS}"))
                    .help("give a positive number of seconds, at most one week"),
                );
                return None;
            }
            Some((bin?, secs as u64))
        });
        let limits = self.limits(spec, timeout.as_ref().map(|(_, s)| *s));
        // Linux only: a macOS seal runs under seatbelt whatever it says.
        let isolation = match self.platform(spec) {
            Platform::Linux => x.isolation.as_ref().map(|i| i.value).unwrap_or_default(),
            Platform::Macos => crate::spec::Isolation::Namespaces,
        };
        ExecIr {
            sandbox_exec,
            bwrap,
            timeout,
            limits,
            proc: match isolation {
                crate::spec::Isolation::Landlock => crate::spec::ProcMode::Host,
                crate::spec::Isolation::Namespaces => {
                    x.proc.as_ref().map(|p| p.value).unwrap_or_default()
                }
            },
            isolation,
            reset: Vec::new(),
            outputs: Vec::new(),
        }
    }

    pub(super) fn limits(&mut self, spec: &Spec, timeout: Option<u64>) -> LimitsIr {
        let l = &spec.limits;
        let mut check = |limit: crate::limit::Limit, v: &Option<crate::spec::Spanned<i64>>| {
            let v = v.as_ref()?;
            let (key, (min, max)) = (limit.key(), limit.range());
            if !(min..=max).contains(&v.value) {
                self.diags.push(
                    Diagnostic::error(
                        crate::diag::code::SPEC_VALUE,
                        format!("`limits.{key}` of `{}` is out of range", v.value),
                    )
                    .at(v.span.clone())
                    .label(format!("{min} to {max}"))
                    .help(format!("write `{key} = {min}` or more, at most {max}")),
                );
                return None;
            }
            Some(v.value as u64)
        };
        use crate::limit::Limit;
        let wall = check(Limit::WallSeconds, &l.wall_seconds);
        let out = LimitsIr {
            wall_seconds: wall,
            cpu_seconds: check(Limit::CpuSeconds, &l.cpu_seconds),
            memory_mib: check(Limit::MemoryMib, &l.memory_mib),
            processes: check(Limit::Processes, &l.processes),
            open_files: check(Limit::OpenFiles, &l.open_files),
            file_size_mib: check(Limit::FileSizeMib, &l.file_size_mib),
            output_bytes: check(Limit::OutputBytes, &l.output_bytes),
        };
        if let (Some(w), Some(_)) = (&l.wall_seconds, timeout) {
            self.diags.push(
                Diagnostic::error(
                    crate::diag::code::LIMITS_WALL_TWICE,
                    "the wall-clock limit is given twice, as `limits.wall_seconds` and `exec.timeout`",
                )
                .at(w.span.clone())
                .label("one wall-clock limit")
                .help("keep `limits.wall_seconds` and remove `exec.timeout` (its older spelling)"),
            );
        }
        out
    }
}
