//! Starts the embedded local model and serves it until Ctrl-C.
//!
//! `cargo run -p oxpi-local --example serve` prints the OpenAI-compatible base URL,
//! e.g. `http://127.0.0.1:41234/v1`, for curl or any OpenAI client. The OXPI_*
//! variables apply (see `LocalModelConfig::from_env`).

use oxpi_local::{start, LocalModelConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = start(&LocalModelConfig::from_env()).await?;
    let model = server.model();
    println!("{} (model id {}); Ctrl-C to stop", model.base_url, model.id);
    tokio::signal::ctrl_c().await?;
    let status = server.shutdown().await?;
    eprintln!("server stopped ({status})");
    Ok(())
}
