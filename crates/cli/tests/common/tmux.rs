//! `oxpi`'s interactive mode in a real terminal: a tmux server of its own runs it, tests type
//! with `send-keys` and read the screen with `capture-pane`, polling up to a deadline.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::Dirs;

/// How long a screen may take to show what a test waits for (the machine is shared).
pub const SCREEN_DEADLINE: Duration = Duration::from_secs(20);

pub fn tmux_missing() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!("SKIPPED: tmux is not installed (apt-get install -y tmux)");
    }
    !found
}

/// One tmux server of its own (`-L`), one window running `oxpi` in a shell that records the
/// terminal's `stty` state before and after.
pub struct Tmux {
    socket: String,
    dir: PathBuf,
}

impl Tmux {
    pub fn start(d: &Dirs, args: &[String], width: u16, height: u16) -> Self {
        Self::start_after(d, "", args, width, height)
    }

    /// [`start`](Self::start) with `setup` (shell commands, e.g. a `ulimit`) run just before
    /// `oxpi` in the same shell.
    pub fn start_after(d: &Dirs, setup: &str, args: &[String], width: u16, height: u16) -> Self {
        // The temporary directory's name is unique: so is the tmux server.
        let root_name = d
            .home
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let socket = format!("oxpi-test{}", root_name.replace('.', "-"));
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let script = format!(
            "cd '{project}' && stty -g > '{root}/stty-before' && \
             {setup} env -u PI_CODING_AGENT_DIR -u OPENAI_API_KEY HOME='{home}' '{bin}' {args}; \
             echo \"oxpi exited: $?\"; stty -g > '{root}/stty-after'; sleep 600",
            project = d.project.display(),
            root = d.home.parent().unwrap().display(),
            home = d.home.display(),
            bin = env!("CARGO_BIN_EXE_oxpi"),
            setup = setup,
            args = quoted.join(" "),
        );
        let tmux = Self {
            socket,
            dir: d.home.parent().unwrap().to_path_buf(),
        };
        let status = tmux
            .cmd()
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "t"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .args(["sh", "-c", &script])
            .status()
            .unwrap();
        assert!(status.success(), "tmux started");
        let _ = tmux.cmd().args(["set", "-g", "escape-time", "0"]).status();
        tmux
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        assert!(self
            .cmd()
            .args(["send-keys", "-t", "t", "-l", text])
            .status()
            .unwrap()
            .success());
    }

    /// Types `text` and presses `Enter`.
    pub fn submit(&self, text: &str) {
        self.type_text(text);
        self.keys(&["Enter"]);
    }

    /// Sends tmux key names (`Enter`, `Escape`, `C-c`, `M-Enter`).
    pub fn keys(&self, keys: &[&str]) {
        assert!(self
            .cmd()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .status()
            .unwrap()
            .success());
    }

    /// The visible screen and the scrollback.
    pub fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "t", "-S", "-200"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen satisfies `ok`; panics with the screen after the deadline.
    pub async fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if ok(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < SCREEN_DEADLINE,
                "waited for {what}; the screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn wait_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text)).await
    }

    pub fn stty(&self, which: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(format!("stty-{which}"))).ok()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// The scripted model, and `bash <command>` in a prompt makes it call bash.
pub async fn server() -> oxpi_testkit::TestServer {
    oxpi_testkit::TestServer::start_fn(|request| {
        let messages = super::messages(request);
        let last = messages.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            let content = last["content"].as_str().unwrap_or_default().to_string();
            let first = content.lines().next().unwrap_or("").to_string();
            return super::text_reply(&format!("Done: {first}"));
        }
        let prompt = super::last_user_text(request);
        if let Some(rest) = prompt.split("bash ").nth(1) {
            return super::tool_reply("call_b", "bash", &serde_json::json!({"command": rest}));
        }
        if let Some(rest) = prompt.split("read ").nth(1) {
            let file = rest.split_whitespace().next().unwrap_or("");
            return super::tool_reply("call_1", "read", &serde_json::json!({"path": file}));
        }
        super::text_reply(&format!("Echo: {prompt}"))
    })
    .await
    .unwrap()
}
