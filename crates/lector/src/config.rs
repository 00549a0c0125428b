//! Loads the one [`Config`]: defaults, then `lector.toml` (or `--config FILE`), then `LECTOR_*`
//! environment variables (nested keys with `__`, e.g. `LECTOR_MAIL__SMTP_URL`), then flags.

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use lector_core::config::{Config, LogFormat, TlsMode};
use std::path::PathBuf;

/// Flags that override every other layer.
#[derive(clap::Args, Debug, Default)]
pub struct Overrides {
    /// Configuration file (default: lector.toml in the working directory, if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Address and port to listen on (env LECTOR_LISTEN).
    #[arg(long, global = true)]
    listen: Option<String>,
    /// Data directory (env LECTOR_DATA_DIR).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// `on` (TLS here) or `proxy` (plain HTTP behind a trusted TLS proxy).
    #[arg(long, global = true, value_parser = parse_tls)]
    tls: Option<TlsMode>,
    /// Job workers (embedded in serve; run by worker).
    #[arg(long, global = true)]
    workers: Option<usize>,
    /// `text` or `json` log lines (env LECTOR_LOG_FORMAT).
    #[arg(long, global = true, value_parser = parse_log_format)]
    log_format: Option<LogFormat>,
}

fn parse_log_format(text: &str) -> Result<LogFormat, String> {
    match text {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err("expected `text` or `json`".into()),
    }
}

fn parse_tls(text: &str) -> Result<TlsMode, String> {
    match text {
        "on" => Ok(TlsMode::On),
        "proxy" => Ok(TlsMode::Proxy),
        _ => Err("expected `on` or `proxy`".into()),
    }
}

pub fn load(overrides: &Overrides) -> Result<Config, String> {
    let file = overrides.config.clone().unwrap_or_else(|| PathBuf::from("lector.toml"));
    if overrides.config.is_some() && !file.exists() {
        return Err(format!("{} does not exist", file.display()));
    }
    let mut figment = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::file(&file))
        // LECTOR_TEST_* belong to the test suite, not to the service.
        .merge(
            Env::prefixed("LECTOR_")
                .split("__")
                .filter(|key| !key.as_str().to_ascii_lowercase().starts_with("test_")),
        );
    if let Some(listen) = &overrides.listen {
        figment = figment.merge(("listen", listen));
    }
    if let Some(dir) = &overrides.data_dir {
        figment = figment.merge(("data_dir", dir));
    }
    if let Some(workers) = overrides.workers {
        figment = figment.merge(("workers", workers));
    }
    if let Some(tls) = overrides.tls {
        figment = figment.merge(("tls", tls));
    }
    if let Some(format) = overrides.log_format {
        figment = figment.merge(("log_format", format));
    }
    let config: Config = figment.extract().map_err(|e| e.to_string())?;
    config.validate()?;
    Ok(config)
}
