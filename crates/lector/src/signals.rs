//! The signals an operator sends a running `serve` or `worker`, besides the first SIGTERM or
//! Ctrl-C that starts the graceful stop (`lector_api::shutdown_signal`).
//!
//! A second one ends the process at once: the graceful stop may wait half a minute for open
//! requests and a minute for running jobs, and an operator who pressed Ctrl-C twice has decided
//! not to wait. Nothing is lost by it: a job still running goes back to the queue when its lease
//! ends, as after a crash. SIGHUP, whose default action would end the process without any of the
//! graceful stop (a closed terminal, or `kill -HUP` sent out of habit to reload), is logged and
//! otherwise ignored: there is nothing to reload by hand.

/// The exit status after a second signal: 128 + SIGINT, as shells report an interrupted command.
pub const FORCED_EXIT: i32 = 130;

/// From the first shutdown signal on: the next SIGTERM or SIGINT exits the process with
/// [`FORCED_EXIT`]. The signals are registered before this returns, so none sent after it is
/// missed.
pub fn exit_on_second_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut interrupt)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
        else {
            return;
        };
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = interrupt.recv() => {}
            }
            tracing::warn!(
                "second shutdown signal: exiting now; jobs still running go back to the queue when their leases end"
            );
            std::process::exit(FORCED_EXIT);
        });
    }
}

/// Keeps SIGHUP from ending the process, for as long as it runs.
pub fn ignore_hangups() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangups) = signal(SignalKind::hangup()) else {
            tracing::warn!("SIGHUP cannot be caught; it would end the process without a graceful stop");
            return;
        };
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                tracing::info!(
                    "SIGHUP ignored: TLS certificates are read again when their files change; restart to apply a changed configuration"
                );
            }
        });
    }
}
