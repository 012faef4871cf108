//! What each key of a spec looks like: one example per key, shown when a
//! value has the wrong TOML type (`sealc::spec::type`). A test checks that
//! every key of the spec schema has exactly one example here and that each
//! example reads without a type error, so the table cannot drift.

/// Each key's path (`*` for any name, `[]` for any array element) and an
/// example of it as written in its table.
pub const SHAPES: &[(&str, &str)] = &[
    ("version", "version = 1"),
    ("name", "name = \"probe-rep\""),
    ("description", "description = \"one sealed codex exec\""),
    (
        "target",
        "target = { platform = \"linux\", base = \"allow-default\" }",
    ),
    ("target.platform", "platform = \"linux\""),
    ("target.base", "base = \"allow-default\""),
    ("vars", "vars = { run = { required = true } }"),
    (
        "vars.*",
        "run = { required = true, help = \"the run directory\" }",
    ),
    ("vars.*.env", "env = \"HOME\""),
    ("vars.*.default", "default = \"${home}/.codex\""),
    ("vars.*.required", "required = true"),
    ("vars.*.help", "help = \"the run directory\""),
    (
        "filesystem",
        "filesystem = { deny_read = [\"${home}/.ssh\"] }",
    ),
    ("filesystem.deny_read", "deny_read = [\"${home}/.ssh\"]"),
    (
        "filesystem.allow_read",
        "allow_read = [\"${home}/.ssh/known_hosts\"]",
    ),
    (
        "filesystem.metadata_only",
        "metadata_only = [\"${run}/dispatch\"]",
    ),
    ("filesystem.write", "write = [\"${run}/ws\"]"),
    (
        "filesystem.write_devices",
        "write_devices = [\"/dev/null\"]",
    ),
    (
        "filesystem.protect",
        "protect = [\".git/hooks\", \".git/config\"]",
    ),
    ("launcher", "launcher = { path = \"${codex}\" }"),
    ("launcher.path", "path = \"${codex}\""),
    ("network", "network = { mode = \"none\" }"),
    ("network.mode", "mode = \"allowlist\""),
    ("network.proxy", "proxy = \"127.0.0.1:${proxy_port}\""),
    ("network.hosts", "hosts = [\"api.openai.com\"]"),
    ("network.ports", "ports = [443]"),
    ("network.allow_ranges", "allow_ranges = [\"10.0.0.0/8\"]"),
    ("env", "env = { pass = [\"PATH\"] }"),
    ("env.pass", "pass = [\"PATH\", \"LANG\"]"),
    ("env.set", "set = { HOME = \"${run}/home\" }"),
    ("env.set.*", "HOME = \"${run}/home\""),
    ("env.secret", "secret = [\"OPENAI_API_KEY\"]"),
    ("env.allow_loader_vars", "allow_loader_vars = true"),
    ("exec", "exec = { bwrap = \"/usr/bin/bwrap\" }"),
    (
        "exec.sandbox_exec",
        "sandbox_exec = \"/usr/bin/sandbox-exec\"",
    ),
    ("exec.bwrap", "bwrap = \"/usr/bin/bwrap\""),
    ("exec.reset", "reset = [\"${run}/ws\"]"),
    ("exec.outputs", "outputs = [\"${run}/ws/answer.md\"]"),
    (
        "exec.timeout",
        "timeout = { bin = \"/usr/bin/timeout\", seconds = 240 }",
    ),
    ("exec.timeout.bin", "bin = \"/usr/bin/timeout\""),
    ("exec.timeout.seconds", "seconds = 240"),
    ("exec.proc", "proc = \"none\""),
    ("exec.isolation", "isolation = \"landlock\""),
    ("limits", "limits = { wall_seconds = 1800 }"),
    ("limits.wall_seconds", "wall_seconds = 1800"),
    ("limits.cpu_seconds", "cpu_seconds = 600"),
    ("limits.memory_mib", "memory_mib = 4096"),
    ("limits.processes", "processes = 256"),
    ("limits.open_files", "open_files = 1024"),
    ("limits.file_size_mib", "file_size_mib = 1024"),
    ("limits.output_bytes", "output_bytes = 10000000"),
    ("codex", "codex = { version = \"0.171.0\" }"),
    ("codex.version", "version = \"0.171.0\""),
    ("codex.model", "model = \"gpt-5.5\""),
    ("codex.reasoning_effort", "reasoning_effort = \"high\""),
    ("codex.workspace", "workspace = \"${run}/ws\""),
    ("codex.sandbox", "sandbox = \"profile\""),
    (
        "codex.provider",
        "provider = { base_url = \"http://127.0.0.1:${proxy_port}/v1\" }",
    ),
    (
        "codex.provider.base_url",
        "base_url = \"http://127.0.0.1:${proxy_port}/v1\"",
    ),
    ("codex.provider.env_key", "env_key = \"OPENAI_API_KEY\""),
    ("codex.provider.hold_key", "hold_key = true"),
    ("codex.allow_system_config", "allow_system_config = false"),
    ("codex.allow_project_config", "allow_project_config = false"),
    (
        "codex.credentials",
        "credentials = \"${home}/.codex/auth.json\"",
    ),
    (
        "codex.mcp_servers",
        "mcp_servers = { docs = { seal = \"${checkout}/seals/docs/seal.json\", binding = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\", command = [\"/usr/bin/python3\", \"/srv/docs.py\"] } }",
    ),
    (
        "codex.mcp_servers.*",
        "docs = { seal = \"${checkout}/seals/docs/seal.json\", binding = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\", command = [\"/usr/bin/python3\", \"/srv/docs.py\"] }",
    ),
    (
        "codex.mcp_servers.*.seal",
        "seal = \"${checkout}/seals/docs/seal.json\"",
    ),
    (
        "codex.mcp_servers.*.binding",
        "binding = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"",
    ),
    (
        "codex.mcp_servers.*.command",
        "command = [\"/usr/bin/python3\", \"/srv/docs.py\"]",
    ),
    ("codex.mcp_servers.*.port", "port = 47001"),
    ("codex.mcp_servers.*.starts", "starts = 4"),
    (
        "assert",
        "assert = [{ deny = \"file-read-data\", paths = [\"${checkout}/x\"] }]",
    ),
    ("assert[].allow", "allow = \"file-write-data\""),
    ("assert[].deny", "deny = \"file-read-data\""),
    ("assert[].paths", "paths = [\"${checkout}/x\"]"),
    ("assert[].remote", "remote = [\"api.openai.com:443\"]"),
    ("assert[].names", "names = [\"com.apple.pasteboard.1\"]"),
    ("assert[].platform", "platform = \"macos\""),
    ("ipc", "ipc = { allow = [\"com.apple.SecurityServer\"] }"),
    ("ipc.allow", "allow = [\"com.apple.SecurityServer\"]"),
];

/// The example for the value at a dotted path as the reader names it
/// (`vars.run.env`, `network.ports[1]`, `assert[0].paths`): an array's
/// element is shown as the array.
pub fn example(path: &str) -> Option<&'static str> {
    let key = pattern(path);
    let key = key.strip_suffix("[]").unwrap_or(&key);
    SHAPES.iter().find(|(k, _)| *k == key).map(|(_, e)| *e)
}

/// `vars.run.env` → `vars.*.env`, `assert[0].paths` → `assert[].paths`.
fn pattern(path: &str) -> String {
    let mut out = Vec::new();
    for (i, seg) in path.split('.').enumerate() {
        let (name, index) = match seg.find('[') {
            Some(at) => (&seg[..at], "[]"),
            None => (seg, ""),
        };
        let any = i == 1 && out.first().is_some_and(|f: &String| f == "vars")
            || i == 2 && out.join(".") == "env.set";
        out.push(format!("{}{index}", if any { "*" } else { name }));
    }
    out.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every property path of the spec schema, as `SHAPES` names them.
    fn schema_paths(
        node: &serde_json::Value,
        defs: &serde_json::Value,
        path: &str,
        out: &mut Vec<String>,
    ) {
        if let Some(r) = node.get("$ref").and_then(|r| r.as_str()) {
            let name = r.rsplit('/').next().unwrap_or_default();
            return schema_paths(&defs[name], defs, path, out);
        }
        for k in ["allOf", "anyOf", "oneOf"] {
            for n in node.get(k).and_then(|v| v.as_array()).into_iter().flatten() {
                schema_paths(n, defs, path, out);
            }
        }
        for (k, v) in node
            .get("properties")
            .and_then(|p| p.as_object())
            .into_iter()
            .flatten()
        {
            let here = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            out.push(here.clone());
            schema_paths(v, defs, &here, out);
        }
        if let Some(items) = node.get("items").filter(|i| i.is_object()) {
            schema_paths(items, defs, &format!("{path}[]"), out);
        }
        if let Some(more) = node.get("additionalProperties").filter(|i| i.is_object()) {
            out.push(format!("{path}.*"));
            schema_paths(more, defs, &format!("{path}.*"), out);
        }
    }

    #[test]
    fn every_key_of_the_schema_has_one_example() {
        let schema: serde_json::Value = serde_json::from_str(crate::spec::SPEC_SCHEMA).unwrap();
        let mut paths = Vec::new();
        schema_paths(&schema, &schema["definitions"], "", &mut paths);
        paths.sort();
        paths.dedup();
        let mut listed: Vec<String> = SHAPES.iter().map(|(k, _)| k.to_string()).collect();
        listed.sort();
        let before = listed.len();
        listed.dedup();
        assert_eq!(before, listed.len(), "a key is listed twice");
        assert_eq!(paths, listed, "SHAPES and the schema name different keys");
    }

    #[test]
    fn every_example_reads_without_a_type_error() {
        for (key, example) in SHAPES {
            // The table the example is written in, as a header.
            let parent: Vec<&str> = key.split('.').collect();
            let parent = &parent[..parent.len() - 1];
            let header = parent
                .iter()
                .map(|s| match *s {
                    "*" => "run",
                    s => s.trim_end_matches("[]"),
                })
                .collect::<Vec<_>>()
                .join(".");
            let text = if header.is_empty() {
                format!("{example}\n")
            } else if parent.iter().any(|s| s.ends_with("[]")) {
                format!("[[{header}]]\n{example}\n")
            } else {
                format!("[{header}]\n{example}\n")
            };
            let src = format!(
                "version = 1\nname = \"shape\"\n{}",
                text.replacen("version = 1\n", "", 1)
                    .replacen("name = \"probe-rep\"\n", "", 1)
            );
            if let Err(d) = crate::spec::parse(&src) {
                let types: Vec<_> =
                    d.0.iter()
                        .filter(|x| {
                            x.code == crate::diag::code::SPEC_TYPE
                                || x.code == crate::diag::code::SPEC_TOML
                                || x.code == crate::diag::code::SPEC_UNKNOWN_KEY
                        })
                        .collect();
                assert!(types.is_empty(), "{key}: {src}\n{types:#?}");
            }
        }
    }

    #[test]
    fn paths_as_the_reader_names_them_find_their_example() {
        assert_eq!(
            example("exec.timeout"),
            Some("timeout = { bin = \"/usr/bin/timeout\", seconds = 240 }")
        );
        assert_eq!(example("vars.run.env"), Some("env = \"HOME\""));
        assert_eq!(
            example("vars.run"),
            Some("run = { required = true, help = \"the run directory\" }")
        );
        assert_eq!(example("network.ports[1]"), Some("ports = [443]"));
        assert_eq!(
            example("assert[0].paths[2]"),
            Some("paths = [\"${checkout}/x\"]")
        );
        assert_eq!(example("assert[3]"), example("assert"));
        assert_eq!(example("env.set.HOME"), Some("HOME = \"${run}/home\""));
        assert_eq!(example("nope"), None);
    }
}
