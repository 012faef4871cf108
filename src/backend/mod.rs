//! Stage 4, **render**: one pure function of the IR per artifact.
//!
//! Each renderer takes `&Ir` and returns bytes. None reads the host, the
//! clock or the environment, so the same IR always gives the same bytes.

pub mod codex;
pub mod env;
pub mod seatbelt;

use std::collections::BTreeMap;

use crate::ir::Ir;

/// File name of the seatbelt profile.
pub const SEATBELT: &str = "seal.sb";
/// File name of the env allowlist.
pub const ENV: &str = "env.json";
/// File name of the Codex config, relative to the output directory.
pub const CODEX: &str = "codex/config.toml";

/// Every artifact of the IR, by file name (relative, `/`-separated).
pub fn render_all(ir: &Ir) -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (SEATBELT.to_string(), seatbelt::render(ir)),
        (ENV.to_string(), env::render(ir)),
        (CODEX.to_string(), codex::render(ir)),
    ])
}
