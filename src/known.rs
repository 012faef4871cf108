//! What sealc knows of the systems it seals and the programs it works with,
//! written here rather than read from a host: the Codex releases it has
//! tested, the devices bubblewrap's `--dev` provides, and the programs sealc
//! starts. Both the IR (which checks a spec against them) and the renderers
//! (which write them) need this; it lives below both, so that neither
//! imports the other for it.
//!
//! Architecture Invariant: this module imports nothing of the crate.

/// The Codex releases (npm `@openai/codex`) sealc has been run against, oldest
/// first. `[codex] version` selects among these.
pub const TESTED: &[&str] = &["0.137.0", "0.144.3", "0.160.1", "0.169.0", "0.171.0"];

/// The release a seal targets when its spec names none: the newest tested.
pub const DEFAULT_VERSION: &str = "0.171.0";

/// A version of the form `MAJOR.MINOR.PATCH`, compared numerically.
pub fn parse_version(v: &str) -> Option<semver::Version> {
    semver::Version::parse(v).ok()
}

/// The tested releases that `want` selects: an exact version (which must be
/// a tested one) or a semver range. `Err` says why none is selected.
pub fn select_versions(want: &str) -> Result<Vec<&'static str>, String> {
    let want = want.trim();
    if let Some(v) = parse_version(want) {
        return match TESTED
            .iter()
            .find(|t| parse_version(t).as_ref() == Some(&v))
        {
            Some(t) => Ok(vec![*t]),
            None => Err(format!("Codex {v} is not a release sealc has tested")),
        };
    }
    let req = semver::VersionReq::parse(want)
        .map_err(|e| format!("not a version or a version range: {e}"))?;
    let hit: Vec<&'static str> = TESTED
        .iter()
        .copied()
        .filter(|t| parse_version(t).is_some_and(|v| req.matches(&v)))
        .collect();
    if hit.is_empty() {
        return Err("the range matches no release sealc has tested".into());
    }
    Ok(hit)
}

/// The first release whose sandbox starts when a Codex permission profile's
/// env policy sets `PATH` (older ones start their helper by that PATH and
/// fail).
pub const PATH_SINCE: &str = "0.169.0";

/// The devices `--dev /dev` provides (bubblewrap's minimal set).
pub const DEV_SET: &[&str] = &[
    "/dev/full",
    "/dev/null",
    "/dev/random",
    "/dev/tty",
    "/dev/urandom",
    "/dev/zero",
];

/// The program that clears the environment.
pub const ENV_BIN: &str = "/usr/bin/env";
/// The default `sandbox-exec`.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";
/// The default `bwrap`.
pub const BWRAP: &str = "/usr/bin/bwrap";
