//! Stage 4, **confine and wait**: the proxy bridge made, the sandbox built
//! and the command run to its end (by [`crate::exec::run`]), what stopped
//! it told, and the Codex config checked after it.

use super::*;

use self::stages::Checked;

/// From the hand-over on: build the plan's bridge, run, check the Codex
/// config after.
#[allow(clippy::too_many_arguments)]
pub(super) fn confine_and_wait(
    ir: &crate::ir::Ir,
    plan: crate::exec::Plan,
    rt: crate::exec::Runtime<'_>,
    checked: &Checked,
    overrides: std::collections::BTreeMap<String, std::net::IpAddr>,
    (installs, codex_config): (bool, &[u8]),
    notes: &mut dyn Notes,
    ctx: &mut Ctx,
) -> Result<i32, Refusal> {
    let needs_bridge = crate::exec::Mechanism::of(ir).bridges(ir);
    let mut bridge = None;
    let mut plan = if needs_bridge {
        let b = crate::exec::private_dir().map_err(|e| {
            Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!("cannot make the proxy bridge's directory: {e}"),
            )
        })?;
        let b = bridge.insert(b);
        let rt = crate::exec::Runtime {
            bridge_dir: b.dir.path(),
            ..rt
        };
        match crate::exec::plan(ir, &checked.command, &|n| std::env::var_os(n), &rt) {
            Ok(plan) => plan,
            Err(d) => {
                // Nothing started: the bridge's directory goes too (a
                // later run's sweep would take it only once this pid is gone).
                b.remove();
                return Err(Refusal::new(
                    crate::exec::SANDBOX_FAILED,
                    format!(
                        "the plan with the proxy bridge cannot be made: {}",
                        d.message
                    ),
                ));
            }
        }
    } else {
        plan
    };
    let audit = crate::proxy::Audit::new(notes.proxy_log(), overrides);
    if let Some(p) = plan.proxy.as_mut() {
        p.audit = audit.clone();
    }
    let (ways, deliveries) = (checked.ways, checked.deliveries);
    let kept = [0, 1].map(|i| checked.kept[i].as_ref().and_then(|f| f.try_clone().ok()));
    let streams = crate::exec::stdio::Streams {
        ways,
        deliveries,
        kept,
    };
    // The outputs as they are once the write roots are handed over (a
    // chown moves their change times), just before the command starts.
    let outputs = super::outputs::before(ir);
    let code = match crate::exec::run(&plan, streams, &ctx.trees, bridge.as_ref()) {
        Ok(result) => {
            // Hashed now, before the write roots are handed back.
            ctx.outputs = super::outputs::after(&outputs);
            // The sandbox started: what the run made in the write roots
            // made for it is its output, and they stay.
            ctx.made_roots = Default::default();
            use crate::exec::report::Outcome;
            let said = match &result.outcome {
                Some(Outcome::WallTimeout) => Some("the wall-clock limit".to_string()),
                Some(Outcome::CpuLimit) => Some("the CPU limit".into()),
                Some(Outcome::MemoryLimit) => Some("the memory limit".into()),
                Some(Outcome::OutputLimit) => Some("the output limit".into()),
                Some(Outcome::FileSizeLimit) => Some("the file size limit".into()),
                // Said from inside the sandbox (the status pipe): escaped.
                Some(Outcome::CouldNotStart { phase, message }) => {
                    // bubblewrap could not build the sandbox: why, as far
                    // as its steps tried again one by one can tell.
                    let landlock = plan.mechanism == crate::exec::Mechanism::Landlock;
                    let help = if *phase == crate::exec::report::Phase::SandboxStart && landlock {
                        vec!["the Landlock mode's init or `__confine` said why above; `sealc doctor` says what this host has".to_string()]
                    } else if *phase == crate::exec::report::Phase::SandboxStart {
                        let probe = crate::exec::probe::probe(plan.user.map(|i| (i.uid, i.gid)));
                        super::help::sandbox_start_help(&probe)
                    } else if *phase == crate::exec::report::Phase::CommandNotFound {
                        let program = checked.command.first().map(OsString::as_os_str);
                        program.map_or_else(Vec::new, |p| super::help::not_found_help(ir, p))
                    } else {
                        Vec::new()
                    };
                    notes.note(Note::Error {
                        message: format!(
                            "{} failed: {}",
                            phase.as_str(),
                            crate::diag::visible(message)
                        ),
                        help,
                    });
                    None
                }
                _ => None,
            };
            if let Some(what) = said {
                notes.note(Note::Said(format!(
                    "the run was stopped at {what} (exit {})",
                    result.exit_code()
                )));
            }
            let mut code = result.exit_code();
            if let (true, Some(home)) = (installs, &ctx.codex_home) {
                let (after, changes) =
                    super::codex::codex_after(ir, home, codex_config, code, notes);
                ctx.codex_config = Some(if changes.is_empty() {
                    "unchanged"
                } else {
                    "drift"
                });
                ctx.codex_config_changes = changes;
                code = after;
            }
            ctx.result = Some(result);
            Ok(code)
        }
        Err(e) => {
            if let Some(b) = &bridge {
                b.remove();
            }
            let mut r = Refusal::new(
                crate::exec::SANDBOX_FAILED,
                format!("cannot start {}: {e}", quote(&plan.program)),
            );
            if plan.mechanism == crate::exec::Mechanism::Bubblewrap {
                if std::fs::metadata(&plan.program).is_err() {
                    r = r.help(super::help::no_bwrap_help(&plan.program));
                } else {
                    // Refused on the way in (as root: the idmapped mounts
                    // made for it): why, as far as the probe can tell.
                    let probe = crate::exec::probe::probe(plan.user.map(|i| (i.uid, i.gid)));
                    for h in super::help::sandbox_start_help(&probe) {
                        r = r.help(h);
                    }
                }
            }
            Err(r)
        }
    };
    audit.fill(&mut ctx.network);
    code
}
