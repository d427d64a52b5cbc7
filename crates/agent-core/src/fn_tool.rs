//! Closure tools: [`AgentToolHandle::from_fn`] turns one async function of typed arguments into a
//! tool, for the common case where a struct and an [`AgentTool`] impl would be ceremony.

use std::future::Future;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::tool::{AgentTool, AgentToolHandle, AgentToolResult, ToolError, ToolUpdateFn};
use oxpi_ai::tool::SchemaError;

impl From<String> for AgentToolResult {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for AgentToolResult {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

/// The [`AgentTool`] behind [`AgentToolHandle::from_fn`].
struct FnTool<A, F> {
    name: String,
    description: String,
    run: F,
    args: PhantomData<fn(A)>,
}

impl<A, F, Fut, R, E> AgentTool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Into<AgentToolResult>,
    E: std::fmt::Display,
{
    type Args = A;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn execute(
        &self,
        _tool_call_id: &str,
        args: A,
        _cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> impl Future<Output = Result<AgentToolResult, ToolError>> + Send {
        let future = (self.run)(args);
        async move {
            future
                .await
                .map(Into::into)
                .map_err(|e| ToolError::new(e.to_string()))
        }
    }
}

impl AgentToolHandle {
    /// A tool made of one async function: `run` gets the arguments (their JSON Schema comes from
    /// `A`'s `JsonSchema` derive; they are validated before `run` sees them) and returns text or
    /// an [`AgentToolResult`]; its error's text goes to the model as an error result. The run's
    /// abort does not reach `run` (implement [`AgentTool`] for that).
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
    /// assert_eq!(weather.definition().parameters["required"], serde_json::json!(["city"]));
    /// ```
    pub fn from_fn<A, F, Fut, R, E>(
        name: impl Into<String>,
        description: impl Into<String>,
        run: F,
    ) -> Result<Self, SchemaError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Into<AgentToolResult>,
        E: std::fmt::Display,
    {
        Self::new(FnTool {
            name: name.into(),
            description: description.into(),
            run,
            args: PhantomData,
        })
    }
}
