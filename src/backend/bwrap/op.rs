//! One step of bubblewrap's argument vector, typed: the renderer makes
//! steps from these, and every reader of a seal's steps (`sealc exec`'s
//! plan, the mount model `sealc explain` and `verify` use, the renderer's
//! own checks) reads them back through [`Op::parse`], the one place that
//! knows bubblewrap's spelling.

/// A namespace or process flag, taking no argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    UnshareUser,
    UnsharePid,
    UnshareIpc,
    UnshareUts,
    UnshareNet,
    UnshareCgroupTry,
    DisableUserns,
    NewSession,
    DieWithParent,
    AsPid1,
}

impl Flag {
    const ALL: [Flag; 10] = [
        Flag::UnshareUser,
        Flag::UnsharePid,
        Flag::UnshareIpc,
        Flag::UnshareUts,
        Flag::UnshareNet,
        Flag::UnshareCgroupTry,
        Flag::DisableUserns,
        Flag::NewSession,
        Flag::DieWithParent,
        Flag::AsPid1,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Flag::UnshareUser => "--unshare-user",
            Flag::UnsharePid => "--unshare-pid",
            Flag::UnshareIpc => "--unshare-ipc",
            Flag::UnshareUts => "--unshare-uts",
            Flag::UnshareNet => "--unshare-net",
            Flag::UnshareCgroupTry => "--unshare-cgroup-try",
            Flag::DisableUserns => "--disable-userns",
            Flag::NewSession => "--new-session",
            Flag::DieWithParent => "--die-with-parent",
            Flag::AsPid1 => "--as-pid-1",
        }
    }
}

/// How a host path is bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    /// `--ro-bind`: read-only.
    ReadOnly,
    /// `--bind`: writable.
    Writable,
    /// `--dev-bind`: a device, usable as one.
    Device,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `--ro-bind`, `--bind`, `--dev-bind`, each with `-try` when `try_`
    /// (a source that is not there is skipped).
    Bind {
        how: Bind,
        try_: bool,
        src: String,
        dst: String,
    },
    /// `--tmpfs DST`: an empty, writable, private directory.
    Tmpfs(String),
    /// `--symlink TARGET AT`.
    Symlink {
        target: String,
        at: String,
    },
    /// `--proc DST`: a fresh `/proc` of the sandbox's pid namespace.
    Proc(String),
    /// `--dev DST`: a minimal `/dev`.
    Dev(String),
    /// `--remount-ro DST`.
    RemountRo(String),
    /// `--cap-drop CAP`.
    CapDrop(String),
    Flag(Flag),
}

impl Op {
    pub fn ro_bind(src: &str, dst: &str) -> Op {
        Op::bind(Bind::ReadOnly, false, src, dst)
    }

    pub fn bind(how: Bind, try_: bool, src: &str, dst: &str) -> Op {
        Op::Bind {
            how,
            try_,
            src: src.to_string(),
            dst: dst.to_string(),
        }
    }

    /// The path inside the sandbox the step makes or changes, if any.
    pub fn dest(&self) -> Option<&str> {
        match self {
            Op::Bind { dst, .. } => Some(dst),
            Op::Tmpfs(d) | Op::Proc(d) | Op::Dev(d) | Op::RemountRo(d) => Some(d),
            Op::Symlink { at, .. } => Some(at),
            Op::CapDrop(_) | Op::Flag(_) => None,
        }
    }

    /// Its arguments, as bubblewrap reads them.
    pub fn args(&self) -> Vec<String> {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        match self {
            Op::Bind {
                how,
                try_,
                src,
                dst,
            } => {
                let base = match how {
                    Bind::ReadOnly => "--ro-bind",
                    Bind::Writable => "--bind",
                    Bind::Device => "--dev-bind",
                };
                let opt = if *try_ {
                    format!("{base}-try")
                } else {
                    base.to_string()
                };
                vec![opt, src.clone(), dst.clone()]
            }
            Op::Tmpfs(d) => own(&["--tmpfs", d]),
            Op::Symlink { target, at } => own(&["--symlink", target, at]),
            Op::Proc(d) => own(&["--proc", d]),
            Op::Dev(d) => own(&["--dev", d]),
            Op::RemountRo(d) => own(&["--remount-ro", d]),
            Op::CapDrop(c) => own(&["--cap-drop", c]),
            Op::Flag(f) => own(&[f.as_str()]),
        }
    }

    /// A step's arguments read back: exactly what [`Op::args`] writes (an
    /// option sealc does not write, or the wrong number of arguments, is
    /// refused).
    pub fn parse(args: &[String]) -> Result<Op, String> {
        let text = || args.join(" ");
        let n = |want: usize| {
            if args.len() == want + 1 {
                Ok(())
            } else {
                Err(format!(
                    "step `{}` has {} arguments, not {want}",
                    text(),
                    args.len().saturating_sub(1)
                ))
            }
        };
        let Some(opt) = args.first() else {
            return Err("an empty step".into());
        };
        let a = |i: usize| args[i].clone();
        let bind = |how: Bind, try_: bool| -> Result<Op, String> {
            n(2)?;
            Ok(Op::Bind {
                how,
                try_,
                src: a(1),
                dst: a(2),
            })
        };
        match opt.as_str() {
            "--ro-bind" => bind(Bind::ReadOnly, false),
            "--ro-bind-try" => bind(Bind::ReadOnly, true),
            "--bind" => bind(Bind::Writable, false),
            "--bind-try" => bind(Bind::Writable, true),
            "--dev-bind" => bind(Bind::Device, false),
            "--dev-bind-try" => bind(Bind::Device, true),
            "--tmpfs" => n(1).map(|_| Op::Tmpfs(a(1))),
            "--symlink" => n(2).map(|_| Op::Symlink {
                target: a(1),
                at: a(2),
            }),
            "--proc" => n(1).map(|_| Op::Proc(a(1))),
            "--dev" => n(1).map(|_| Op::Dev(a(1))),
            "--remount-ro" => n(1).map(|_| Op::RemountRo(a(1))),
            "--cap-drop" => n(1).map(|_| Op::CapDrop(a(1))),
            other => match Flag::ALL.into_iter().find(|f| f.as_str() == other) {
                Some(f) => n(0).map(|_| Op::Flag(f)),
                None => Err(format!("step `{}` is not one sealc writes", text())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_reads_back_as_itself() {
        let mut ops = vec![
            Op::Tmpfs("/t".into()),
            Op::Symlink {
                target: "a".into(),
                at: "/b".into(),
            },
            Op::Proc("/proc".into()),
            Op::Dev("/dev".into()),
            Op::RemountRo("/r".into()),
            Op::CapDrop("ALL".into()),
        ];
        for how in [Bind::ReadOnly, Bind::Writable, Bind::Device] {
            for try_ in [false, true] {
                ops.push(Op::bind(how, try_, "/s", "/d"));
            }
        }
        ops.extend(Flag::ALL.map(Op::Flag));
        for op in ops {
            assert_eq!(Op::parse(&op.args()), Ok(op.clone()), "{op:?}");
        }
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(Op::parse(&s(&["--bind", "/a"])).is_err());
        assert!(Op::parse(&s(&["--tmpfs"])).is_err());
        assert!(Op::parse(&s(&["--unshare-net", "x"])).is_err());
        assert!(Op::parse(&s(&["--chdir", "/"])).is_err());
        assert!(Op::parse(&[]).is_err());
    }
}
