//! `/login [provider]` and `/logout [provider]`: the subscription logins of `oxpi login`, run
//! inside the view. What the login says (the URL to open, the device code) is shown as notices;
//! what it asks (the provider, a pasted code or redirect URL) is answered by the next text sent
//! from the editor, which goes to the login and not to the model. `Esc` cancels. The credential
//! is written to `<agent dir>/auth.json` as `oxpi login` writes it, and the next request to that
//! provider uses it.

use std::sync::Arc;

use oxpi_ai::Models;
use tokio::sync::mpsc;

use super::state::Item;
use super::Msg;
use crate::login_command::{self, TerminalUi};

/// `<agent dir>/auth.json` as a `Models` with pi's login clients, or why there is none.
fn models() -> Result<(Models, std::path::PathBuf), String> {
    let dir = oxpi_session::default_agent_dir()
        .ok_or("no agent directory (set HOME or PI_CODING_AGENT_DIR)")?;
    let path = dir.join("auth.json");
    let models = Models::builder()
        .credentials(oxpi_ai::collection::AuthFile::new(&path))
        .build();
    Ok((models, path))
}

/// A login (or logout) in progress: where the editor's answers go, and its task.
pub(crate) struct LoginRun {
    /// Tells this run's [`Msg::LoginEnded`] from an earlier one's.
    pub id: u64,
    /// The editor's next text goes here.
    pub input: std::sync::mpsc::Sender<String>,
    task: tokio::task::AbortHandle,
}

impl LoginRun {
    /// Stops the login wherever it waits (a question, the browser's callback, a device code
    /// being approved): its task is aborted, its callback server closed, nothing stored.
    pub(crate) fn cancel(self) {
        self.task.abort();
    }
}

/// Starts a login (or, with `logout`, a logout) in its own task. The task ends with
/// [`Msg::LoginEnded`] carrying `id`, unless it is cancelled.
pub(crate) fn start(
    id: u64,
    provider: Option<String>,
    logout: bool,
    tx: mpsc::UnboundedSender<Msg>,
) -> LoginRun {
    let (input, answers) = std::sync::mpsc::channel::<String>();
    let shown = tx.clone();
    let ui = Arc::new(TerminalUi::new(
        move || answers.recv().ok(),
        move |text| {
            let _ = shown.send(Msg::Show(Item::Info(text.to_string())));
        },
    ));
    let task = tokio::spawn(async move {
        let result = async {
            let (models, path) = models()?;
            let provider = login_command::choose(provider, &ui)
                .await
                .ok_or("Login cancelled")?;
            if logout {
                return login_command::logout(&models, &provider);
            }
            let name = login_command::login(&models, &provider, ui).await?;
            Ok(format!(
                "Logged in to {name}. Credentials saved to {}",
                path.display()
            ))
        }
        .await;
        let _ = tx.send(Msg::LoginEnded(id, result));
    });
    LoginRun {
        id,
        input,
        task: task.abort_handle(),
    }
}
