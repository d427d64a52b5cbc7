//! The oxpi Agent: state, events and the run loop.

mod tool;

pub use tool::{
    AgentTool, AgentToolHandle, AgentToolResult, ToolCallFailure, ToolError, ToolUpdateFn,
};
