//! The `bash` tool's sandbox: what a command may write, whether it may use the network, and its
//! resource limits, enforced by the kernel in the child before `exec`.
//!
//! - Writes: a Landlock ruleset (Linux 6.2 or newer, Landlock ABI 3 or newer) that handles every
//!   write access and allows them only beneath the workspace root, the tool's own temporary
//!   directory and the directories of [`SandboxPolicy::allow_write`], plus writing to
//!   `/dev/null`, `/dev/zero` and `/dev/full` (not `/dev/tty`: the command has no terminal).
//!   Making a character or block device is never allowed, not even beneath those directories
//!   (a node made there would reach the device). Reading and running programs stay
//!   free. Landlock follows the file, not the name: a link in the root that points outside
//!   leads to a file that stays read-only. From ABI 6 the command also cannot signal processes
//!   outside the sandbox.
//! - Network off ([`SandboxPolicy::network`]): a seccomp filter makes `socket()` fail with
//!   `EACCES` for every family but Unix sockets, and `io_uring_setup` too.
//! - Limits ([`SandboxPolicy::cpu_time_limit`] and the others): `setrlimit`, through the
//!   shell's `ulimit` builtin in a shell that then `exec`s the one running the command.
//!
//! Landlock and seccomp are applied to a thread made for one command, which then starts the
//! shell: the shell and everything it starts inherit them, the rest of the program does not.
//!
//! When the kernel cannot enforce what was asked, the command is refused with a
//! [`SandboxError`] that names what is missing; [`Sandbox::best_effort`] runs it with what the
//! kernel can do instead, and [`Sandbox::None`] without any confinement.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::process::ChildSetup;

/// How the `bash` tool confines its commands.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sandbox {
    /// No confinement at all: the command may do whatever the program may (pi's behaviour).
    None,
    /// Writes only inside the workspace (see [`SandboxPolicy`]).
    Workspace(SandboxPolicy),
}

impl Default for Sandbox {
    /// [`Sandbox::workspace`].
    fn default() -> Self {
        Self::workspace()
    }
}

impl Sandbox {
    /// Writes only inside the workspace root and the tool's own temporary directory; network
    /// on; no resource limits. Refuses to run a command when the kernel cannot enforce it.
    pub fn workspace() -> Self {
        Self::Workspace(SandboxPolicy::default())
    }

    /// As [`workspace`](Self::workspace), but runs the command with what the kernel can
    /// enforce when it cannot enforce everything (see [`Sandbox::probe`]).
    pub fn best_effort() -> Self {
        Self::Workspace(SandboxPolicy {
            best_effort: true,
            ..SandboxPolicy::default()
        })
    }

    /// Allows or forbids the network (no effect on [`Sandbox::None`]).
    pub fn network(self, allowed: bool) -> Self {
        self.map(|p| p.network(allowed))
    }

    /// Limits each process to `seconds` of CPU time (no effect on [`Sandbox::None`]).
    pub fn cpu_time_limit(self, seconds: u64) -> Self {
        self.map(|p| p.cpu_time_limit(seconds))
    }

    /// Limits the size of files a process writes (no effect on [`Sandbox::None`]).
    pub fn file_size_limit(self, bytes: u64) -> Self {
        self.map(|p| p.file_size_limit(bytes))
    }

    /// Limits the processes of the user (no effect on [`Sandbox::None`]).
    pub fn process_limit(self, processes: u64) -> Self {
        self.map(|p| p.process_limit(processes))
    }

    /// Also allows writing beneath `dir` (no effect on [`Sandbox::None`]).
    pub fn allow_write(self, dir: impl Into<PathBuf>) -> Self {
        self.map(|p| p.allow_write(dir))
    }

    fn map(self, f: impl FnOnce(SandboxPolicy) -> SandboxPolicy) -> Self {
        match self {
            Self::None => Self::None,
            Self::Workspace(policy) => Self::Workspace(f(policy)),
        }
    }

    /// What this kernel can enforce.
    pub fn probe() -> SandboxSupport {
        SandboxSupport::current()
    }
}

/// What [`Sandbox::Workspace`] enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxPolicy {
    /// Whether the command may open network sockets (`true` by default).
    pub network: bool,
    /// Run with what the kernel can enforce instead of refusing (`false` by default).
    pub best_effort: bool,
    /// CPU seconds per process (`RLIMIT_CPU`; the process gets `SIGXCPU`, exit code 152, and
    /// `SIGKILL` one second later if it goes on).
    pub cpu_time_limit: Option<u64>,
    /// Bytes per file written (`RLIMIT_FSIZE`; the writer gets `SIGXFSZ`, exit code 153).
    pub file_size_limit: Option<u64>,
    /// Processes of the user, all of them, not only the command's (`RLIMIT_NPROC`; not
    /// enforced for root).
    pub process_limit: Option<u64>,
    /// More directories where writing is allowed.
    pub writable: Vec<PathBuf>,
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        Self {
            network: true,
            best_effort: false,
            cpu_time_limit: None,
            file_size_limit: None,
            process_limit: None,
            writable: Vec::new(),
        }
    }
}

impl SandboxPolicy {
    /// Allows or forbids the network.
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// Runs with what the kernel can enforce instead of refusing.
    pub fn best_effort(mut self, best_effort: bool) -> Self {
        self.best_effort = best_effort;
        self
    }

    /// Limits each process to `seconds` of CPU time.
    pub fn cpu_time_limit(mut self, seconds: u64) -> Self {
        self.cpu_time_limit = Some(seconds);
        self
    }

    /// Limits the size of files a process writes.
    pub fn file_size_limit(mut self, bytes: u64) -> Self {
        self.file_size_limit = Some(bytes);
        self
    }

    /// Limits the processes of the user.
    pub fn process_limit(mut self, processes: u64) -> Self {
        self.process_limit = Some(processes);
        self
    }

    /// Also allows writing beneath `dir`.
    pub fn allow_write(mut self, dir: impl Into<PathBuf>) -> Self {
        self.writable.push(dir.into());
        self
    }
}

/// What the running kernel can enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxSupport {
    /// The Landlock ABI version (0: no Landlock).
    pub landlock_abi: u32,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
}

/// The Landlock ABI [`Sandbox::Workspace`] needs: 3 controls truncating files (Linux 6.2).
pub const MIN_LANDLOCK_ABI: u32 = 3;

/// What to say about choosing another sandbox.
pub(crate) const CHOOSE: &str =
    "To run commands here anyway, give the tool Sandbox::None (no confinement) \
                      or Sandbox::best_effort() (what the kernel can enforce) with \
                      BashTool::with_sandbox.";

/// The sandbox cannot be set up as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// Landlock is missing or too old to confine writes.
    #[error(
        "the sandbox (Sandbox::Workspace) confines writes with Landlock ABI {MIN_LANDLOCK_ABI} \
         or newer (Linux 6.2), and {found}. {CHOOSE}"
    )]
    Landlock {
        /// What this kernel has.
        found: String,
    },
    /// Network off was asked and seccomp filters are unavailable.
    #[error(
        "the sandbox turns the network off with a seccomp filter, and this kernel has no \
         seccomp filters (or they are forbidden here). Allow the network with \
         Sandbox::workspace().network(true), or: {CHOOSE}"
    )]
    Seccomp,
    /// Not Linux.
    #[error("the sandbox (Sandbox::Workspace) needs Linux (Landlock and seccomp). {CHOOSE}")]
    Unsupported,
    /// A path or a rule could not be set up.
    #[error("could not set up the sandbox: {0}")]
    Setup(String),
}

/// What one command gets: environment additions and the work done in the child.
pub(crate) struct Prepared {
    pub env: Vec<(OsString, OsString)>,
    pub setup: Option<Box<dyn ChildSetup>>,
    pub prelude: Option<String>,
}

/// What will be enforced, given what the kernel can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The Landlock ABI to use, if any.
    pub landlock: Option<u32>,
    /// Whether to install the network filter.
    pub seccomp: bool,
}

/// Decides what to enforce, or refuses.
pub(crate) fn plan(policy: &SandboxPolicy, support: SandboxSupport) -> Result<Plan, SandboxError> {
    let landlock = if support.landlock_abi >= MIN_LANDLOCK_ABI {
        Some(support.landlock_abi)
    } else if policy.best_effort {
        (support.landlock_abi > 0).then_some(support.landlock_abi)
    } else {
        let found = if support.landlock_abi == 0 {
            "this kernel has no Landlock (it is not built in, not enabled at boot with \
             lsm=…,landlock, or a container forbids its system calls)"
                .to_string()
        } else {
            format!("this kernel has only ABI {}", support.landlock_abi)
        };
        return Err(SandboxError::Landlock { found });
    };
    let seccomp = !policy.network && support.seccomp;
    if !policy.network && !support.seccomp && !policy.best_effort {
        return Err(SandboxError::Seccomp);
    }
    Ok(Plan { landlock, seccomp })
}

impl SandboxSupport {
    #[cfg(target_os = "linux")]
    fn current() -> Self {
        Self {
            landlock_abi: linux::landlock_abi(),
            seccomp: linux::seccomp_available(),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn current() -> Self {
        Self {
            landlock_abi: 0,
            seccomp: false,
        }
    }
}

/// Sets up `policy` for one command in `root`, with `tmp` as the tool's own directory.
pub(crate) fn prepare(
    policy: &SandboxPolicy,
    root: &Path,
    tmp: &Path,
) -> Result<Prepared, SandboxError> {
    let env = ["TMPDIR", "TMP", "TEMP"]
        .into_iter()
        .map(|k| (OsString::from(k), tmp.as_os_str().to_os_string()))
        .collect();
    #[cfg(target_os = "linux")]
    {
        let plan = plan(policy, SandboxSupport::current())?;
        let mut writable = vec![root.to_path_buf(), tmp.to_path_buf()];
        writable.extend(policy.writable.iter().cloned());
        let setup = linux::Setup::new(policy, plan, &writable)?;
        Ok(Prepared {
            env,
            setup: Some(Box::new(setup)),
            prelude: linux::limits_prelude(policy),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = root;
        if policy.best_effort {
            return Ok(Prepared {
                env,
                setup: None,
                prelude: None,
            });
        }
        Err(SandboxError::Unsupported)
    }
}

#[cfg(target_os = "linux")]
mod linux;

#[cfg(test)]
mod tests {
    use super::*;

    fn support(landlock_abi: u32, seccomp: bool) -> SandboxSupport {
        SandboxSupport {
            landlock_abi,
            seccomp,
        }
    }

    #[test]
    fn without_landlock_the_workspace_sandbox_refuses_and_says_what_to_do() {
        let err = plan(&SandboxPolicy::default(), support(0, true)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the sandbox (Sandbox::Workspace) confines writes with Landlock ABI 3 or newer \
             (Linux 6.2), and this kernel has no Landlock (it is not built in, not enabled at \
             boot with lsm=…,landlock, or a container forbids its system calls). To run \
             commands here anyway, give the tool Sandbox::None (no confinement) or \
             Sandbox::best_effort() (what the kernel can enforce) with BashTool::with_sandbox."
        );
        let old = plan(&SandboxPolicy::default(), support(2, true)).unwrap_err();
        assert!(old.to_string().contains("and this kernel has only ABI 2."));
    }

    #[test]
    fn network_off_without_seccomp_refuses() {
        let policy = SandboxPolicy::default().network(false);
        assert_eq!(plan(&policy, support(7, false)), Err(SandboxError::Seccomp));
        assert!(SandboxError::Seccomp.to_string().contains("Sandbox::None"));
    }

    #[test]
    fn best_effort_runs_with_what_there_is() {
        let policy = SandboxPolicy::default().network(false).best_effort(true);
        assert_eq!(
            plan(&policy, support(0, false)),
            Ok(Plan {
                landlock: None,
                seccomp: false
            })
        );
        assert_eq!(
            plan(&policy, support(2, true)),
            Ok(Plan {
                landlock: Some(2),
                seccomp: true
            })
        );
        assert_eq!(
            plan(&SandboxPolicy::default(), support(7, true)),
            Ok(Plan {
                landlock: Some(7),
                seccomp: false
            })
        );
    }

    #[test]
    fn builders_reach_the_policy() {
        let sandbox = Sandbox::workspace()
            .network(false)
            .cpu_time_limit(3)
            .file_size_limit(10)
            .process_limit(50)
            .allow_write("/x");
        let Sandbox::Workspace(p) = sandbox else {
            panic!("not a workspace sandbox");
        };
        assert_eq!(
            (
                p.network,
                p.cpu_time_limit,
                p.file_size_limit,
                p.process_limit
            ),
            (false, Some(3), Some(10), Some(50))
        );
        assert_eq!(p.writable, [PathBuf::from("/x")]);
        assert_eq!(Sandbox::None.network(false), Sandbox::None);
        assert!(matches!(Sandbox::best_effort(), Sandbox::Workspace(p) if p.best_effort));
    }
}

#[cfg(test)]
mod advice_tests {
    use super::*;

    #[test]
    fn every_refusal_ends_with_the_advice_an_application_replaces() {
        let errors = [
            SandboxError::Landlock {
                found: "no Landlock".into(),
            },
            SandboxError::Seccomp,
            SandboxError::Unsupported,
        ];
        for e in errors {
            assert!(e.to_string().ends_with(CHOOSE), "{e}");
        }
    }
}
