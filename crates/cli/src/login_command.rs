//! `oxpi login [provider]` and `oxpi logout [provider]` (also pi's spelling, `oxpi auth login
//! <provider>` / `oxpi auth logout <provider>`): pi 1.6's subscription logins (Anthropic, OpenAI
//! Codex, GitHub Copilot) run in the terminal, the credential written to `<agent dir>/auth.json`
//! as pi writes it (under pi's `auth.json.lock`, created 0600, other entries byte for byte).
//!
//! Headless by design: the URL to open (or the device code) is printed on stderr and the
//! pasted code or redirect URL is read from stdin, while a browser on this machine may still
//! reach the local callback server. No browser is started.

use std::io::BufRead;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_ai::oauth::login::{LoginEvent, LoginPrompt, LoginUi};
use oxpi_ai::Models;

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Log in to the provider (asked for when not given).
    Login(Option<String>),
    /// Remove the provider's stored credential (asked for when not given).
    Logout(Option<String>),
}

/// The login providers and their names (pi's `name`).
const PROVIDERS: [(&str, &str); 3] = [
    ("anthropic", "Anthropic (Claude Pro/Max)"),
    ("openai-codex", "OpenAI (ChatGPT Plus/Pro)"),
    ("github-copilot", "GitHub Copilot"),
];

/// `Some` when the arguments (without the program name) are a login or logout command.
pub(crate) fn parse(args: &[String]) -> Option<Command> {
    let rest = match args.first().map(String::as_str) {
        Some("auth") => &args[1..],
        _ => args,
    };
    let provider = rest.get(1).cloned();
    match rest.first().map(String::as_str) {
        Some("login") if rest.len() <= 2 => Some(Command::Login(provider)),
        Some("logout") if rest.len() <= 2 => Some(Command::Logout(provider)),
        _ => None,
    }
}

/// Reads one line of input; `None` at its end.
type Lines = Arc<Mutex<Box<dyn FnMut() -> Option<String> + Send>>>;

/// The terminal as a login's user: events and questions written out, answers read as lines.
pub(crate) struct TerminalUi {
    lines: Lines,
    out: Box<dyn Fn(&str) + Send + Sync>,
}

impl TerminalUi {
    /// Questions on stderr, answers from stdin.
    pub(crate) fn stdio() -> Self {
        Self::new(
            move || {
                let mut line = String::new();
                match std::io::stdin().lock().read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
                }
            },
            |text| eprintln!("{text}"),
        )
    }

    /// A user reading lines from `lines` and shown text through `out`.
    pub(crate) fn new(
        lines: impl FnMut() -> Option<String> + Send + 'static,
        out: impl Fn(&str) + Send + Sync + 'static,
    ) -> Self {
        Self {
            lines: Arc::new(Mutex::new(Box::new(lines))),
            out: Box::new(out),
        }
    }

    fn line(&self) -> BoxFuture<'static, Option<String>> {
        let lines = self.lines.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut read = lines.lock().unwrap_or_else(|p| p.into_inner());
                read()
            })
            .await
            .ok()
            .flatten()
        }
        .boxed()
    }
}

impl LoginUi for TerminalUi {
    fn notify(&self, event: LoginEvent) {
        match event {
            LoginEvent::AuthUrl { url, instructions } => {
                (self.out)(&format!("Open this URL in a browser:\n\n{url}\n\n{instructions}"));
            }
            LoginEvent::DeviceCode {
                user_code,
                verification_uri,
            } => (self.out)(&format!(
                "Open {verification_uri} and enter the code {user_code}\nWaiting for the approval..."
            )),
            LoginEvent::Progress(message) => (self.out)(&message),
            _ => {}
        }
    }

    fn prompt(&self, prompt: LoginPrompt) -> BoxFuture<'static, Option<String>> {
        match prompt {
            LoginPrompt::Select { message, options } => {
                let mut text = message;
                for (i, (_, label)) in options.iter().enumerate() {
                    text.push_str(&format!("\n  {}) {label}", i + 1));
                }
                (self.out)(&format!("{text}\nChoice [1]:"));
                let line = self.line();
                async move {
                    let answer = line.await?;
                    let answer = answer.trim();
                    let chosen = match answer.parse::<usize>() {
                        Ok(n) if (1..=options.len()).contains(&n) => options[n - 1].0.clone(),
                        _ if answer.is_empty() => options.first()?.0.clone(),
                        _ => answer.to_string(),
                    };
                    Some(chosen)
                }
                .boxed()
            }
            LoginPrompt::ManualCode {
                message,
                placeholder,
            }
            | LoginPrompt::Text {
                message,
                placeholder,
            } => {
                (self.out)(&format!("{message} (e.g. {placeholder})"));
                self.line()
            }
            _ => futures::future::ready(None).boxed(),
        }
    }
}

/// Runs the command with pi's clients on `<agent dir>/auth.json`; returns the exit code.
pub(crate) async fn run(command: Command) -> i32 {
    let Some(dir) = oxpi_session::default_agent_dir() else {
        eprintln!("oxpi: no agent directory (set HOME or PI_CODING_AGENT_DIR)");
        return 1;
    };
    let path = dir.join("auth.json");
    let models = Models::builder()
        .credentials(oxpi_ai::collection::AuthFile::new(&path))
        .build();
    let ui = Arc::new(TerminalUi::stdio());
    let result = match command {
        Command::Login(provider) => match choose(provider, &ui).await {
            Some(provider) => login(&models, &provider, ui).await.map(|name| {
                format!(
                    "Logged in to {name}. Credentials saved to {}",
                    path.display()
                )
            }),
            None => Err("no provider chosen".to_string()),
        },
        Command::Logout(provider) => match choose(provider, &ui).await {
            Some(provider) => logout(&models, &provider),
            None => Err("no provider chosen".to_string()),
        },
    };
    match result {
        Ok(done) => {
            eprintln!("{done}");
            0
        }
        Err(e) => {
            eprintln!("oxpi: {e}");
            1
        }
    }
}

/// The provider given, else the one the user picks.
pub(crate) async fn choose(provider: Option<String>, ui: &Arc<TerminalUi>) -> Option<String> {
    if provider.is_some() {
        return provider;
    }
    ui.prompt(LoginPrompt::Select {
        message: "Select a provider:".into(),
        options: PROVIDERS
            .iter()
            .map(|(id, name)| (id.to_string(), name.to_string()))
            .collect(),
    })
    .await
}

/// Logs in to `provider` through `models`; returns its name.
pub(crate) async fn login(
    models: &Models,
    provider: &str,
    ui: Arc<dyn LoginUi>,
) -> Result<&'static str, String> {
    let Some((_, name)) = PROVIDERS.iter().find(|(id, _)| *id == provider) else {
        let known: Vec<&str> = PROVIDERS.iter().map(|(id, _)| *id).collect();
        return Err(format!(
            "oxpi has no login for {provider:?} (it has: {})",
            known.join(", ")
        ));
    };
    models
        .login(provider, ui)
        .await
        .map(|()| *name)
        .map_err(|e| e.to_string())
}

/// Removes `provider`'s stored credential.
pub(crate) fn logout(models: &Models, provider: &str) -> Result<String, String> {
    match models.logout(provider) {
        Ok(true) => Ok(format!("Logged out of {provider}")),
        Ok(false) => Ok(format!("No credentials stored for {provider}")),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn login_and_logout_are_read_in_both_spellings() {
        assert_eq!(
            parse(&args(&["login", "anthropic"])),
            Some(Command::Login(Some("anthropic".into())))
        );
        assert_eq!(parse(&args(&["login"])), Some(Command::Login(None)));
        assert_eq!(
            parse(&args(&["auth", "logout", "github-copilot"])),
            Some(Command::Logout(Some("github-copilot".into())))
        );
        assert_eq!(parse(&args(&["-p", "login"])), None);
        assert_eq!(parse(&args(&["login", "to", "the", "server"])), None);
    }

    /// The headless path against a fake Codex issuer: the URL printed, the browser's final
    /// redirect URL pasted on "stdin", the login stored next to an entry kept byte for byte.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pasted_redirect_url_logs_in_and_is_stored_as_pi_stores_it() {
        use oxpi_testkit::oauth_issuer::{FakeIssuer, Flavor};
        let issuer = FakeIssuer::start(Flavor::Codex).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let other = "{\"type\": \"api_key\",\"key\":\"gsk-1\"}";
        std::fs::write(&path, format!("{{\n  \"groq\": {other}\n}}")).unwrap();
        let models = Models::builder()
            .credentials(oxpi_ai::collection::AuthFile::new(&path))
            .oauth(
                oxpi_ai::oauth::OAuthConfig::openai_codex()
                    .at_origin(issuer.server.base_url())
                    .with_redirect_uri("http://localhost:0/auth/callback"),
            )
            .build();
        let (shown_tx, mut shown) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (paste_tx, paste) = std::sync::mpsc::channel::<String>();
        let ui = TerminalUi::new(
            move || paste.recv().ok(),
            move |text| {
                let _ = shown_tx.send(text.to_string());
            },
        );
        let browser = tokio::spawn(async move {
            let mut printed = Vec::new();
            while let Some(text) = shown.recv().await {
                if let Some(url) = text.lines().find(|l| l.starts_with("http://127.0.0.1")) {
                    let landed = FakeIssuer::authorize(url).await.unwrap();
                    paste_tx.send(landed).unwrap();
                }
                printed.push(text);
            }
            printed
        });
        let name = login(&models, "openai-codex", Arc::new(ui)).await.unwrap();
        assert_eq!(name, "OpenAI (ChatGPT Plus/Pro)");
        drop(models);
        let printed = browser.await.unwrap().join("\n");
        assert!(
            printed.contains("paste the authorization code / redirect URL"),
            "{printed}"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(&format!(
                "{{\n  \"groq\": {other},\n  \"openai-codex\": {{\n    \"type\": \"oauth\","
            )),
            "{text}"
        );
        let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
        let access = stored["openai-codex"]["access"].as_str().unwrap();
        let refresh = stored["openai-codex"]["refresh"].as_str().unwrap();
        assert!(issuer.accepts(access));
        assert!(!printed.contains(access) && !printed.contains(refresh));
        assert_eq!(issuer.state().exchanges, 1);
    }
}
