//! Typed output in one call: [`extract`] asks the model for a `T` through a forced tool whose
//! schema is `T`'s, validates the arguments, gives the model one repair turn when they do not
//! match, and returns the `T` or a clear error.

use std::future::Future;
use std::sync::{Arc, Mutex};

use oxpi_ai::{Message, ToolChoice};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, AgentError, PromptInput};
use crate::options::AgentOptions;
use crate::tool::{AgentTool, AgentToolHandle, AgentToolResult, ToolError, ToolUpdateFn};

/// The tool the model answers through.
pub const EXTRACT_TOOL: &str = "respond";

struct Respond<T> {
    answer: Arc<Mutex<Option<T>>>,
}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> AgentTool for Respond<T> {
    type Args = T;

    fn name(&self) -> &str {
        EXTRACT_TOOL
    }

    fn description(&self) -> &str {
        "Give the answer, as arguments matching this schema."
    }

    fn execute(
        &self,
        _tool_call_id: &str,
        args: T,
        _cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> impl Future<Output = Result<AgentToolResult, ToolError>> + Send {
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(args);
        async { Ok(AgentToolResult::text("Received.").terminating()) }
    }
}

/// Asks the model of `options` for a `T` about `input` and returns it.
///
/// The model must call the tool [`EXTRACT_TOOL`] (forced with [`ToolChoice::Tool`] where the
/// API has it); its arguments are validated against `T`'s JSON Schema. Arguments that do not
/// match go back to the model as an error result and it gets one more turn; a second miss, a
/// reply without the call or a failed run is [`AgentError::Extract`] or [`AgentError::Run`].
/// The tools, turn limit and tool choice of `options` are replaced.
///
/// ```
/// use oxpi_agent_core::prelude::*;
/// # use oxpi_agent_core::oxpi_ai::{faux::{FauxProvider, FauxReply}, ProviderRegistry};
///
/// #[derive(Deserialize, JsonSchema, Debug, PartialEq)]
/// #[serde(crate = "oxpi_agent_core::serde")]
/// #[schemars(crate = "oxpi_agent_core::schemars")]
/// struct Person { name: String, age: u32 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), AgentError> {
/// # let faux = FauxProvider::new();
/// # faux.push(FauxReply::tool_call("respond", json!({"name": "Ada", "age": 36})));
/// # let mut registry = ProviderRegistry::new();
/// # registry.register(faux.clone());
/// # let options = AgentOptions::new(faux.model()).with_registry(registry);
/// let person: Person = oxpi_agent_core::extract(options, "Ada Lovelace, 36, mathematician").await?;
/// assert_eq!(person, Person { name: "Ada".into(), age: 36 });
/// # Ok(())
/// # }
/// ```
pub async fn extract<T>(
    options: AgentOptions,
    input: impl Into<PromptInput>,
) -> Result<T, AgentError>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    let answer = Arc::new(Mutex::new(None));
    let tool = AgentToolHandle::new(Respond::<T> {
        answer: answer.clone(),
    })
    .map_err(|e| AgentError::Extract(format!("the type has no usable schema: {e}")))?;
    let mut options = options.with_max_turns(2);
    options.tools = vec![tool];
    options.stream_options.tool_choice = Some(ToolChoice::Tool(EXTRACT_TOOL.to_string()));
    let agent = Agent::new(options);
    let result = agent.prompt(input).await;
    if let Some(value) = answer.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Ok(value);
    }
    let last_error = agent.messages().iter().rev().find_map(|m| match m {
        Message::ToolResult(r) if r.is_error => Some(r.text_content()),
        _ => None,
    });
    match (result, last_error) {
        (_, Some(error)) => Err(AgentError::Extract(format!(
            "the model's answer did not match the schema after one repair turn: {error}"
        ))),
        (Err(e), None) => Err(e),
        (Ok(_), None) => Err(AgentError::Extract(format!(
            "the model replied without calling {EXTRACT_TOOL}"
        ))),
    }
}
