//! Tools an agent can run: the typed [`AgentTool`] trait and its type-erased, shareable form
//! [`AgentToolHandle`] (schema and validator built once).

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use oxpi_ai::tool::{tool_definition, ArgumentValidator, SchemaError, ValidationError};
use oxpi_ai::{Tool, Usage, UserContent};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// What a tool returns: content for the model and optional details for the application (pi's
/// `AgentToolResult`). Build it with [`text`](Self::text) or [`new`](Self::new) and the `with_*`
/// methods (the struct is `#[non_exhaustive]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentToolResult {
    /// Text and images shown to the model.
    pub content: Vec<UserContent>,
    /// Structured data for the application, not sent to the model (`null` when absent, as pi
    /// always sends the field).
    #[serde(default)]
    pub details: Option<Value>,
    /// Asks the agent to stop after this batch of tool calls instead of asking the model again;
    /// honoured only when every result of the batch asks (pi's `terminate`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminate: bool,
    /// Machine-readable output matching the tool's [`AgentTool::output_schema`]; for the
    /// application, not sent to the model and not kept in the tool-result message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tokens a tool that calls a model spent (pi's `usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The tool failed without returning an error (pi's `isError`): the result goes to the
    /// model as an error result, details and structured content kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl AgentToolResult {
    /// A result with this content.
    pub fn new(content: Vec<UserContent>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![UserContent::text(text)])
    }

    /// The text blocks of the content, joined by newlines (images left out).
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                UserContent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Adds structured content (see [`structured_content`](Self::structured_content)).
    pub fn with_structured_content(mut self, structured_content: Value) -> Self {
        self.structured_content = Some(structured_content);
        self
    }

    /// Adds the usage of the model calls the tool made.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Marks the result as an error (see [`is_error`](Self::is_error)).
    pub fn as_error(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// Adds details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Asks the agent to stop after this batch (see [`terminate`](Self::terminate)).
    pub fn terminating(mut self) -> Self {
        self.terminate = true;
        self
    }
}

/// A tool failed. The message is sent to the model as an error result, so it should say what was
/// wrong in words the model can act on (e.g. `File not found: notes.txt`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ToolError {
    /// The text sent to the model.
    pub message: String,
    /// Structured data for the application, kept in the error result's `details` (pi's tools
    /// return `isError` results with details, e.g. `bash` after a non-zero exit code).
    pub details: Option<Value>,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            details: None,
        }
    }

    /// Adds details, kept in the error result (see [`details`](Self::details)).
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

/// Receives partial results while a tool runs (forwarded as `tool_execution_update` events).
pub type ToolUpdateFn = Arc<dyn Fn(AgentToolResult) + Send + Sync>;

/// A tool with typed arguments. Its JSON Schema comes from `Args`' `JsonSchema` derive.
///
/// ```
/// use oxpi_agent_core::{AgentTool, AgentToolResult, ToolError, ToolUpdateFn};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tokio_util::sync::CancellationToken;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct EchoArgs {
///     /// What to say back.
///     text: String,
/// }
///
/// struct Echo;
///
/// impl AgentTool for Echo {
///     type Args = EchoArgs;
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> &str { "Repeat the text" }
///     async fn execute(&self, _id: &str, args: EchoArgs, _cancel: CancellationToken, _update: ToolUpdateFn)
///         -> Result<AgentToolResult, ToolError> {
///         Ok(AgentToolResult::text(args.text))
///     }
/// }
///
/// let handle = oxpi_agent_core::AgentToolHandle::new(Echo).unwrap();
/// assert_eq!(handle.definition().name, "echo");
/// ```
pub trait AgentTool: Send + Sync + 'static {
    /// The arguments, validated against their schema before `execute` sees them.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// Name the model calls it by.
    fn name(&self) -> &str;

    /// Short human label for UIs; the name by default.
    fn label(&self) -> &str {
        self.name()
    }

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Fixes up the raw arguments the model sent before they are validated (pi's
    /// `prepareArguments`), e.g. to accept an older argument shape. The default keeps them.
    ///
    /// ```
    /// # use serde_json::{json, Map, Value};
    /// // A tool whose `paths` used to be a single `path` might accept both:
    /// fn prepare(mut args: Map<String, Value>) -> Map<String, Value> {
    ///     if let Some(path) = args.remove("path") {
    ///         args.insert("paths".into(), json!([path]));
    ///     }
    ///     args
    /// }
    /// let old = json!({"path": "a.txt"}).as_object().cloned().unwrap();
    /// assert_eq!(Value::Object(prepare(old)), json!({"paths": ["a.txt"]}));
    /// ```
    fn prepare_arguments(&self, args: Map<String, Value>) -> Map<String, Value> {
        args
    }

    /// `Some(Sequential)` makes every batch this tool is called in run one call at a time (pi's
    /// `executionMode`); `None` (the default) follows the agent's
    /// [`tool_execution`](crate::AgentOptions::tool_execution).
    fn execution_mode(&self) -> Option<ToolExecution> {
        None
    }

    /// JSON Schema of the [`structured_content`](AgentToolResult::structured_content) of a
    /// successful result (pi's `outputSchema`): declarative, not sent to the model. `None` by
    /// default.
    fn output_schema(&self) -> Option<Value> {
        None
    }

    /// What may be done with a call whose outcome is unknown (pi's `replay`): declarative,
    /// read by applications that recover runs. `None` by default.
    fn replay(&self) -> Option<Replay> {
        None
    }

    /// Runs the tool. `cancel` fires when the agent is aborted; `on_update` streams partial results.
    fn execute(
        &self,
        tool_call_id: &str,
        args: Self::Args,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> impl Future<Output = Result<AgentToolResult, ToolError>> + Send;
}

trait ErasedTool: Send + Sync {
    fn prepare_erased(&self, args: Map<String, Value>) -> Map<String, Value>;

    fn execute_erased<'a>(
        &'a self,
        tool_call_id: &'a str,
        args: Map<String, Value>,
        validator: Option<&'a ArgumentValidator>,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> BoxFuture<'a, Result<AgentToolResult, ToolCallFailure>>;
}

/// A tool whose schema is known only at run time (a tool of an MCP server, a plugin): its
/// definition is data, given to [`AgentToolHandle::from_definition`], and it gets the arguments
/// as a JSON object that already passed the definition's schema (pi's conversions applied).
///
/// ```
/// use futures::future::{BoxFuture, FutureExt};
/// use oxpi_agent_core::{AgentToolHandle, AgentToolResult, DynamicAgentTool, ToolError, ToolUpdateFn};
/// use serde_json::{json, Map, Value};
/// use tokio_util::sync::CancellationToken;
///
/// struct Shout;
///
/// impl DynamicAgentTool for Shout {
///     fn execute<'a>(
///         &'a self,
///         _tool_call_id: &'a str,
///         args: Map<String, Value>,
///         _cancel: CancellationToken,
///         _on_update: ToolUpdateFn,
///     ) -> BoxFuture<'a, Result<AgentToolResult, ToolError>> {
///         let text = args["text"].as_str().unwrap_or_default().to_uppercase();
///         async move { Ok(AgentToolResult::text(text)) }.boxed()
///     }
/// }
///
/// let definition = oxpi_ai::Tool::new(
///     "shout",
///     "Repeat the text, louder",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// );
/// let handle = AgentToolHandle::from_definition(definition, "Shout", Shout).unwrap();
/// assert_eq!(handle.name(), "shout");
/// ```
pub trait DynamicAgentTool: Send + Sync + 'static {
    /// Fixes up the raw arguments before they are validated (see
    /// [`AgentTool::prepare_arguments`]). The default keeps them.
    fn prepare_arguments(&self, args: Map<String, Value>) -> Map<String, Value> {
        args
    }

    /// Runs the tool. `cancel` fires when the agent is aborted; `on_update` streams partial results.
    fn execute<'a>(
        &'a self,
        tool_call_id: &'a str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> BoxFuture<'a, Result<AgentToolResult, ToolError>>;
}

/// A [`DynamicAgentTool`] behind the erased interface: it validates against the definition.
struct Dynamic<T>(T);

impl<T: DynamicAgentTool> ErasedTool for Dynamic<T> {
    fn prepare_erased(&self, args: Map<String, Value>) -> Map<String, Value> {
        self.0.prepare_arguments(args)
    }

    fn execute_erased<'a>(
        &'a self,
        tool_call_id: &'a str,
        args: Map<String, Value>,
        validator: Option<&'a ArgumentValidator>,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> BoxFuture<'a, Result<AgentToolResult, ToolCallFailure>> {
        async move {
            let args = match validator {
                Some(validator) => validator.validate(&args)?,
                None => args,
            };
            Ok(self
                .0
                .execute(tool_call_id, args, cancel, on_update)
                .await?)
        }
        .boxed()
    }
}

/// Why a tool call produced an error result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolCallFailure {
    /// The arguments failed validation.
    #[error(transparent)]
    Validation(#[from] ValidationError),
    /// The tool returned an error.
    #[error(transparent)]
    Tool(#[from] ToolError),
}

impl<T: AgentTool> ErasedTool for T {
    fn prepare_erased(&self, args: Map<String, Value>) -> Map<String, Value> {
        self.prepare_arguments(args)
    }

    fn execute_erased<'a>(
        &'a self,
        tool_call_id: &'a str,
        args: Map<String, Value>,
        validator: Option<&'a ArgumentValidator>,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> BoxFuture<'a, Result<AgentToolResult, ToolCallFailure>> {
        async move {
            let typed: T::Args = match validator {
                Some(validator) => validator.parse(&args)?,
                None => serde_json::from_value(Value::Object(args))
                    .map_err(|e| ToolError::new(format!("Invalid arguments: {e}")))?,
            };
            Ok(self.execute(tool_call_id, typed, cancel, on_update).await?)
        }
        .boxed()
    }
}

/// A tool ready for an agent: its definition and validator are built once, and cloning shares them.
#[derive(Clone)]
pub struct AgentToolHandle {
    definition: Arc<Tool>,
    execution_mode: Option<ToolExecution>,
    output_schema: Option<Arc<Value>>,
    replay: Option<Replay>,
    label: Arc<str>,
    validator: Arc<ArgumentValidator>,
    inner: Arc<dyn ErasedTool>,
}

impl std::fmt::Debug for AgentToolHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentToolHandle")
            .field("name", &self.definition.name)
            .finish_non_exhaustive()
    }
}

impl AgentToolHandle {
    /// Wraps a tool, deriving and compiling its schema.
    pub fn new<T: AgentTool>(tool: T) -> Result<Self, SchemaError> {
        let definition = tool_definition::<T::Args>(tool.name(), tool.description())?;
        let validator = ArgumentValidator::new(&definition)?;
        Ok(Self {
            definition: Arc::new(definition),
            execution_mode: tool.execution_mode(),
            output_schema: tool.output_schema().map(Arc::new),
            replay: tool.replay(),
            label: Arc::from(tool.label()),
            validator: Arc::new(validator),
            inner: Arc::new(tool),
        })
    }

    /// Wraps a tool whose definition is data (see [`DynamicAgentTool`]). Fails when the
    /// parameters are not an object schema or do not compile.
    pub fn from_definition(
        definition: Tool,
        label: impl Into<String>,
        tool: impl DynamicAgentTool,
    ) -> Result<Self, SchemaError> {
        if definition.parameters.get("type").and_then(Value::as_str) != Some("object") {
            return Err(SchemaError {
                tool: definition.name,
                reason: "the parameters must be an object schema (\"type\": \"object\")"
                    .to_string(),
            });
        }
        let validator = ArgumentValidator::new(&definition)?;
        Ok(Self {
            execution_mode: None,
            output_schema: None,
            replay: None,
            label: Arc::from(label.into()),
            definition: Arc::new(definition),
            validator: Arc::new(validator),
            inner: Arc::new(Dynamic(tool)),
        })
    }

    /// The definition sent to the model.
    pub fn definition(&self) -> &Tool {
        &self.definition
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The tool's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The tool's own execution mode, if it has one (see [`AgentTool::execution_mode`]).
    pub fn execution_mode(&self) -> Option<ToolExecution> {
        self.execution_mode
    }

    /// Sets the tool's execution mode (e.g. `Sequential` for an MCP tool that must not run
    /// beside others).
    pub fn with_execution_mode(mut self, mode: ToolExecution) -> Self {
        self.execution_mode = Some(mode);
        self
    }

    /// The schema of the tool's structured content, if it declares one (see
    /// [`AgentTool::output_schema`]).
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_deref()
    }

    /// Sets the schema of the tool's structured content.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self
    }

    /// Replaces the description sent to the model (the schema and behaviour stay): e.g. a
    /// shorter text with examples for a small model. A clone made before keeps its own.
    ///
    /// ```
    /// use oxpi_agent_core::prelude::*;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// #[serde(crate = "oxpi_agent_core::serde")]
    /// #[schemars(crate = "oxpi_agent_core::schemars")]
    /// struct Args {
    ///     /// The city.
    ///     city: String,
    /// }
    ///
    /// let weather = AgentToolHandle::from_fn("get_weather", "Current weather of a city", |a: Args| async move {
    ///     Ok::<_, ToolError>(format!("Sunny in {}", a.city))
    /// })
    /// .unwrap();
    /// let short = weather.clone().with_description("Weather of CITY, e.g. get_weather(Paris)");
    /// assert_eq!(short.definition().description, "Weather of CITY, e.g. get_weather(Paris)");
    /// assert_eq!(weather.definition().description, "Current weather of a city");
    /// assert_eq!(short.definition().parameters, weather.definition().parameters);
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.definition).description = description.into();
        self
    }

    /// The tool's replay policy, if it declares one (see [`AgentTool::replay`]).
    pub fn replay(&self) -> Option<Replay> {
        self.replay
    }

    /// Sets the tool's replay policy.
    pub fn with_replay(mut self, replay: Replay) -> Self {
        self.replay = Some(replay);
        self
    }

    /// Applies the tool's [`AgentTool::prepare_arguments`] to `args`, checks the result against
    /// the tool's schema and returns it normalized (see [`ArgumentValidator::validate`]).
    pub fn validate(
        &self,
        args: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ValidationError> {
        self.validator
            .validate(&self.inner.prepare_erased(args.clone()))
    }

    /// Prepares and validates `args` (see [`validate`](Self::validate)) and runs the tool.
    pub async fn execute(
        &self,
        tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolCallFailure> {
        let args = self.inner.prepare_erased(args);
        self.inner
            .execute_erased(tool_call_id, args, Some(&self.validator), cancel, on_update)
            .await
    }

    /// Runs the tool on arguments that already passed [`validate`](Self::validate).
    pub(crate) async fn execute_validated(
        &self,
        tool_call_id: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<AgentToolResult, ToolCallFailure> {
        self.inner
            .execute_erased(tool_call_id, args, None, cancel, on_update)
            .await
    }
}

/// An allowed tool call handed to an [`ExecuteToolFn`](crate::ExecuteToolFn): the tool, the call
/// and its validated arguments. [`run`](Self::run) runs the tool as the agent would have.
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolInvocation {
    /// The tool called.
    pub tool: AgentToolHandle,
    /// The call's id (the model's).
    pub tool_call_id: String,
    /// The arguments, prepared and validated.
    pub args: Map<String, Value>,
    /// Fires when the run is aborted.
    pub cancel: CancellationToken,
    /// Receives partial results.
    pub on_update: ToolUpdateFn,
}

impl std::fmt::Debug for ToolInvocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInvocation")
            .field("tool", &self.tool.name())
            .field("tool_call_id", &self.tool_call_id)
            .finish_non_exhaustive()
    }
}

impl ToolInvocation {
    /// Runs the tool on the validated arguments (what the agent does without an
    /// [`ExecuteToolFn`](crate::ExecuteToolFn)).
    pub async fn run(self) -> Result<AgentToolResult, ToolCallFailure> {
        self.tool
            .execute_validated(&self.tool_call_id, self.args, self.cancel, self.on_update)
            .await
    }
}

/// How a batch of tool calls runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolExecution {
    /// All at once; results are still recorded in call order.
    #[default]
    Parallel,
    /// One after another, in call order.
    Sequential,
}

/// Whether a call whose outcome is unknown (the run died while it ran) may be run again (pi's
/// `replay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Replay {
    /// Never run it again (it had effects: a write, a payment).
    Never,
    /// Running it again is safe (it only reads).
    Safe,
}
