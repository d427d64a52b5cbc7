//! The scripted durable agent service (see `oxpi_durable::scripted`), for the crate's tests.

#[tokio::main]
async fn main() -> Result<(), String> {
    oxpi_durable::scripted::serve_from_env().await
}
