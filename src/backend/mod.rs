//! Stage 4, **render**: one pure function of the IR per artifact.
//!
//! Each renderer takes `&Ir` and returns bytes. None reads the host, the
//! clock or the environment, so the same IR always gives the same bytes.

pub mod bwrap;
pub mod codex;
pub mod codex_profile;
pub mod env;
pub mod seatbelt;

use std::collections::BTreeMap;

use crate::ir::Ir;
use crate::spec::Platform;

/// File name of the seatbelt profile.
pub const SEATBELT: &str = "seal.sb";
/// File name of the bubblewrap argument vector (Linux target).
pub const BWRAP: &str = "seal.bwrap.json";
/// File name of the env allowlist.
pub const ENV: &str = "env.json";
/// File name of the Codex config, relative to the output directory.
pub const CODEX: &str = "codex/config.toml";

/// Every artifact name sealc writes for any platform: a file by one of these
/// names beside a record that does not produce it is left from another
/// compile (`verify` reports it; `compile` removes it when it writes).
pub const ALL: [&str; 4] = [SEATBELT, BWRAP, ENV, CODEX];

/// Every artifact of the IR, by file name (relative, `/`-separated): the
/// platform's seal (`seal.sb` or `seal.bwrap.json`), the env allowlist and
/// the Codex config.
pub fn render_all(ir: &Ir) -> BTreeMap<String, Vec<u8>> {
    let seal = match ir.platform {
        Platform::Macos => (SEATBELT.to_string(), seatbelt::render(ir)),
        Platform::Linux => (BWRAP.to_string(), bwrap::render(ir)),
    };
    BTreeMap::from([
        seal,
        (ENV.to_string(), env::render(ir)),
        (CODEX.to_string(), codex::render(ir)),
    ])
}
