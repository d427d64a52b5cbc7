//! What a run is made of, from the command line: the model (started, for the embedded one),
//! the tools over the working directory, the system prompt with the context files, the agent,
//! and the session it is bound to.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use oxpi_agent_core::{Agent, AgentError, AgentOptions, RetryPolicy};
use oxpi_ai::{
    ApiKey, Message, Model, ReasoningLevel, Sections, StreamOptions, SystemMessage, ThinkingLevel,
};
use oxpi_session::{
    bind_agent_with, AutoCompaction, ModelSummarizer, RunError, SessionBinding, SessionManager,
};

use crate::args::Args;
use crate::auth_file::AuthKeys;
use crate::compact::{Compacting, CountedSummarizer};
use crate::config::models_json::CustomModels;
use crate::config::run::RunConfig;
use crate::config::settings::SandboxMode;
use crate::context_files::{self, PromptParts};
use crate::model_choice::{ModelFlags, Target};
use crate::profile;
use crate::run_keys::Keys;
use crate::session_choice::{self, SessionFlags};
use crate::tool_choice;

/// Why a run could not be set up; the text is what the user sees.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SetupError(pub String);

impl SetupError {
    fn from(e: impl std::fmt::Display) -> Self {
        Self(e.to_string())
    }
}

/// A run: the agent, its session and what was chosen.
pub(crate) struct Runtime {
    /// The agent.
    pub agent: Agent,
    /// The session the agent appends to (`None` only while it is being replaced); shared with
    /// a prompt's recovery while it runs.
    binding: Mutex<Option<Arc<SessionBinding>>>,
    /// Failed appends a recovering prompt reported (its result carries them), until
    /// [`Runtime::take_session_errors`] takes them.
    unsaved: Mutex<Option<String>>,
    /// Where this directory's sessions are (`None` with `--no-session` and no home).
    pub session_dir: Option<PathBuf>,
    /// The leading system message of a new transcript (pi 1.6 keeps the prompt and the tools
    /// in the transcript).
    system: SystemMessage,
    /// Where keys come from.
    keys: Keys,
    /// The thinking level (pi's names).
    pub thinking: Mutex<ThinkingLevel>,
    /// The working directory the tools (and RPC `bash`) are confined to.
    pub workspace: oxpi_tools::Workspace,
    /// Automatic compaction (pi's defaults, the first model's window, pi's summarizer),
    /// installed in the agent and bound with each session.
    auto: AutoCompaction,
    /// Whether automatic compaction is on (RPC `set_auto_compaction`; on by default, as pi).
    pub auto_compaction: Arc<AtomicBool>,
    /// The compactions in flight, manual and automatic (RPC `get_state.isCompacting`).
    pub compacting: Compacting,
    /// The embedded model's server, kept running while the run lasts.
    pub server: Mutex<Option<oxpi_local::LocalServer>>,
    /// The retry policy of the settings (`retry.*`), what RPC `set_auto_retry` turns back on.
    pub retry: RetryPolicy,
    /// The settings of the run (pi's files, read once).
    pub config: RunConfig,
    /// How `bash` runs (sandbox, `shellPath`, `shellCommandPrefix`), for RPC's `bash` too.
    pub bash: tool_choice::BashSetup,
    /// The prompt templates (`/name args`).
    pub templates: Vec<crate::config::templates::PromptTemplate>,
    /// The skills (`/skill:name args` when `enableSkillCommands`).
    pub skills: Vec<crate::config::skills::Skill>,
    /// `enableSkillCommands` (`/settings` changes it).
    pub skill_commands: AtomicBool,
    /// The context files and other resources loaded, for the startup header.
    pub loaded: crate::loaded::Loaded,
    /// The MCP servers of `mcp.json` whose tools are offered (closed by [`Runtime::shutdown`]).
    pub mcp: Vec<oxpi_mcp::McpClient>,
    /// The model scope (`--models`, `enabledModels`) that `Ctrl+P` and `cycle_model` cycle.
    pub scope: Vec<crate::model_scope::ScopedModel>,
    /// The models with a key (`models.json`'s, then the catalogue's), as at the start.
    pub available: Vec<Model>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// pi's automatic retry: three retries, two seconds doubling.
pub(crate) fn retry_policy() -> RetryPolicy {
    RetryPolicy::new(3, Duration::from_secs(2))
}

/// A user message of `text` as pi writes a prompt (one text block), stamped now.
pub(crate) fn user_message(text: &str) -> Message {
    Message::User(oxpi_ai::UserMessage {
        content: oxpi_ai::UserMessageContent::Blocks(vec![oxpi_ai::UserContent::text(text)]),
        timestamp: oxpi_ai::now_millis(),
    })
}

/// A user message of `text` followed by `images` (the first prompt's `@file` images).
pub(crate) fn user_message_with(text: &str, images: &[oxpi_ai::UserContent]) -> Message {
    let mut message = user_message(text);
    if let Message::User(oxpi_ai::UserMessage {
        content: oxpi_ai::UserMessageContent::Blocks(blocks),
        ..
    }) = &mut message
    {
        blocks.extend(images.iter().cloned());
    }
    message
}

/// The reasoning level sent for `level` on `model` (clamped to what the model takes).
pub(crate) fn effective_thinking(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    oxpi_ai::clamp_thinking_level(model, level)
}

/// `options` with `auto`'s request hook, consulted only while `enabled` is set (pi's
/// `setAutoCompactionEnabled`): when off, requests go from the agent's history unchanged.
fn switchable_compaction(
    auto: &AutoCompaction,
    options: AgentOptions,
    enabled: Arc<AtomicBool>,
) -> AgentOptions {
    let mut options = auto.install(options);
    let Some(hook) = options.prepare_request.take() else {
        return options;
    };
    options.prepare_request = Some(Arc::new(move |request, cancel| {
        if enabled.load(Ordering::SeqCst) {
            hook(request, cancel)
        } else {
            Box::pin(async { None })
        }
    }));
    options
}

impl Runtime {
    /// Sets up everything `args` asks for.
    pub(crate) async fn setup(args: &Args) -> Result<Arc<Self>, SetupError> {
        let cwd = std::env::current_dir()
            .map_err(|e| SetupError(format!("the working directory cannot be read: {e}")))?;
        let agent_dir = oxpi_session::default_agent_dir();
        let auth = match &agent_dir {
            Some(dir) => AuthKeys::load(dir).map_err(SetupError::from)?,
            None => AuthKeys::default(),
        };
        let approve = match (args.approve, args.no_approve) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        let mut config = RunConfig::load(agent_dir.as_deref(), &cwd, approve);
        for warning in config.warnings() {
            eprintln!("{warning}");
        }
        let custom = Arc::new(CustomModels::load(agent_dir.as_deref(), &process_env));
        for error in &custom.errors {
            eprintln!("Warning: {error}");
        }
        let given = ModelFlags {
            provider: args.provider.clone(),
            model: args.model.clone(),
            thinking: args.thinking.clone(),
            api_key: args.api_key.clone(),
            base_url: args.base_url.clone(),
        };
        let available = crate::list_models::available(&custom, &auth, &process_env);
        let (scope, scope_warnings) =
            config.model_scope(args.model_patterns().as_deref(), &available);
        for warning in scope_warnings {
            eprintln!("Warning: {warning}");
        }
        let flags = config.model_flags(&given, &scope, &custom, &auth, &process_env);
        let choice = crate::config::run::choose_model(&flags, &custom, &auth, &process_env)
            .map_err(SetupError::from)?;
        let profile = profile::choose(
            args.prompt_profile.or(config.prompt_profile),
            choice.target == Target::Embedded,
        );
        let (model, api_key, server) = match choice.target {
            Target::Remote { model, api_key } => (*model, api_key, None),
            Target::Embedded => {
                let config = oxpi_local::LocalModelConfig::from_env();
                let server = oxpi_local::start(&config)
                    .await
                    .map_err(|e| SetupError(format!("could not start the embedded model: {e}")))?;
                (server.model(), None, Some(server))
            }
        };
        let model = profile.model(model);
        let default_level = if model.reasoning {
            ThinkingLevel::Medium
        } else {
            ThinkingLevel::Off
        };
        let asked = choice.thinking.or_else(|| config.thinking_for(&model));
        let thinking = effective_thinking(&model, asked.unwrap_or(default_level));

        let defaults = match &config.default_tools {
            Some(list) => tool_choice::known_tools(list),
            None => tool_choice::DEFAULT_TOOLS.map(String::from).to_vec(),
        };
        let tool_flags = tool_choice::ToolFlags::new(
            args.tools.as_deref(),
            args.no_tools,
            args.no_builtin_tools,
            args.exclude_tools.as_deref(),
        );
        let names = tool_choice::select_from(&tool_flags, &defaults).map_err(SetupError::from)?;
        let sandbox_mode = config.sandbox(args.sandbox);
        let mut skill_paths = if args.no_skills {
            Vec::new()
        } else {
            config
                .settings
                .resource_paths("skills", agent_dir.as_deref())
        };
        skill_paths.extend(args.skill.iter().cloned());
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let (skills, skill_warnings) =
            crate::config::skills::load(&crate::config::skills::SkillPlaces {
                agent_dir: agent_dir.as_deref(),
                home: home.as_deref(),
                cwd: &cwd,
                trusted: config.settings.project_trusted,
                include_defaults: !args.no_skills,
                explicit: &skill_paths,
            });
        for warning in skill_warnings {
            eprintln!("Warning: {warning}");
        }
        let mut workspace = oxpi_tools::Workspace::new(&cwd).map_err(SetupError::from)?;
        let read_roots = skills.iter().map(|s| s.base_dir.clone());
        for dir in read_roots.chain(args.add_dir.iter().map(|d| cwd.join(d))) {
            workspace = workspace.clone().with_read_root(&dir).map_err(|e| {
                SetupError(format!(
                    "{}: cannot be added for reading: {e}",
                    dir.display()
                ))
            })?;
        }
        let sandbox = match sandbox_mode {
            SandboxMode::Workspace => oxpi_tools::Sandbox::workspace(),
            SandboxMode::BestEffort => oxpi_tools::Sandbox::best_effort(),
            SandboxMode::None => {
                workspace = workspace.unconfined();
                oxpi_tools::Sandbox::None
            }
        };
        let bash = tool_choice::BashSetup {
            sandbox,
            shell: config.shell_path.clone(),
            command_prefix: config.shell_command_prefix.clone(),
            commands: oxpi_tools::RunningCommands::new(),
        };
        let small = profile == profile::PromptProfile::Small;
        let built = tool_choice::build(&names, &workspace, &bash, small);
        let mut tools = profile.tools(built.map_err(SetupError::from)?);
        let mut names = names;
        let mcp = if args.no_mcp || args.no_tools {
            Vec::new()
        } else {
            crate::config::mcp_json::connect(
                &process_env,
                agent_dir.as_deref(),
                &cwd,
                config.settings.project_trusted,
                &|name| tool_flags.keeps_mcp_tool(name),
                &mut tools,
                &mut names,
            )
            .await
        };
        let tools_workspace = workspace.clone();
        let files = if args.no_context_files {
            Vec::new()
        } else {
            context_files::load(&cwd, agent_dir.as_deref())
        };
        let trusted = config.settings.project_trusted;
        let skill_commands = config
            .settings
            .boolean(&["enableSkillCommands"])
            .unwrap_or(true);
        let mut template_paths = if args.no_prompt_templates {
            Vec::new()
        } else {
            config
                .settings
                .resource_paths("prompts", agent_dir.as_deref())
        };
        template_paths.extend(args.prompt_template.iter().cloned());
        let (templates, template_warnings) = crate::config::templates::load(
            agent_dir.as_deref(),
            &cwd,
            trusted,
            !args.no_prompt_templates,
            &template_paths,
        );
        for warning in template_warnings {
            eprintln!("Warning: {warning}");
        }
        let parts = PromptParts {
            custom: crate::config::system_md::system_prompt(
                args.system_prompt.as_deref(),
                &cwd,
                agent_dir.as_deref(),
                trusted,
            )
            .or_else(|| profile.preamble().map(str::to_string)),
            append: crate::config::system_md::append(
                &args.append_system_prompt,
                &cwd,
                agent_dir.as_deref(),
                trusted,
            ),
            skills: crate::config::skills::prompt_section(&skills, &names),
            tools: names,
            files: profile.file_list(&cwd),
        };
        let sections = context_files::system_sections(&parts, &files, &cwd);
        let system = SystemMessage {
            sections: Some(Sections(
                sections.into_iter().map(|(k, v)| (k, Some(v))).collect(),
            )),
            tools_added: (!tools.is_empty())
                .then(|| tools.iter().map(|t| t.definition().clone()).collect()),
            ..SystemMessage::default()
        };

        let session_flags = SessionFlags {
            continue_recent: args.continue_session,
            session: args.session.clone(),
            fork: args.fork.clone(),
            session_dir: config.session_dir(args.session_dir.as_deref(), &process_env),
            no_session: args.no_session,
            name: args.name.clone(),
        };
        let session = session_choice::open(&session_flags, agent_dir.as_deref(), &cwd)
            .map_err(SetupError::from)?;
        let session_dir = session_choice::session_dir(&session_flags, agent_dir.as_deref(), &cwd);

        let keys = Keys {
            provider: model.provider.clone(),
            given: api_key.clone(),
            auth: auth.clone(),
            custom,
        };
        let lookup = keys.clone();
        let mut summary_options = StreamOptions::default();
        summary_options.api_key = keys.key_for(&model.provider);
        let compacting = Compacting::default();
        let compaction = config.compaction_for(&model);
        let auto_compaction = Arc::new(AtomicBool::new(compaction.enabled));
        let auto = AutoCompaction::new(
            &model,
            CountedSummarizer::new(
                crate::logins::summarizer(&model, summary_options, &keys.auth),
                compacting.clone(),
            ),
        )
        .with_settings(compaction.enabled(true));
        let retry = config.retry.unwrap_or_else(retry_policy);
        let mut options = AgentOptions::new(model)
            .with_tools(tools)
            .with_stream_options(profile.stream_options())
            .with_get_api_key(move |provider| {
                let key = lookup.key_for_request(provider);
                async move { Ok(key) }
            })
            .with_session_id(session.session_id().to_string());
        if let Some(stream) = crate::logins::login_stream(&keys.auth) {
            options = options.with_stream_fn(stream);
        }
        if let Some(choice) = profile.tool_choice_after_user() {
            options = options.with_tool_choice_after_user(choice);
        }
        if let Some(policy) = &config.retry {
            options = options.with_retry(*policy);
        }
        if let Some(mode) = config.steering_mode {
            options = options.with_steering_mode(mode);
        }
        if let Some(mode) = config.follow_up_mode {
            options = options.with_follow_up_mode(mode);
        }
        if let Some(level) = ReasoningLevel::from_thinking_level(thinking) {
            options = options.with_thinking_level(level);
        }
        let options = switchable_compaction(&auto, options, auto_compaction.clone());
        let agent = Agent::new(options);
        let runtime = Arc::new(Self {
            agent,
            binding: Mutex::new(None),
            unsaved: Mutex::new(None),
            session_dir,
            system,
            keys,
            thinking: Mutex::new(thinking),
            workspace: tools_workspace,
            auto,
            auto_compaction,
            compacting,
            server: Mutex::new(server),
            retry,
            config,
            bash,
            templates,
            skills,
            skill_commands: skill_commands.into(),
            loaded: crate::loaded::Loaded::new(args, &cwd, agent_dir.as_deref(), trusted, &files),
            mcp,
            scope,
            available,
        });
        runtime.bind(session)?;
        Ok(runtime)
    }

    /// Binds `session` to the agent (its context becomes the agent's history), replacing the
    /// session bound before.
    pub(crate) fn bind(&self, session: SessionManager) -> Result<(), SetupError> {
        let mut slot = lock(&self.binding);
        drop(slot.take());
        self.agent
            .set_session_id(Some(session.session_id().to_string()));
        // The system prompt lives in the transcript (pi 1.6): a reopened session's history
        // carries its system message; a new one gets it with its first prompt.
        self.agent.set_system_prompt(None);
        let binding =
            bind_agent_with(&self.agent, session, &self.auto).map_err(SetupError::from)?;
        *slot = Some(Arc::new(binding));
        Ok(())
    }

    /// Takes the session out (the agent no longer appends to it); give it back with
    /// [`Runtime::bind`]. `None` also while a prompt still runs on it (callers abort first).
    pub(crate) fn unbind(&self) -> Option<SessionManager> {
        let mut slot = lock(&self.binding);
        let binding = Arc::try_unwrap(slot.take()?).map_err(|shared| *slot = Some(shared));
        binding.ok().map(SessionBinding::into_session)
    }

    /// Runs a prompt as pi's command does: with automatic compaction on, through the bound
    /// session's recovery (a context overflow leaves the failed reply out, compacts and retries
    /// the turn once; see [`SessionBinding::prompt`]); else `agent.prompt`.
    pub(crate) async fn prompt(&self, messages: Vec<Message>) -> Result<(), AgentError> {
        let binding = lock(&self.binding).clone();
        match binding {
            Some(binding) if self.auto_compaction.load(Ordering::SeqCst) => {
                match binding.prompt(&self.agent, messages).await {
                    Ok(_) => Ok(()),
                    Err(RunError::Agent(e)) => Err(e),
                    // Reported by `take_session_errors`, as the appends of any other run.
                    Err(append) => {
                        *lock(&self.unsaved) = Some(append.to_string());
                        Ok(())
                    }
                }
            }
            _ => self.agent.prompt(messages).await.map(drop),
        }
    }

    /// Gives the idle agent the bound session's context as its history (after a recovery was
    /// cut short, the agent may still hold the reply it left out).
    pub(crate) fn sync_history(&self) -> Result<(), String> {
        let context = self
            .with_session(|s| s.build_session_context().messages)
            .ok_or("no session is bound")?;
        let history = oxpi_session::to_llm_messages(&context).map_err(|e| e.to_string())?;
        self.agent
            .replace_messages(history)
            .map_err(|e| e.to_string())
    }

    /// Runs `f` with the bound session.
    pub(crate) fn with_session<R>(&self, f: impl FnOnce(&mut SessionManager) -> R) -> Option<R> {
        lock(&self.binding).as_ref().map(|b| b.with_session(f))
    }

    /// The appends to the session that failed since the last call, as text (the file does
    /// not hold the whole conversation).
    pub(crate) fn take_session_errors(&self) -> Option<String> {
        if let Some(error) = lock(&self.unsaved).take() {
            return Some(error);
        }
        let binding = lock(&self.binding);
        let error = binding.as_ref()?.check_appends().err()?;
        Some(error.to_string())
    }

    /// The session file, if the session is stored.
    pub(crate) fn session_file(&self) -> Option<PathBuf> {
        self.with_session(|s| s.session_file().map(Path::to_path_buf))
            .flatten()
    }

    /// The session's header as JSON.
    pub(crate) fn session_header(&self) -> Option<serde_json::Value> {
        self.with_session(|s| serde_json::Value::Object(s.header().as_json().clone()))
    }

    /// What a prompt adds to the conversation: the system message first when the history has
    /// none (a new session, as pi), then `user`.
    pub(crate) fn prompt_messages(&self, user: Message) -> Vec<Message> {
        let history = self.agent.messages();
        let mut out = Vec::new();
        let has_system = self.agent.system_prompt().is_some()
            || history.iter().any(|m| matches!(m, Message::System(_)));
        if !has_system {
            let mut system = self.system.clone();
            system.timestamp = oxpi_ai::now_millis();
            out.push(Message::System(system));
        }
        out.push(user);
        out
    }

    /// The key for requests to `provider` (see [`Keys`]).
    pub(crate) fn key_for(&self, provider: &str) -> Option<ApiKey> {
        self.keys.key_for(provider)
    }

    /// A summarizer on `model` (with the stored login of its provider, when it has one).
    pub(crate) fn summarizer(&self, model: &Model, options: StreamOptions) -> ModelSummarizer {
        crate::logins::summarizer(model, options, &self.keys.auth)
    }

    /// True when `provider` has a key (auth.json, environment, or `--api-key`).
    pub(crate) fn has_credentials(&self, provider: &str) -> bool {
        self.key_for(provider).is_some()
            || crate::model_choice::has_credentials(provider, &self.keys.auth, &process_env)
    }

    /// The thinking level now.
    pub(crate) fn thinking_level(&self) -> ThinkingLevel {
        *lock(&self.thinking)
    }

    /// Sets the thinking level (clamped to the model); returns the level set.
    pub(crate) fn set_thinking_level(&self, level: ThinkingLevel) -> ThinkingLevel {
        let level = effective_thinking(&self.agent.model(), level);
        *lock(&self.thinking) = level;
        self.agent
            .set_thinking_level(ReasoningLevel::from_thinking_level(level));
        let _ = self.with_session(|s| s.append_thinking_level_change(level.as_str()));
        level
    }

    /// Stops the embedded model, if one runs, and the MCP servers.
    pub(crate) async fn shutdown(&self) {
        for client in &self.mcp {
            client.close().await;
        }
        let server = lock(&self.server).take();
        if let Some(server) = server {
            let _ = server.shutdown().await;
        }
        drop(self.unbind());
    }
}
