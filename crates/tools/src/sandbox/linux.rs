//! Linux: Landlock for writes, seccomp for the network, `setrlimit` for limits.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{Plan, SandboxError, SandboxPolicy};
use crate::process::ChildSetup;

/// Devices every command may write to (`> /dev/null` is everywhere). Not `/dev/tty`: the
/// command runs in a session of its own, without the agent's terminal (no typing into it with
/// `TIOCSTI`, no prompts written into a UI).
const DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// The newest Landlock ABI whose write rights this sandbox was tested with: a newer kernel (or
/// a newer `landlock` crate) adds rights (ABI 9's Unix-socket connects) only when this is
/// raised after testing them, so what a command may do does not change with the kernel.
const TESTED_ABI: u32 = 7;

/// The Landlock ABI of the running kernel (0 when it has none), found once by restricting a
/// thread made for that and ended at once.
pub(super) fn landlock_abi() -> u32 {
    static ABI_FOUND: OnceLock<u32> = OnceLock::new();
    *ABI_FOUND.get_or_init(|| {
        let probe = std::thread::spawn(|| {
            let status = Ruleset::default()
                .handle_access(AccessFs::Execute)
                .ok()?
                .create()
                .ok()?
                .restrict_self()
                .ok()?;
            match status.landlock {
                LandlockStatus::Available {
                    effective_abi,
                    kernel_abi,
                } => Some(
                    kernel_abi
                        .and_then(|v| u32::try_from(v).ok())
                        .unwrap_or(effective_abi as u32),
                ),
                _ => None,
            }
        });
        probe.join().ok().flatten().unwrap_or(0)
    })
}

/// Whether seccomp filters that return an errno can be installed.
pub(super) fn seccomp_available() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !status.lines().any(|l| l.starts_with("Seccomp:")) {
        return false;
    }
    match std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail") {
        Ok(actions) => actions.split_whitespace().any(|a| a == "errno"),
        Err(_) => true,
    }
}

/// The `ulimit` commands for `policy`'s limits (bash's units: `-f` counts KiB).
pub(super) fn limits_prelude(policy: &SandboxPolicy) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(seconds) = policy.cpu_time_limit {
        // SIGXCPU at the soft limit, SIGKILL a second later for a process that ignores it.
        parts.push(format!(
            "ulimit -S -t {seconds} && ulimit -H -t {}",
            seconds.saturating_add(1)
        ));
    }
    if let Some(bytes) = policy.file_size_limit {
        parts.push(format!("ulimit -f {}", bytes.div_ceil(1024)));
    }
    if let Some(processes) = policy.process_limit {
        parts.push(format!("ulimit -u {processes}"));
    }
    (!parts.is_empty()).then(|| parts.join(" && "))
}

/// What the spawning thread applies to itself, prepared beforehand.
pub(crate) struct Setup {
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
}

impl Setup {
    pub(crate) fn new(
        policy: &SandboxPolicy,
        plan: Plan,
        writable: &[PathBuf],
    ) -> Result<Self, SandboxError> {
        let ruleset = match plan.landlock {
            Some(abi) => Some(ruleset(abi, !policy.network, writable)?),
            None => None,
        };
        let filter = if plan.seccomp {
            Some(network_filter()?)
        } else {
            None
        };
        Ok(Self { ruleset, filter })
    }
}

fn setup_error(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Setup(format!("{what}: {e}"))
}

/// A Landlock ruleset allowing writes beneath `writable` (every write right but making
/// character and block devices) and to [`DEVICES`] only.
fn ruleset(
    abi: u32,
    scope_unix: bool,
    writable: &[PathBuf],
) -> Result<RulesetCreated, SandboxError> {
    let version = ABI::from(i32::try_from(abi.min(TESTED_ABI)).unwrap_or(0));
    let write = AccessFs::from_write(version);
    // Handled (so denied everywhere) but never granted: a device node made inside the
    // workspace would reach the device itself (a disk, a loop device, `/dev/kmsg`).
    let granted = write & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write)
        .map_err(|e| setup_error("Landlock ruleset", e))?;
    if abi >= 6 {
        ruleset = ruleset
            .scope(Scope::Signal)
            .map_err(|e| setup_error("Landlock signal scope", e))?;
        if scope_unix {
            ruleset = ruleset
                .scope(Scope::AbstractUnixSocket)
                .map_err(|e| setup_error("Landlock socket scope", e))?;
        }
    }
    let mut created = ruleset
        .create()
        .map_err(|e| setup_error("Landlock ruleset", e))?;
    for dir in writable {
        let fd = PathFd::new(dir).map_err(|e| setup_error(&format!("{}", dir.display()), e))?;
        created = created
            .add_rule(PathBeneath::new(fd, granted))
            .map_err(|e| setup_error(&format!("Landlock rule for {}", dir.display()), e))?;
    }
    let file_write = write & AccessFs::from_file(version);
    for device in DEVICES {
        // A device the system lacks (no /dev/tty in some containers) is simply not allowed.
        let Ok(fd) = PathFd::new(Path::new(device)) else {
            continue;
        };
        created = created
            .add_rule(PathBeneath::new(fd, file_write))
            .map_err(|e| setup_error(&format!("Landlock rule for {device}"), e))?;
    }
    Ok(created)
}

/// A seccomp filter: `socket()` of any family but `AF_UNIX`, and `io_uring_setup`, fail with
/// `EACCES`.
fn network_filter() -> Result<BpfProgram, SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| setup_error("seccomp for this architecture", e))?;
    let not_unix = || {
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| setup_error("seccomp rule", e))
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![not_unix()?]);
    rules.insert(libc::SYS_io_uring_setup, vec![]);
    #[cfg(target_arch = "x86_64")]
    {
        // The x32 ABI's numbers pass the same architecture check.
        const X32: i64 = 0x4000_0000;
        rules.insert(libc::SYS_socket | X32, vec![not_unix()?]);
        rules.insert(libc::SYS_io_uring_setup | X32, vec![]);
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| setup_error("seccomp filter", e))?;
    BpfProgram::try_from(filter).map_err(|e| setup_error("seccomp filter", e))
}

impl ChildSetup for Setup {
    fn restrict_thread(self: Box<Self>) -> io::Result<()> {
        let Setup { ruleset, filter } = *self;
        if let Some(ruleset) = ruleset {
            let status = ruleset.restrict_self().map_err(io::Error::other)?;
            if status.ruleset == RulesetStatus::NotEnforced {
                return Err(io::Error::other("Landlock did not enforce the ruleset"));
            }
        }
        if let Some(filter) = filter {
            seccompiler::apply_filter(&filter).map_err(io::Error::other)?;
        }
        Ok(())
    }
}
