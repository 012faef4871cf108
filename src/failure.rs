//! Why a step of the run could not be done on the host: what could not be
//! done, in the words a refusal prints, and the error that said so when
//! there was one (the operating system's, seccompiler's, Landlock's: kept
//! as an error, not flattened into the text, so a stage can tell `EACCES`
//! from `ENOSPC`). Every runtime mechanism
//! (`absent`, `exec::*`) returns it; the run's stages wrap it into a typed
//! `run::Refusal` with its phase, exit status and help.

use std::fmt;
use std::io;

/// A step that failed: `what` (may be empty when the cause says it all)
/// and the cause.
#[derive(Debug)]
pub struct Failure {
    what: String,
    cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Failure {
    /// A failure the OS did not report: a refusal of sealc's own.
    pub fn new(what: impl Into<String>) -> Self {
        Failure {
            what: what.into(),
            cause: None,
        }
    }

    /// `what` failed with the OS error `e`.
    pub fn os(what: impl Into<String>, e: impl Into<io::Error>) -> Self {
        Failure::by(what, e.into())
    }

    /// `what` failed, and `cause` (a library's error) says why.
    pub fn by(
        what: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Failure {
            what: what.into(),
            cause: Some(Box::new(cause)),
        }
    }

    /// A library's error as it is.
    pub fn of(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        Failure::by("", cause)
    }

    /// The same failure, told as part of a larger step: `what: ...`.
    pub fn within(self, what: impl fmt::Display) -> Self {
        let what = if self.what.is_empty() {
            what.to_string()
        } else {
            format!("{what}: {}", self.what)
        };
        Failure { what, ..self }
    }

    /// The OS's answer, if that was the cause.
    pub fn os_error(&self) -> Option<&io::Error> {
        self.cause.as_deref()?.downcast_ref()
    }
}

impl From<rustix::io::Errno> for Failure {
    fn from(e: rustix::io::Errno) -> Self {
        Failure::os("", e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::os("", e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.cause, self.what.is_empty()) {
            (Some(e), true) => write!(f, "{e}"),
            (Some(e), false) => write!(f, "{}: {e}", self.what),
            (None, _) => f.write_str(&self.what),
        }
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|e| e as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn told_as_the_words_before_the_os_answer() {
        let e = rustix::io::Errno::ACCESS;
        assert_eq!(Failure::from(e).to_string(), e.to_string());
        let f = Failure::from(e).within("cannot make `/w`");
        assert_eq!(f.to_string(), format!("cannot make `/w`: {e}"));
        assert_eq!(
            f.os_error().and_then(io::Error::raw_os_error),
            Some(e.raw_os_error())
        );
        let g = Failure::new("all 100 are in use").within("cannot allocate");
        assert_eq!(g.to_string(), "cannot allocate: all 100 are in use");
        assert!(g.os_error().is_none());
    }
}
