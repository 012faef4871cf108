//! Stage 4, **render**: one pure function of the IR per artifact.
//!
//! Each renderer takes `&Ir` and returns bytes. None reads the host, the
//! clock or the environment, so the same IR always gives the same bytes.

pub mod bwrap;
pub mod codex;
pub mod codex_profile;
pub mod env;
pub mod landlock;
pub mod seatbelt;
pub mod toml_doc;

use std::collections::BTreeMap;

use crate::ir::Ir;
use crate::spec::Platform;

/// File name of the seatbelt profile.
pub const SEATBELT: &str = "seal.sb";
/// File name of the bubblewrap argument vector (Linux target).
pub const BWRAP: &str = "seal.bwrap.json";
/// File name of the Landlock rules (Linux target, `exec.isolation = "landlock"`).
pub const LANDLOCK: &str = "seal.landlock.json";
/// File name of the env allowlist.
pub const ENV: &str = "env.json";
/// File name of the Codex config, relative to the output directory.
pub const CODEX: &str = "codex/config.toml";

/// Every artifact name sealc writes for any platform: a file by one of these
/// names beside a record that does not produce it is left from another
/// compile (`verify` reports it; `compile` removes it when it writes).
pub const ALL: [&str; 5] = [SEATBELT, BWRAP, LANDLOCK, ENV, CODEX];

/// The platform's seal of the IR: `seal.sb`, `seal.bwrap.json` or
/// `seal.landlock.json`.
pub fn seal_name(ir: &Ir) -> &'static str {
    match (ir.platform, ir.exec.isolation) {
        (Platform::Macos, _) => SEATBELT,
        (Platform::Linux, crate::spec::Isolation::Namespaces) => BWRAP,
        (Platform::Linux, crate::spec::Isolation::Landlock) => LANDLOCK,
    }
}

/// From this many roots on, a compile looks for lint's smells on a second
/// thread while the renderers run; below it, starting a thread costs more
/// than it saves (benches/peers.sh). The findings are the same either way.
/// (Rendering a profile's sections on two threads was tried: the copy that
/// joins them cost what the second core saved.)
pub const PARALLEL_FROM: usize = 512;

/// Every artifact of the IR, by file name (relative, `/`-separated): the
/// platform's seal (`seal.sb` or `seal.bwrap.json`), the env allowlist and
/// the Codex config.
pub fn render_all(ir: &Ir) -> BTreeMap<String, Vec<u8>> {
    let name = seal_name(ir).to_string();
    let seal = match name.as_str() {
        SEATBELT => (name, seatbelt::render(ir)),
        LANDLOCK => (name, landlock::render(ir)),
        _ => (name, bwrap::render(ir)),
    };
    BTreeMap::from([
        seal,
        (ENV.to_string(), env::render(ir)),
        (CODEX.to_string(), codex::render(ir)),
    ])
}

/// The record's `exec.argv_prefix`, for the reader, never for running:
/// `/usr/bin/env -i K=V...` and then the sandbox: on macOS
/// `<sandbox_exec> -f seal.sb [<timeout> --foreground N]`; on Linux the
/// bubblewrap argv of `seal.bwrap.json`. `sealc exec` builds on it with what
/// no argv holds (on Linux its init and `__confine` inside, with Landlock,
/// seccomp and the limits; the uid drop; the proxy bridge), so run as it
/// stands it is a weaker seal.
pub fn argv_prefix(ir: &Ir) -> Vec<String> {
    let mut argv = vec![env::ENV_BIN.to_string(), "-i".to_string()];
    argv.extend(ir.env.vars.iter().map(|(k, v)| {
        let mut kv = String::with_capacity(k.len() + 1 + v.len());
        kv.push_str(k);
        kv.push('=');
        kv.push_str(v);
        kv
    }));
    argv.extend(sandbox_argv(ir));
    argv
}

/// The part of [`argv_prefix`] after the environment.
fn sandbox_argv(ir: &Ir) -> Vec<String> {
    match ir.platform {
        Platform::Macos => {
            let mut argv = vec![ir.exec.sandbox_exec.clone(), "-f".into(), SEATBELT.into()];
            if let Some((bin, secs)) = &ir.exec.timeout {
                argv.extend([bin.clone(), "--foreground".into(), secs.to_string()]);
            }
            argv
        }
        Platform::Linux => bwrap::argv(ir),
    }
}
