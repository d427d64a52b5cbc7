//! An MCP server over stdio for oxpi-mcp's fault tests, built on rmcp's server side. Its tools
//! misbehave on purpose:
//!
//! - `echo {text}`: the text back; `add {a, b}`: the sum as text and as structured content;
//! - `crash`: the process exits mid-call; `hang`: never answers (until cancelled);
//! - `slow {ms}`: answers after `ms` milliseconds;
//! - `huge {bytes}`: a text result of that many bytes; `image`: a PNG; `link`: a resource link;
//! - `fail`: a result with `isError`; `bad_schema`: listed with a schema that does not compile;
//! - `pair`: a tuple argument (`prefixItems`), which Gemini's schema dialect cannot express;
//! - `grow`: adds the tool `late` and sends `notifications/tools/list_changed`.
//!
//! With `OXPI_MCP_TEST_LOG=<file>`, each call's start, end and cancellation is appended to the
//! file as a line (`call hang`, `cancelled hang`), so tests can see what reached the server.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, Resource, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};

/// A 1×1 transparent PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

#[derive(Clone, Default)]
struct FaultServer {
    grown: Arc<AtomicBool>,
}

fn object(schema: Value) -> Arc<Map<String, Value>> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

fn log(line: &str) {
    if let Ok(path) = std::env::var("OXPI_MCP_TEST_LOG") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}

impl FaultServer {
    fn tools(&self) -> Vec<Tool> {
        let none = || object(json!({"type": "object", "properties": {}}));
        let mut tools = vec![
            Tool::new(
                "echo",
                "Repeat the text",
                object(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"]
                })),
            ),
            Tool::new(
                "add",
                "Add two integers",
                object(json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"]
                })),
            ),
            Tool::new("crash", "Exit the server mid-call", none()),
            Tool::new("hang", "Never answer", none()),
            Tool::new(
                "slow",
                "Answer after ms milliseconds",
                object(json!({
                    "type": "object",
                    "properties": {"ms": {"type": "integer", "minimum": 0}},
                    "required": ["ms"]
                })),
            ),
            Tool::new(
                "huge",
                "A text result of the given size",
                object(json!({
                    "type": "object",
                    "properties": {"bytes": {"type": "integer", "minimum": 0}},
                    "required": ["bytes"]
                })),
            ),
            Tool::new("image", "A PNG image", none()),
            Tool::new("link", "A link to a resource", none()),
            Tool::new("fail", "A result marked as an error", none()),
            Tool::new(
                "bad_schema",
                "Its schema names a type that does not exist",
                object(json!({
                    "type": "object",
                    "properties": {"x": {"type": "strnig"}}
                })),
            ),
            Tool::new(
                "pair",
                "Takes a point as a tuple, which Gemini's schemas cannot express",
                object(json!({
                    "type": "object",
                    "properties": {"point": {
                        "type": "array",
                        "prefixItems": [{"type": "number"}, {"type": "number"}]
                    }}
                })),
            ),
            Tool::new("grow", "Add the tool `late`", none()),
        ];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new("late", "Added by grow", none()));
        }
        tools
    }

    async fn call(
        &self,
        name: &str,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let int = |key: &str| args.get(key).and_then(Value::as_u64).unwrap_or(0);
        match name {
            "echo" => CallToolResult::success(vec![ContentBlock::text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            )]),
            "add" => {
                let sum = args.get("a").and_then(Value::as_i64).unwrap_or(0)
                    + args.get("b").and_then(Value::as_i64).unwrap_or(0);
                let mut result = CallToolResult::success(vec![ContentBlock::text(sum.to_string())]);
                result.structured_content = Some(json!({"sum": sum}));
                result
            }
            "crash" => std::process::exit(3),
            "hang" => {
                context.ct.cancelled().await;
                log("cancelled hang");
                CallToolResult::error(vec![ContentBlock::text("cancelled")])
            }
            "slow" => {
                tokio::time::sleep(Duration::from_millis(int("ms"))).await;
                CallToolResult::success(vec![ContentBlock::text("slept")])
            }
            "huge" => CallToolResult::success(vec![ContentBlock::text(
                "x".repeat(usize::try_from(int("bytes")).unwrap_or(0)),
            )]),
            "image" => CallToolResult::success(vec![
                ContentBlock::text("a pixel:"),
                ContentBlock::image(PNG, "image/png"),
            ]),
            "link" => CallToolResult::success(vec![ContentBlock::resource_link(
                Resource::new("file:///srv/report.txt", "report")
                    .with_description("The weekly report"),
            )]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("the disk is full")]),
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            "pair" => CallToolResult::success(vec![ContentBlock::text("paired")]),
            "late" => CallToolResult::success(vec![ContentBlock::text("late")]),
            other => CallToolResult::error(vec![ContentBlock::text(format!("no tool {other}"))]),
        }
    }
}

impl ServerHandler for FaultServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        log(&format!("call {}", request.name));
        let result = self.call(&request.name, &args, &context).await;
        log(&format!("done {}", request.name));
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let service = match FaultServer::default().serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        Err(error) => {
            eprintln!("oxpi-mcp-test-server: {error}");
            std::process::exit(1);
        }
    };
    let _ = service.waiting().await;
}
