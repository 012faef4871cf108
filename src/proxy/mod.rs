//! sealc's own proxy, for `network.mode = "allowlist"`.

pub mod policy;
