//! The rows of one read-only query on a PostgreSQL database, as CSV.
//!
//! Layers of defence, since the query is the client's: the statement must start with SELECT or
//! WITH; it is sent as one prepared statement (PostgreSQL refuses several commands in one), so
//! nothing can end the transaction it runs in; that transaction is `READ ONLY` with a
//! `statement_timeout`; and the query is wrapped as a subquery with a row limit. The database's
//! host passes the same address guard as any other source, and the connection goes to the
//! checked address. Nothing of the server's own PostgreSQL settings reaches the source: sqlx's
//! options are set from the credential's URL (PGPASSWORD and ~/.pgpass are never read), sqlx
//! makes no TLS handshake (so its PGSSLCERT, PGSSLKEY and PGSSLROOTCERT go unused), and the
//! relay drops the one start-up parameter sqlx still takes from the environment (`options`,
//! from PGOPTIONS).
//!
//! TLS follows the URL's `sslmode`: `disable`, `require` (encrypted, certificate unchecked) or
//! `verify-full` (a certificate from the system's trusted roots, valid for the host name); the
//! default is `verify-full`, except for a loopback host (`localhost`, 127.0.0.0/8, ::1), where it
//! is `disable`. libpq's `prefer` and `allow`, which fall back to plain text without a word, are
//! refused. The connection is this module's own ([`relay`]): it goes to the address the guard
//! checked (a name that resolves elsewhere the second time is never dialled), the handshake
//! names the host ([`tls`]), and sqlx speaks plain protocol to it through a private Unix socket,
//! so every byte the server sends passes a check of its length before sqlx reserves room for it.

mod relay;
mod tls;

use crate::Limits;
use crate::guard::NetPolicy;
use crate::http::too_large;
use futures_util::TryStreamExt;
use lector_core::{Error, ErrorCode, Result};
use relay::{Budget, Relay};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgSslMode};
use sqlx::{Column, Connection, Executor, Statement};
use std::net::IpAddr;
use url::Url;

/// How the connection to a database source is protected (the URL's `sslmode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Plain text.
    Disable,
    /// TLS, whatever certificate the server shows.
    Require,
    /// TLS with a certificate from a trusted root, valid for the host name.
    VerifyFull,
}

impl SslMode {
    /// The mode a URL without `sslmode` gets: `verify-full`, except on loopback, where a
    /// database seldom has a certificate and the bytes never leave the machine.
    fn default_for(host: &str) -> SslMode {
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<IpAddr>()
                .is_ok_and(|ip| crate::guard::canonical(ip).is_loopback());
        if loopback {
            SslMode::Disable
        } else {
            SslMode::VerifyFull
        }
    }

    fn parse(value: &str) -> Result<SslMode, String> {
        match value {
            "disable" => Ok(SslMode::Disable),
            "require" => Ok(SslMode::Require),
            "verify-full" => Ok(SslMode::VerifyFull),
            other => Err(format!(
                "takes sslmode disable, require or verify-full, not sslmode={other}"
            )),
        }
    }
}

/// Where and as whom to connect, from a credential's URL.
#[derive(Clone)]
pub(crate) struct Target {
    host: String,
    port: u16,
    username: String,
    password: String,
    database: String,
    ssl: SslMode,
}

/// Parses a `postgres://user:password@host:port/database?sslmode=...` URL. Query parameters
/// other than one `sslmode` are refused: they could redirect the connection (`host=`) or read
/// files of this server (`sslrootcert=`).
pub(crate) fn connect_options(text: &str) -> Result<Target, String> {
    let url =
        Url::parse(text).map_err(|_| "must be a URL such as postgres://user:password@host:5432/database".to_owned())?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err("must start with postgres://".into());
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) if !d.is_empty() => d.to_owned(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        _ => return Err("must name the database's host".into()),
    };
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let username = decode(url.username());
    if username.is_empty() {
        return Err("must name the user, as postgres://user:password@host/database".into());
    }
    let mut ssl = None;
    for (key, value) in url.query_pairs() {
        match &*key {
            "sslmode" if ssl.is_some() => return Err("gives sslmode twice".into()),
            "sslmode" => ssl = Some(SslMode::parse(&value)?),
            _ => return Err(format!("takes no parameter {key}={value}, only sslmode")),
        }
    }
    let database = decode(url.path().trim_start_matches('/'));
    Ok(Target {
        port: url.port().unwrap_or(5432),
        password: url.password().map(decode).unwrap_or_default(),
        database: if database.is_empty() {
            username.clone()
        } else {
            database
        },
        username,
        ssl: ssl.unwrap_or_else(|| SslMode::default_for(&host)),
        host,
    })
}

/// Runs the query and answers its rows as CSV: the column names first, then one line a row.
pub(crate) async fn fetch(policy: &NetPolicy, limits: &Limits, url: &str, query: &str) -> Result<Vec<u8>> {
    let target = connect_options(url).map_err(|e| Error::bad_request(format!("the credential's URL {e}")))?;
    let query = check_query(query)?;
    let timeout = limits.timeout;
    tokio::time::timeout(timeout, run(policy, limits, &target, query))
        .await
        .unwrap_or_else(|_| {
            Err(Error::bad_request(format!(
                "the database did not answer within {} seconds",
                timeout.as_secs()
            )))
        })
}

async fn run(policy: &NetPolicy, limits: &Limits, target: &Target, query: &str) -> Result<Vec<u8>> {
    let addrs = policy.resolve(&target.host, target.port).await?;
    let relay = Relay::open(addrs[0], target, Budget::for_limits(limits)).await?;
    let outcome = converse(&relay, limits, target, query).await;
    if relay.went_over_budget() {
        // Whatever sqlx made of the cut connection, the server sent too much.
        return Err(too_large(limits.max_bytes));
    }
    outcome
}

/// Connects sqlx through the relay, runs the query and closes the session.
async fn converse(relay: &Relay, limits: &Limits, target: &Target, query: &str) -> Result<Vec<u8>> {
    let mut conn = PgConnection::connect_with(&session_options(target, relay))
        .await
        .map_err(|e| db_error(&e, limits))?;
    let outcome = read_only_rows(&mut conn, limits, query).await;
    let _ = conn.close().await;
    outcome
}

/// sqlx's options: the credential's user, password and database, plain protocol to the relay's
/// socket (TLS, when the URL asks for it, is the relay's).
fn session_options(target: &Target, relay: &Relay) -> PgConnectOptions {
    PgConnectOptions::new_without_pgpass()
        .socket(relay.socket_dir())
        .port(target.port)
        .username(&target.username)
        .password(&target.password)
        .database(&target.database)
        .ssl_mode(PgSslMode::Disable)
        .application_name("lector")
        .statement_cache_capacity(0)
}

async fn read_only_rows(conn: &mut PgConnection, limits: &Limits, query: &str) -> Result<Vec<u8>> {
    let fail = |e: sqlx::Error| db_error(&e, limits);
    sqlx::raw_sql("BEGIN TRANSACTION READ ONLY")
        .execute(&mut *conn)
        .await
        .map_err(fail)?;
    let millis = limits.timeout.as_millis().max(1);
    sqlx::raw_sql(&format!("SET LOCAL statement_timeout = {millis}"))
        .execute(&mut *conn)
        .await
        .map_err(fail)?;
    let alias = "lector_source_0d5f";
    let columns_sql = format!("SELECT * FROM (\n{query}\n) AS {alias}");
    let described = conn.prepare(&columns_sql).await.map_err(fail)?;
    let names: Vec<String> = described.columns().iter().map(|c| c.name().to_owned()).collect();
    let mut out = Vec::new();
    write_csv_row(&mut out, names.iter().map(|n| Some(n.as_str())));
    let sql = format!(
        "SELECT ARRAY(SELECT e.value FROM json_each_text(row_to_json({alias})) WITH ORDINALITY AS e(key, value, n) \
         ORDER BY e.n) FROM (\n{query}\n) AS {alias} LIMIT {}",
        limits.max_rows.saturating_add(1)
    );
    let mut rows = sqlx::query_scalar::<_, Vec<Option<String>>>(&sql).fetch(&mut *conn);
    let mut count = 0u64;
    while let Some(values) = rows.try_next().await.map_err(fail)? {
        count += 1;
        if count > limits.max_rows {
            return Err(Error::new(
                ErrorCode::PayloadTooLarge,
                format!(
                    "the query returns more than {} rows, the most a source may deliver; narrow it",
                    limits.max_rows
                ),
            ));
        }
        write_csv_row(&mut out, values.iter().map(Option::as_deref));
        if out.len() as u64 > limits.max_bytes {
            return Err(too_large(limits.max_bytes));
        }
    }
    Ok(out)
}

/// The query without trailing semicolons, when it starts with SELECT or WITH.
fn check_query(query: &str) -> Result<&str> {
    let query = query.trim().trim_end_matches([';', ' ', '\t', '\r', '\n']);
    match leading_keyword(query).as_str() {
        "SELECT" | "WITH" => Ok(query),
        _ => Err(Error::bad_request(
            "only one read-only SELECT or WITH statement may be run",
        )),
    }
}

/// The first word of a statement, after blanks and comments, in upper case.
fn leading_keyword(query: &str) -> String {
    let mut rest = query;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    rest.chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_uppercase()
}

/// One CSV line (RFC 4180 quoting); `None` is an empty field.
fn write_csv_row<'a>(out: &mut Vec<u8>, values: impl Iterator<Item = Option<&'a str>>) {
    for (i, value) in values.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let value = value.unwrap_or_default();
        if value.contains([',', '"', '\n', '\r']) {
            out.push(b'"');
            out.extend_from_slice(value.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(value.as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// A reason for a database failure, by SQLSTATE and error kind, never the server's message.
fn db_error(e: &sqlx::Error, limits: &Limits) -> Error {
    tracing::info!(error = %e, "a database source failed");
    match e {
        sqlx::Error::Database(d) => {
            let code = d.code().map(|c| c.into_owned()).unwrap_or_default();
            let reason = match code.as_str() {
                "28P01" | "28000" => "authentication failed".to_owned(),
                "3D000" => "the database does not exist".to_owned(),
                "25006" => "the query tries to write; a source only reads".to_owned(),
                "57014" => format!("the query ran longer than {} seconds", limits.timeout.as_secs()),
                "42601" => "the query has a syntax error, or is more than one statement".to_owned(),
                "42P01" => "the query names a table that does not exist".to_owned(),
                "42703" => "the query names a column that does not exist".to_owned(),
                "42501" => "permission denied".to_owned(),
                "0A000" => "the query uses something a read-only source query may not (such as a data-modifying WITH)"
                    .to_owned(),
                "53300" => "the database has too many connections".to_owned(),
                _ => format!("the database refused the query (SQLSTATE {code})"),
            };
            Error::bad_request(reason)
        }
        sqlx::Error::Io(io) => io_error(io),
        _ => Error::bad_request("the database could not be reached"),
    }
}

/// A reason for a failed connection to the database, by its kind.
fn io_error(e: &std::io::Error) -> Error {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => Error::bad_request("connection refused"),
        std::io::ErrorKind::TimedOut => Error::bad_request("the connection timed out"),
        _ => Error::bad_request("the database could not be reached"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_select_and_with_pass() {
        for ok in [
            "SELECT 1",
            "  select 1;",
            "-- note\nWITH a AS (SELECT 1) SELECT * FROM a",
            "/* x */ Select 2;;\n",
        ] {
            assert!(check_query(ok).is_ok(), "{ok}");
        }
        for bad in [
            "DELETE FROM t",
            "INSERT INTO t VALUES (1)",
            "drop table t",
            "(SELECT 1)",
            "",
            "-- SELECT",
            "/* SELECT */ UPDATE t SET a = 1",
        ] {
            assert_eq!(check_query(bad).unwrap_err().status(), 400, "{bad}");
        }
        assert_eq!(check_query("SELECT 1; \n").unwrap(), "SELECT 1");
    }

    #[test]
    fn urls_never_fall_back_on_the_environment() {
        let t = connect_options("postgres://ada:p%40ss@db.example.org:6543/sales").unwrap();
        assert_eq!(
            (
                t.host.as_str(),
                t.port,
                t.username.as_str(),
                t.password.as_str(),
                t.database.as_str()
            ),
            ("db.example.org", 6543, "ada", "p@ss", "sales")
        );
        let t = connect_options("postgresql://ada@[::1]").unwrap();
        assert_eq!(
            (t.host.as_str(), t.password.as_str(), t.database.as_str()),
            ("::1", "", "ada")
        );
        for bad in [
            "postgres://db.example.org/x",
            "postgres://ada@/x",
            "postgres://ada@db/x?host=/var/run/postgresql",
            "postgres://ada@db/x?sslmode=prefer",
            "mysql://ada@db/x",
        ] {
            assert!(connect_options(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sslmode_is_one_of_three_and_verify_full_by_default() {
        let mode = |url: &str| connect_options(url).map(|t| t.ssl);
        for host in ["db.example.org", "203.0.113.7", "[2001:db8::1]", "10.0.0.5"] {
            assert_eq!(
                mode(&format!("postgres://ada@{host}/x")),
                Ok(SslMode::VerifyFull),
                "{host}"
            );
        }
        for host in ["localhost", "127.0.0.1", "127.8.0.1", "[::1]"] {
            assert_eq!(
                mode(&format!("postgres://ada@{host}/x")),
                Ok(SslMode::Disable),
                "{host}"
            );
        }
        assert_eq!(mode("postgres://ada@db/x?sslmode=disable"), Ok(SslMode::Disable));
        assert_eq!(mode("postgres://ada@db/x?sslmode=require"), Ok(SslMode::Require));
        assert_eq!(
            mode("postgres://ada@localhost/x?sslmode=verify-full"),
            Ok(SslMode::VerifyFull)
        );
        for bad in ["prefer", "allow", "verify-ca", "VERIFY-FULL", ""] {
            let err = mode(&format!("postgres://ada@db/x?sslmode={bad}")).unwrap_err();
            assert_eq!(
                err,
                format!("takes sslmode disable, require or verify-full, not sslmode={bad}")
            );
        }
        assert_eq!(
            mode("postgres://ada@db/x?sslmode=disable&sslmode=require").unwrap_err(),
            "gives sslmode twice"
        );
    }

    #[test]
    fn csv_quoting() {
        let mut out = Vec::new();
        write_csv_row(
            &mut out,
            [Some("a"), None, Some("b,c"), Some("say \"hi\"\n")].into_iter(),
        );
        assert_eq!(String::from_utf8(out).unwrap(), "a,,\"b,c\",\"say \"\"hi\"\"\n\"\r\n");
    }
}
