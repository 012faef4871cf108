//! A run started by root: the write roots handed to the agent's user
//! (idmapped, or chowned and handed back), around the run itself.

use super::*;

/// From the hand-over on: build the plan's bridge, run, check the Codex
/// config after.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_handed(
    ir: &crate::ir::Ir,
    plan: crate::exec::Plan,
    rt: crate::exec::Runtime<'_>,
    needs_bridge: bool,
    command: &[OsString],
    (ways, deliveries): (
        [crate::exec::stdio::Way; 3],
        [crate::exec::stdio::Delivery; 2],
    ),
    overrides: std::collections::BTreeMap<String, std::net::IpAddr>,
    (installs, codex_config): (bool, &[u8]),
    out: &mut dyn Write,
    err: &mut dyn Write,
    ctx: &mut ExecCtx,
) -> i32 {
    let mut bridge = None;
    let mut plan = if needs_bridge {
        let b = match crate::exec::private_dir() {
            Ok(d) => d,
            Err(e) => {
                let _ = writeln!(err, "error: cannot make the proxy bridge's directory: {e}");
                return crate::exec::SANDBOX_FAILED;
            }
        };
        let b = bridge.insert(b);
        let rt = crate::exec::Runtime {
            bridge_dir: b.dir.path(),
            ..rt
        };
        match crate::exec::plan(ir, command, &|n| std::env::var_os(n), &rt) {
            Ok(p) => p,
            Err(_) => return crate::exec::SANDBOX_FAILED,
        }
    } else {
        plan
    };
    // sealc's own proxy tells each refusal on stderr, in one write, through
    // its own copy of the descriptor: this thread holds the lock on
    // `Stderr` meanwhile. The line is made of the agent's request: escaped
    // (again: the proxy keeps it to one line of visible ASCII), so it
    // cannot drive the caller's terminal.
    use std::os::fd::AsFd;
    let log: Option<crate::proxy::Log> = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::fs::File::from)
        .map(|f| -> crate::proxy::Log {
            Box::new(move |line: &str| {
                let line = crate::diag::visible(line);
                let _ = (&f).write_all(format!("sealc: {line}\n").as_bytes());
            })
        });
    let audit = crate::proxy::Audit::new(log, overrides);
    if let Some(p) = plan.proxy.as_mut() {
        p.audit = audit.clone();
    }
    let _ = out.flush();
    let code = match crate::exec::run(&plan, ways, deliveries, &ctx.trees, bridge.as_ref()) {
        Ok(result) => {
            use crate::exec::report::Outcome;
            let said = match &result.outcome {
                Some(Outcome::WallTimeout) => Some("the wall-clock limit".to_string()),
                Some(Outcome::CpuLimit) => Some("the CPU limit".into()),
                Some(Outcome::MemoryLimit) => Some("the memory limit".into()),
                Some(Outcome::OutputLimit) => Some("the output limit".into()),
                Some(Outcome::FileSizeLimit) => Some("the file size limit".into()),
                // Said from inside the sandbox (the status pipe): escaped.
                Some(Outcome::CouldNotStart { phase, message }) => {
                    let _ = writeln!(
                        err,
                        "error: {} failed: {}",
                        phase.as_str(),
                        crate::diag::visible(message)
                    );
                    None
                }
                _ => None,
            };
            if let Some(what) = said {
                let _ = writeln!(
                    err,
                    "sealc: the run was stopped at {what} (exit {})",
                    result.exit_code()
                );
            }
            let mut code = result.exit_code();
            if let (true, Some(home)) = (installs, &ctx.codex_home) {
                let after = codex_after(ir, home, codex_config, code, err);
                ctx.codex_config = Some(
                    if after == crate::exec::CODEX_CONFIG_DRIFT && code != after {
                        "drift"
                    } else {
                        "unchanged"
                    },
                );
                code = after;
            }
            ctx.result = Some(result);
            code
        }
        Err(e) => {
            if let Some(b) = &bridge {
                b.remove();
            }
            let _ = writeln!(err, "error: cannot start {}: {e}", quote(&plan.program));
            if plan.bubblewrap && std::fs::metadata(&plan.program).is_err() {
                let _ = writeln!(err, "help: {}", no_bwrap_help(&plan.program));
            }
            crate::exec::SANDBOX_FAILED
        }
    };
    audit.fill(&mut ctx.network);
    code
}
