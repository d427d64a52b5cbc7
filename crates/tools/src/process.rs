//! Running one shell command: its own session and process group (started through `setsid`,
//! so it has no controlling terminal: pi's `detached: true`), stdout and stderr in one pipe, no
//! other descriptor of the program, a deadline, abort, and killing the whole tree of processes
//! it started.
//!
//! Every process of a run is marked with an environment variable ([`RUN_MARKER`]) holding a
//! random token. Killing a run first stops (`SIGSTOP`) its process group, then looks through
//! `/proc` (Linux) for any process in that group, below a stopped one (parent links stay
//! intact while nothing can exit), or carrying the token, and stops those too until none is
//! new; then it kills them all. So a descendant that left the group or the session (`setsid`,
//! with or without its environment) dies too. Only a process whose parent exited before the
//! kill and that cleared its environment escapes (a double fork with `env -i`).

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{kill_process_group, Pid, Signal};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::bash_output::random_u64;

/// The environment variable that marks every process of a run.
pub(crate) const RUN_MARKER: &str = "OXPI_BASH_RUN";

/// How long reading goes on after a kill, for the output of processes that are dying.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// Confinement applied to a fresh thread that then starts the child: the child inherits the
/// thread's Landlock domain and seccomp filter, the rest of the program keeps neither.
pub(crate) trait ChildSetup: Send {
    /// Restricts the calling thread.
    fn restrict_thread(self: Box<Self>) -> io::Result<()>;
}

/// One command to run.
pub(crate) struct RunSpec {
    pub shell: PathBuf,
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Option<Duration>,
    /// How long the pipe must stay quiet after the shell exited (pi: 100 ms).
    pub exit_grace: Duration,
    pub setup: Option<Box<dyn ChildSetup>>,
    /// Shell commands run before the command, in a shell that then `exec`s the real one
    /// (resource limits with `ulimit`).
    pub prelude: Option<String>,
    /// Where the running tree is registered, for a program that ends on a signal.
    pub tracker: Option<crate::running::RunningCommands>,
}

/// Receives the output as it comes, and asks to be woken for throttled updates.
pub(crate) trait Sink {
    /// A chunk of output.
    fn data(&mut self, bytes: &[u8]);
    /// When [`wake`](Self::wake) should run next, if at all.
    fn wake_at(&self) -> Option<Instant>;
    /// The time asked for by [`wake_at`](Self::wake_at) has come.
    fn wake(&mut self);
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Ended {
    /// The shell exited (and its output ended or stayed quiet); the code, 128 + the signal
    /// for a shell killed by one.
    Exited(i32),
    /// The deadline passed; if the shell had exited before, its code and when (seconds).
    TimedOut(Option<(i32, Duration)>),
    /// The cancellation token fired.
    Aborted,
}

/// The shell could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SpawnError {
    #[error("could not create a pipe for the output: {0}")]
    Pipe(io::Error),
    #[error("could not start {shell}: {source}")]
    Spawn { shell: String, source: io::Error },
    #[error("could not wait for the shell: {0}")]
    Wait(io::Error),
    #[error("could not start a thread for the sandbox: {0}")]
    Thread(io::Error),
    #[error("the sandbox could not be applied to the command ({0}). {choose}", choose = crate::sandbox::CHOOSE)]
    Sandbox(io::Error),
}

/// Runs `spec`, feeding its output to `sink`, until it ends. Dropping the future kills the tree.
pub(crate) async fn run(
    mut spec: RunSpec,
    cancel: &CancellationToken,
    sink: &mut (dyn Sink + Send),
) -> Result<Ended, SpawnError> {
    if cancel.is_cancelled() {
        return Ok(Ended::Aborted);
    }
    let token = format!("{:016x}", random_u64());
    let (reader, mut child) = spawn(&mut spec, &token).await?;
    let Some(pid) = child.id() else {
        return Err(SpawnError::Wait(io::Error::other(
            "the shell has no process id",
        )));
    };
    let mut tree = Tree {
        pid,
        token,
        armed: true,
    };
    // Dropped before `tree`: a tree no longer registered is still killed by its own drop.
    let _tracked = spec.tracker.as_ref().map(|r| r.track(pid, &tree.token));
    let mut reader = pipe::Receiver::from_owned_fd(reader).map_err(SpawnError::Pipe)?;
    let started = Instant::now();
    let deadline = spec.timeout.map(|t| started + t);
    let mut exited: Option<(i32, Duration)> = None;
    let mut eof = false;
    let mut quiet_until: Option<Instant> = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if exited.is_some() && eof {
            break;
        }
        let wake = sink.wake_at();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                tree.kill().await;
                drain(&mut reader, &mut buf, sink, &mut child).await;
                return Ok(Ended::Aborted);
            }
            _ = sleep_until(deadline.unwrap_or(started)), if deadline.is_some() => {
                tree.kill().await;
                drain(&mut reader, &mut buf, sink, &mut child).await;
                return Ok(Ended::TimedOut(exited));
            }
            // Before the read: output that never pauses must not hide the shell's exit.
            status = child.wait(), if exited.is_none() => {
                let status = status.map_err(SpawnError::Wait)?;
                exited = Some((exit_code(status), started.elapsed()));
                quiet_until = Some(Instant::now() + spec.exit_grace);
            }
            read = reader.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    sink.data(&buf[..n]);
                    if exited.is_some() {
                        quiet_until = Some(Instant::now() + spec.exit_grace);
                    }
                }
            },
            _ = sleep_until(quiet_until.unwrap_or(started)), if quiet_until.is_some() && !eof => break,
            _ = sleep_until(wake.unwrap_or(started)), if wake.is_some() => sink.wake(),
        }
    }
    // The shell exited: processes it left running (a daemon) go on, as in pi.
    tree.armed = false;
    Ok(Ended::Exited(exited.map_or(1, |(code, _)| code)))
}

/// Starts the shell in its own process group, stdout and stderr both writing to one pipe; with
/// a sandbox, from a fresh thread restricted first.
async fn spawn(
    spec: &mut RunSpec,
    token: &str,
) -> Result<(OwnedFd, tokio::process::Child), SpawnError> {
    // The shell gets stdin, stdout and stderr and nothing else: a descriptor the program holds
    // without close-on-exec (a wrapper's `7>>file`, a library's log) would be a way around the
    // sandbox, which checks `open`, not descriptors already open. Marking them in the program
    // (not closing them) leaves them working here; the standard library and tokio open theirs
    // close-on-exec, so nothing new lacks the mark between here and the spawn.
    close_fds::set_fds_cloexec_threadsafe(3, &[]);
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| SpawnError::Pipe(e.into()))?;
    let writer2 = writer.try_clone().map_err(SpawnError::Pipe)?;
    let mut command = tokio::process::Command::new(&spec.shell);
    match &spec.prelude {
        Some(prelude) => command
            .arg("-c")
            .arg(format!("{prelude} || exit 126\nexec \"$0\" -c \"$1\""))
            .arg(&spec.shell)
            .arg(&spec.command),
        None => command.arg("-c").arg(&spec.command),
    };
    // In a session of its own (no controlling terminal): through `setsid`, which execs the
    // shell in the same process (the child is not a group leader), so its pid is the session's
    // and the group's. Without the program, a process group of its own.
    if let Some(setsid) = setsid_program() {
        let shell_args: Vec<OsString> = command
            .as_std()
            .get_args()
            .map(|a| a.to_os_string())
            .collect();
        let mut wrapped = tokio::process::Command::new(setsid);
        wrapped.arg(&spec.shell).args(shell_args);
        command = wrapped;
    } else {
        command.process_group(0);
    }
    command
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env(RUN_MARKER, token)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .kill_on_drop(false);
    let shell = spec.shell.display().to_string();
    let spawn_error = move |source| SpawnError::Spawn { shell, source };
    // The command holds the pipe's write ends until it is dropped: it is dropped before
    // anything is read.
    let child = match spec.setup.take() {
        None => command.spawn().map_err(spawn_error)?,
        Some(setup) => {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let runtime = tokio::runtime::Handle::current();
            let token = token.to_string();
            std::thread::Builder::new()
                .name("oxpi-bash-sandbox".into())
                .spawn(move || {
                    let _runtime = runtime.enter();
                    let spawned = match setup.restrict_thread() {
                        Ok(()) => command.spawn().map_err(Spawned::Spawn),
                        Err(e) => Err(Spawned::Sandbox(e)),
                    };
                    drop(command);
                    if let Err(Ok(child)) = tx.send(spawned) {
                        // Nobody waits for it any more (the call was dropped).
                        if let Some(pid) = child.id() {
                            kill_tree(pid, &token);
                        }
                    }
                })
                .map_err(SpawnError::Thread)?;
            match rx
                .await
                .map_err(|_| SpawnError::Thread(io::Error::other("the thread ended early")))?
            {
                Ok(child) => child,
                Err(Spawned::Spawn(e)) => return Err(spawn_error(e)),
                Err(Spawned::Sandbox(e)) => return Err(SpawnError::Sandbox(e)),
            }
        }
    };
    Ok((reader, child))
}

/// Why the sandbox thread did not start the child.
enum Spawned {
    Spawn(io::Error),
    Sandbox(io::Error),
}

/// The `setsid` program (util-linux), if the system has one.
fn setsid_program() -> Option<&'static std::path::Path> {
    static FOUND: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            ["/usr/bin/setsid", "/bin/setsid", "/usr/local/bin/setsid"]
                .into_iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .as_deref()
}

/// Reads what dying processes still write, for at most [`DRAIN_AFTER_KILL`], and reaps the shell.
async fn drain(
    reader: &mut pipe::Receiver,
    buf: &mut [u8],
    sink: &mut (dyn Sink + Send),
    child: &mut tokio::process::Child,
) {
    let until = Instant::now() + DRAIN_AFTER_KILL;
    loop {
        tokio::select! {
            _ = sleep_until(until) => break,
            read = reader.read(buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => sink.data(&buf[..n]),
            },
        }
    }
    let _ = tokio::time::timeout_at(until, child.wait()).await;
}

/// The exit code of the shell, or 128 + the signal that killed it (the shell's convention).
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// The processes of one run; killed when dropped while armed.
struct Tree {
    pid: u32,
    token: String,
    armed: bool,
}

impl Tree {
    async fn kill(&mut self) {
        self.armed = false;
        let (pid, token) = (self.pid, self.token.clone());
        // Scanning /proc and waiting between rounds is blocking work.
        let _ = tokio::task::spawn_blocking(move || kill_tree(pid, &token)).await;
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if self.armed {
            kill_tree(self.pid, &self.token);
        }
    }
}

/// Kills the process group `pid` and every process found below it or marked with `token`.
pub(crate) fn kill_tree(pid: u32, token: &str) {
    let Some(group) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    #[cfg(target_os = "linux")]
    {
        // Frozen first, so no process of the tree exits (and has its children re-parented)
        // or forks while the tree is looked for.
        let _ = kill_process_group(group, Signal::STOP);
        let stopped = linux::stop_tree(group, token);
        let _ = kill_process_group(group, Signal::KILL);
        linux::kill_all(&stopped);
        linux::kill_remaining(group, token);
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = token;
        let _ = kill_process_group(group, Signal::KILL);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{HashMap, HashSet};
    use std::time::Duration;

    use rustix::process::{kill_process, Pid, Signal};

    use super::RUN_MARKER;

    /// Rounds of looking for survivors (a process may fork while it is being killed).
    const ROUNDS: usize = 20;

    /// A process as `/proc/<pid>/stat` describes it.
    struct Stat {
        ppid: i32,
        pgrp: i32,
        zombie: bool,
    }

    /// Stops every process of the tree (in the group, below a stopped one, or marked), round
    /// after round until a round finds none that is new; returns them.
    pub(super) fn stop_tree(group: Pid, token: &str) -> HashSet<i32> {
        let group = group.as_raw_nonzero().get();
        let marker = format!("{RUN_MARKER}={token}").into_bytes();
        let own = std::process::id() as i32;
        let mut stopped: HashSet<i32> = HashSet::from([group]);
        for _ in 0..ROUNDS {
            let table = processes();
            let found: Vec<i32> = table
                .iter()
                .filter(|(pid, stat)| **pid != own && !stat.zombie && !stopped.contains(*pid))
                .filter(|(pid, stat)| {
                    stat.pgrp == group || below(**pid, &table, &stopped) || marked(**pid, &marker)
                })
                .map(|(pid, _)| *pid)
                .collect();
            if found.is_empty() {
                break;
            }
            for pid in found {
                if let Some(target) = Pid::from_raw(pid) {
                    let _ = kill_process(target, Signal::STOP);
                }
                stopped.insert(pid);
            }
            // Stops are delivered asynchronously; a fork in between is found next round.
            std::thread::sleep(Duration::from_millis(5));
        }
        stopped
    }

    /// `SIGKILL` to each of `pids` (a stopped process dies of it too).
    pub(super) fn kill_all(pids: &HashSet<i32>) {
        for pid in pids {
            if let Some(target) = Pid::from_raw(*pid) {
                let _ = kill_process(target, Signal::KILL);
            }
        }
    }

    pub(super) fn kill_remaining(group: Pid, token: &str) {
        let group = group.as_raw_nonzero().get();
        let marker = format!("{RUN_MARKER}={token}").into_bytes();
        let own = std::process::id() as i32;
        let mut killed: HashSet<i32> = HashSet::from([group]);
        for _ in 0..ROUNDS {
            let table = processes();
            let mut found = Vec::new();
            for (&pid, stat) in &table {
                if pid == own || stat.zombie {
                    continue;
                }
                if stat.pgrp == group || below(pid, &table, &killed) || marked(pid, &marker) {
                    found.push(pid);
                }
            }
            if found.is_empty() {
                return;
            }
            for pid in found {
                if let Some(target) = Pid::from_raw(pid) {
                    let _ = kill_process(target, Signal::KILL);
                }
                killed.insert(pid);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether one of `pid`'s ancestors was killed (the chain is followed at most 64 steps).
    fn below(pid: i32, table: &HashMap<i32, Stat>, killed: &HashSet<i32>) -> bool {
        let mut current = pid;
        for _ in 0..64 {
            let Some(stat) = table.get(&current) else {
                return false;
            };
            if killed.contains(&stat.ppid) {
                return true;
            }
            if stat.ppid <= 1 {
                return false;
            }
            current = stat.ppid;
        }
        false
    }

    fn marked(pid: i32, marker: &[u8]) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        environ.split(|b| *b == 0).any(|entry| entry == marker)
    }

    fn processes() -> HashMap<i32, Stat> {
        let mut table = HashMap::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return table;
        };
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(parsed) = parse_stat(&stat) {
                table.insert(pid, parsed);
            }
        }
        table
    }

    /// `pid (comm) state ppid pgrp ...`; `comm` may hold spaces and parentheses.
    fn parse_stat(stat: &str) -> Option<Stat> {
        let rest = &stat[stat.rfind(')')? + 1..];
        let mut fields = rest.split_whitespace();
        let state = fields.next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        Some(Stat {
            ppid,
            pgrp,
            zombie: state == "Z" || state == "X",
        })
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn stat_lines_with_odd_names_parse() {
            let stat = super::parse_stat("42 (a) b) (c) S 7 42 42 0 -1").unwrap();
            assert_eq!((stat.ppid, stat.pgrp, stat.zombie), (7, 42, false));
            assert!(super::parse_stat("42 (x) Z 1 42").unwrap().zombie);
            assert!(super::parse_stat("garbage").is_none());
        }
    }
}
