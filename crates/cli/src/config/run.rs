//! What the settings decide for one run, with the command line first: the model when none is
//! named (pi's model scope, then `defaultProvider`/`defaultModel` when it has a key), the
//! thinking level, the tools, the sandbox, `bash`'s shell, compaction, retry and the session
//! directory. The command, RPC and the interactive mode all start from [`RunConfig`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use oxpi_agent_core::{QueueMode, RetryPolicy};
use oxpi_ai::{Model, ThinkingLevel};
use oxpi_session::CompactionSettings;

use super::models_json::CustomModels;
use super::settings::{Compaction, SandboxMode, Settings};
use crate::auth_file::AuthKeys;
use crate::model_choice::{self, Choice, ChoiceError, ModelFlags, Target};
use crate::model_scope::ScopedModel;

/// What a bash refusal says about turning the sandbox off (oxpi's option and setting).
pub(crate) const SANDBOX_ADVICE: &str = "To run commands here anyway, start oxpi with \
     --sandbox none (no confinement, as pi) or --sandbox best-effort (what the kernel can \
     enforce), or set \"oxpi\": {\"sandbox\": \"none\"} in settings.json.";

/// The settings a run uses, read once.
#[derive(Debug, Clone)]
pub(crate) struct RunConfig {
    /// The settings files.
    pub settings: Settings,
    /// `defaultThinkingLevel`.
    pub default_thinking: Option<ThinkingLevel>,
    /// `defaultTools`, resolved.
    pub default_tools: Option<Vec<String>>,
    /// `compaction.*`.
    pub compaction: Compaction,
    /// `retry.*` as a policy (`None`: `retry.enabled` false).
    pub retry: Option<RetryPolicy>,
    /// `shellPath`.
    pub shell_path: Option<PathBuf>,
    /// `shellCommandPrefix`.
    pub shell_command_prefix: Option<String>,
    /// `sessionDir`.
    pub session_dir: Option<PathBuf>,
    /// `oxpi.sandbox`.
    pub sandbox: Option<SandboxMode>,
    /// `oxpi.promptProfile`.
    pub prompt_profile: Option<crate::profile::PromptProfile>,
    /// `steeringMode`.
    pub steering_mode: Option<QueueMode>,
    /// `followUpMode`.
    pub follow_up_mode: Option<QueueMode>,
}

impl RunConfig {
    /// Reads the settings of `cwd` (see [`Settings::load`]).
    pub(crate) fn load(agent_dir: Option<&Path>, cwd: &Path, approve: Option<bool>) -> Self {
        Self::from_settings(Settings::load(agent_dir, cwd, approve), cwd)
    }

    /// The values of `settings`.
    pub(crate) fn from_settings(mut settings: Settings, cwd: &Path) -> Self {
        let retry = settings.retry();
        Self {
            default_thinking: settings.default_thinking_level(),
            default_tools: settings.default_tools(),
            compaction: settings.compaction(),
            retry: retry.enabled.then(|| {
                RetryPolicy::new(
                    retry.max_retries,
                    Duration::from_millis(retry.base_delay_ms),
                )
                .with_max_delay(Duration::from_millis(retry.max_agent_delay_ms))
            }),
            shell_path: settings.shell_path(),
            shell_command_prefix: settings.shell_command_prefix(),
            session_dir: settings.session_dir(cwd),
            sandbox: settings.sandbox(),
            prompt_profile: settings.prompt_profile(),
            steering_mode: settings.queue_mode("steeringMode"),
            follow_up_mode: settings.queue_mode("followUpMode"),
            settings,
        }
    }

    /// The warnings, each as pi shows them (`Warning: …`).
    pub(crate) fn warnings(&self) -> impl Iterator<Item = String> + '_ {
        self.settings
            .warnings
            .iter()
            .map(|w| format!("Warning: {w}"))
    }

    /// The model scope (pi's `--models`, else `enabledModels`) among `available`, with pi's
    /// warnings.
    pub(crate) fn model_scope(
        &mut self,
        flag: Option<&[String]>,
        available: &[Model],
    ) -> (Vec<ScopedModel>, Vec<String>) {
        let patterns = match flag {
            Some(list) => list.to_vec(),
            None => self.settings.enabled_models().unwrap_or_default(),
        };
        if patterns.is_empty() {
            return (Vec::new(), Vec::new());
        }
        crate::model_scope::resolve(&patterns, available)
    }

    /// `flags` completed from the settings when they name no model: the saved default when it
    /// is in `scope`, else the scope's first (with its thinking level), else
    /// `defaultProvider`/`defaultModel` when that provider has a key (pi's
    /// `buildSessionOptions` and `findInitialModel`); else unchanged (the embedded model).
    pub(crate) fn model_flags(
        &mut self,
        flags: &ModelFlags,
        scope: &[ScopedModel],
        custom: &CustomModels,
        auth: &AuthKeys,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> ModelFlags {
        if flags.provider.is_some() || flags.model.is_some() || flags.base_url.is_some() {
            return flags.clone();
        }
        let has_key = |provider: &str| {
            model_choice::has_credentials(provider, auth, env) || custom.has_key(provider, env)
        };
        let saved = (
            self.settings.default_provider(),
            self.settings.default_model(),
        );
        if let Some(first) =
            crate::model_scope::initial(scope, saved.0.as_deref(), saved.1.as_deref())
        {
            let mut out = flags.clone();
            out.provider = Some(first.model.provider.clone());
            out.model = Some(match first.thinking {
                Some(l) => format!("{}:{}", first.model.id, l.as_str()),
                None => first.model.id.clone(),
            });
            return out;
        }
        let provider = self.settings.default_provider();
        let model = self.settings.default_model();
        if let (Some(provider), Some(id)) = (provider, model) {
            let known = custom.get(&provider, &id).is_some()
                || oxpi_ai::models::model_for(&provider, &id).is_some();
            if known && has_key(&provider) {
                let mut out = flags.clone();
                out.provider = Some(provider);
                out.model = Some(id);
                return out;
            }
        }
        flags.clone()
    }

    /// The thinking level when none was asked for: `modelThinkingLevels` for `model`, else
    /// `defaultThinkingLevel`.
    pub(crate) fn thinking_for(&mut self, model: &Model) -> Option<ThinkingLevel> {
        self.settings
            .model_thinking_level(&model.provider, &model.id)
            .or(self.default_thinking)
    }

    /// Compaction for `model` (its `compaction.modelOverrides` entry applied).
    pub(crate) fn compaction_for(&self, model: &Model) -> CompactionSettings {
        let (reserve, keep) = self.compaction.tokens_for(&model.provider, &model.id);
        CompactionSettings::new()
            .enabled(self.compaction.enabled)
            .reserve_tokens(reserve)
            .keep_recent_tokens(keep)
    }

    /// The sandbox: `--sandbox`, else `oxpi.sandbox`, else `workspace`.
    pub(crate) fn sandbox(&self, flag: Option<SandboxMode>) -> SandboxMode {
        flag.or(self.sandbox).unwrap_or(SandboxMode::Workspace)
    }

    /// The session directory: `--session-dir`, else `PI_CODING_AGENT_SESSION_DIR`, else
    /// `sessionDir` (pi's order).
    pub(crate) fn session_dir(
        &self,
        flag: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<PathBuf> {
        flag.map(Path::to_path_buf)
            .or_else(|| {
                env("PI_CODING_AGENT_SESSION_DIR")
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
            })
            .or_else(|| self.session_dir.clone())
    }
}

/// A model named exactly: `provider/id`, else an id only one provider offers (models.json's
/// first).
fn resolve_exact(name: &str, custom: &CustomModels) -> Option<Model> {
    if let Some((provider, id)) = name.split_once('/') {
        if let Some(model) = custom.get(provider, id) {
            return Some(model.clone());
        }
    }
    if let Some(model) = custom.models.iter().find(|m| m.id == name) {
        return Some(model.clone());
    }
    if let Some((provider, id)) = name.split_once('/') {
        if let Some(model) = oxpi_ai::models::model_for(provider, id) {
            return Some(model);
        }
    }
    let mut found = oxpi_ai::models::builtin_models()
        .iter()
        .filter(|m| m.id == name);
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one.clone()),
        _ => None,
    }
}

/// The model of `flags` with `models.json` first: a model it defines (`--model
/// provider/id`, `--provider p --model id`, or an id only it has), else oxpi's catalogue with
/// the file's changes to the built-in provider applied.
pub(crate) fn choose_model(
    flags: &ModelFlags,
    custom: &CustomModels,
    auth: &AuthKeys,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Choice, ChoiceError> {
    if flags.base_url.is_none() {
        let (pattern, level) = match flags.model.as_deref() {
            Some(m) => match m.rsplit_once(':') {
                Some((id, l)) if ThinkingLevel::parse(l).is_some() => {
                    (Some(id), ThinkingLevel::parse(l))
                }
                _ => (Some(m), None),
            },
            None => (None, None),
        };
        let found = match (&flags.provider, pattern) {
            (Some(p), Some(id)) => custom.get(p, id).cloned(),
            (Some(p), None) => custom.models.iter().find(|m| &m.provider == p).cloned(),
            (None, Some(name)) => {
                resolve_exact(name, custom).filter(|m| custom.get(&m.provider, &m.id).is_some())
            }
            (None, None) => None,
        };
        if let Some(model) = found {
            let thinking = match &flags.thinking {
                Some(t) => {
                    Some(ThinkingLevel::parse(t).ok_or_else(|| ChoiceError::Thinking(t.clone()))?)
                }
                None => level,
            };
            let api_key = flags
                .api_key
                .clone()
                .or_else(|| auth.get(&model.provider).map(str::to_string))
                .map(oxpi_ai::ApiKey::new);
            return Ok(Choice {
                target: Target::Remote {
                    model: Box::new(model),
                    api_key,
                },
                thinking,
            });
        }
    }
    let mut choice = model_choice::choose(flags, auth, env)?;
    if let Target::Remote { model, .. } = &mut choice.target {
        if flags.base_url.is_none() {
            custom.adjust(model);
        }
    }
    Ok(choice)
}
