//! What a node says at start-up about gaps in its set-up that do not stop it: warnings in the
//! log for what would otherwise show only later, as files other nodes cannot find or scans that
//! fail to be read.

use lector_core::config::Config;
use lector_store::Backend;

/// Logs a warning for each gap in this node's set-up.
pub fn warn_of_gaps(config: &Config) {
    let ocr = lector_extract::ocr::Ocr::new(&config.extract).installation_problem();
    for gap in gaps(config, ocr) {
        tracing::warn!("{gap}");
    }
}

/// The gaps in `config`, with what the OCR check found (`ocr`).
fn gaps(config: &Config, ocr: Option<String>) -> Vec<String> {
    let mut found = Vec::new();
    let shared_database = Backend::of_url(&config.database_url()) == Some(Backend::Postgres);
    if shared_database && !config.blob_url().starts_with("s3://") {
        found.push(format!(
            "the database is PostgreSQL but uploaded files are kept in this node's directory {}: \
             other nodes sharing the database cannot read them; set blob_url to an s3:// bucket \
             when more than one node serves or works",
            config.blob_url()
        ));
    }
    found.extend(ocr);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_database_with_local_files_is_a_gap() {
        let mut config = Config::default();
        assert!(gaps(&config, None).is_empty(), "SQLite keeps its files beside it");
        config.database_url = Some(lector_core::config::Secret::new("postgres://lector@db/lector"));
        let said = gaps(&config, Some("OCR lacks ara".into()));
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(said[0].contains("set blob_url to an s3:// bucket"), "{said:?}");
        config.blob_url = Some("s3://lector-blobs/prod".into());
        assert_eq!(gaps(&config, None), Vec::<String>::new());
    }
}
