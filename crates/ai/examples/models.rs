//! Prints the model catalogue: `cargo run -p oxpi-ai --example models -- [--provider P] [--json]`.
//!
//! With `--json`, one model per line in pi's JSON shape (what pi-ai's `getModels` returns);
//! without, a table: provider, id, API, context window, output limit, input/output price.

use std::io::Write;

fn main() {
    let mut provider: Option<String> = None;
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--provider" => match args.next() {
                Some(p) => provider = Some(p),
                None => fail("--provider needs a name"),
            },
            "--json" => json = true,
            "-h" | "--help" => {
                println!("usage: models [--provider P] [--json]");
                return;
            }
            other => fail(&format!("unexpected argument `{other}`")),
        }
    }
    let models = match &provider {
        Some(p) => oxpi_ai::models::models(p),
        None => oxpi_ai::models::builtin_models().to_vec(),
    };
    if models.is_empty() {
        let known = oxpi_ai::models::providers().join(", ");
        fail(&format!("no models for that provider; providers: {known}"));
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for model in &models {
        let line = if json {
            match serde_json::to_string(model) {
                Ok(line) => line,
                Err(e) => fail(&format!("could not write {}: {e}", model.id)),
            }
        } else {
            format!(
                "{:<24} {:<48} {:<24} {:>9} {:>7} ${}/${}",
                model.provider,
                model.id,
                model.api,
                model.context_window,
                model.max_tokens,
                model.cost.input,
                model.cost.output
            )
        };
        // A closed pipe (`| head`) ends the listing quietly.
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
}

fn fail(text: &str) -> ! {
    eprintln!("error: {text}");
    std::process::exit(2)
}
