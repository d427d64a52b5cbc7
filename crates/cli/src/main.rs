//! `oxpi`, the command: pi's command line over oxpi's agent, tools and sessions, with pi's
//! print (`-p`), JSON (`--mode json`) and RPC (`--mode rpc`) interfaces.

mod args;
mod auth_file;
mod compact;
mod config;
mod context_files;
mod file_args;
mod interactive;
mod json_event;
mod list_models;
mod loaded;
mod login_command;
mod logins;
mod model_choice;
mod model_scope;
mod print;
mod profile;
mod project_files;
mod rpc;
mod run_keys;
mod runtime;
mod session_choice;
mod signals;
mod tool_choice;

use std::io::Read;

use args::{Args, Mode};
use runtime::Runtime;

/// The prompts of a run, and the first one's images: `@file` text (pi's) before the first
/// prompt, piped stdin (when it is not a terminal) before that.
fn prompts(args: &Args) -> Result<(Vec<String>, Vec<oxpi_ai::UserContent>), String> {
    use std::io::IsTerminal;
    let cwd = std::env::current_dir()
        .map_err(|e| format!("the working directory cannot be read: {e}"))?;
    let files = file_args::collect(&args.messages, &cwd)?;
    let mut messages = files.messages;
    if !files.text.is_empty() {
        match messages.first_mut() {
            Some(first) => *first = format!("{}{first}", files.text),
            None => messages.push(files.text),
        }
    }
    if args.mode() != Mode::Rpc && !std::io::stdin().is_terminal() {
        let mut piped = String::new();
        if std::io::stdin().read_to_string(&mut piped).is_ok() && !piped.trim().is_empty() {
            match messages.first_mut() {
                Some(first) => *first = format!("{piped}\n\n{first}"),
                None => messages.push(piped),
            }
        }
    }
    Ok((messages, files.images))
}

/// `--list-models [search]`: the table on stdout, exit 0 (a broken `auth.json`: exit 1).
fn list_models_command(search: &str) -> i32 {
    let env = |name: &str| std::env::var(name).ok();
    let agent_dir = oxpi_session::default_agent_dir();
    let auth = match &agent_dir {
        Some(dir) => match auth_file::AuthKeys::load(dir) {
            Ok(auth) => auth,
            Err(e) => {
                eprintln!("{e}");
                return 1;
            }
        },
        None => auth_file::AuthKeys::default(),
    };
    let custom = config::models_json::CustomModels::load(agent_dir.as_deref(), &env);
    for error in &custom.errors {
        eprintln!("Warning: {error}");
    }
    let models = list_models::available(&custom, &auth, &env);
    print!("{}", list_models::render(models, Some(search)));
    0
}

/// `--export <file> [output]`: the session as an HTML page; `Exported to: <path>` and exit 0,
/// or the error and exit 1 (pi's).
fn export_command(file: &std::path::Path, output: Option<&str>) -> i32 {
    let written = std::env::current_dir()
        .map_err(|e| format!("the working directory cannot be read: {e}"))
        .and_then(|cwd| interactive::export_file(file, output, &cwd));
    match written {
        Ok(path) => {
            println!("Exported to: {}", path.display());
            0
        }
        Err(e) => {
            eprintln!("Error: {e}");
            1
        }
    }
}

/// Runs the command; returns its exit code and whether a signal ended it.
async fn run(args: Args) -> (i32, bool) {
    let mut ended_by_signal = false;
    let code = run_until_signal(args, &mut ended_by_signal).await;
    (code, ended_by_signal)
}

async fn run_until_signal(args: Args, ended_by_signal: &mut bool) -> i32 {
    if let Err(e) = args.check() {
        eprintln!("{e}");
        return 2;
    }
    if let Some(file) = &args.export {
        return export_command(file, args.messages.first().map(String::as_str));
    }
    if let Some(search) = &args.list_models {
        return list_models_command(search);
    }
    let interactive = interactive::wanted(&args);
    let (prompts, images) = match prompts(&args) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if args.mode() != Mode::Rpc && prompts.is_empty() && !interactive {
        eprintln!("oxpi: no prompt given (the interactive mode needs a terminal on stdin and stdout: use -p \"…\", --mode json \"…\" or --mode rpc)");
        return 2;
    }
    let runtime = match Runtime::setup(&args).await {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if interactive {
        // The interactive mode catches SIGTERM/SIGHUP itself: it aborts the run (killing its
        // command trees) and gives the terminal back before it returns 143/129.
        let first = Some(prompts.join("\n\n")).filter(|p| !p.is_empty());
        let mut code =
            interactive::run(runtime.clone(), first, args.base_url.clone(), args.verbose).await;
        if let Some(error) = runtime.take_session_errors() {
            eprintln!("oxpi: {error}");
            code = code.max(1);
        }
        let commands = runtime.bash.commands.clone();
        let _ = tokio::task::spawn_blocking(move || commands.kill_all()).await;
        runtime.shutdown().await;
        return code;
    }
    let mut signals = match signals::Signals::install() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("oxpi: could not catch SIGTERM and SIGHUP: {e}");
            return 1;
        }
    };
    let mode = async {
        match args.mode() {
            Mode::Text => print::run_print(&runtime, &prompts, &images).await,
            Mode::Json => print::run_json(&runtime, &prompts, &images).await,
            Mode::Rpc => rpc::run(runtime.clone()).await,
        }
    };
    let code = tokio::select! {
        mut code = mode => {
            // pi's append throws: a conversation that is not saved fails the command.
            if let Some(error) = runtime.take_session_errors() {
                eprintln!("oxpi: {error}");
                code = code.max(1);
            }
            code
        }
        code = signals.recv() => {
            *ended_by_signal = true;
            // pi: the tracked command trees first, then the rest of the shutdown.
            let commands = runtime.bash.commands.clone();
            let _ = tokio::task::spawn_blocking(move || commands.kill_all()).await;
            code
        }
    };
    tokio::select! {
        _ = runtime.shutdown() => {}
        _ = signals.recv() => {}
    }
    code
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if let Some(command) = login_command::parse(argv.get(1..).unwrap_or_default()) {
        let code = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => {
                let code = rt.block_on(login_command::run(command));
                // A paste prompt may still wait on stdin after the browser's callback won.
                rt.shutdown_background();
                code
            }
            Err(e) => {
                eprintln!("oxpi: could not start the async runtime: {e}");
                1
            }
        };
        std::process::exit(code);
    }
    let args = match Args::parse_from_argv(argv) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    let code = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => {
            let (code, ended_by_signal) = rt.block_on(run(args));
            if ended_by_signal {
                // RPC's stdin read may block for ever (the caller keeps the pipe open): the
                // runtime is not waited for.
                rt.shutdown_background();
            }
            code
        }
        Err(e) => {
            eprintln!("oxpi: could not start the async runtime: {e}");
            1
        }
    };
    std::process::exit(code);
}
