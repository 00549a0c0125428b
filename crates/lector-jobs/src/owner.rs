//! Who holds a lease: each worker loop signs its claims with its host, the kernel's boot, its
//! process id namespace, its process id and that process's start time. A process that starts on the same host can then
//! tell the leases of a process that died there (killed, crashed) from those of a live one,
//! and hand them back to the queue at once instead of waiting for them to expire. Leases of
//! other hosts, or that cannot be read, are left to expire; the fencing token keeps a late
//! writer out either way.
//!
//! Liveness is read from `/proc`, so the check works on Linux; elsewhere nothing is released
//! early.

use std::sync::OnceLock;

/// This process, as lease owners name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// The host name and the kernel's boot id: a process id means something only within them.
    pub host: String,
    pub pid: u32,
    /// Start time in clock ticks after boot (`/proc/PID/stat`, field 22): tells a reused pid apart.
    pub started: u64,
}

impl Process {
    /// The running process.
    pub fn current() -> &'static Process {
        static CURRENT: OnceLock<Process> = OnceLock::new();
        CURRENT.get_or_init(|| {
            let pid = std::process::id();
            Process {
                host: host(),
                pid,
                started: start_time(pid).unwrap_or(0),
            }
        })
    }

    /// The lease owner of worker loop `n` of this process; unique per start of the process.
    pub fn owner(&self, n: usize) -> String {
        format!("{}/{}/{}/{n}", self.host, self.pid, self.started)
    }

    /// Whether `owner` names a worker of a process of this host that no longer runs.
    pub fn holder_is_gone(&self, owner: &str) -> bool {
        let Some((host, pid, started)) = parse(owner) else {
            return false;
        };
        if host != self.host || self.started == 0 {
            return false;
        }
        if pid == self.pid {
            return started != self.started;
        }
        match start_time(pid) {
            Some(now) => now != started,
            // Gone, if this process could see it: with `/proc` mounted `hidepid` (or systemd's
            // `ProtectProc=invisible`) another user's processes are hidden, and so is pid 1
            // unless it is this user's, so a hidden process is not taken for a dead one.
            None => std::path::Path::new("/proc/1/stat").exists(),
        }
    }
}

/// `host/pid/started/n`, with a host that may itself contain `/`.
fn parse(owner: &str) -> Option<(&str, u32, u64)> {
    let mut parts = owner.rsplitn(4, '/');
    let _n = parts.next()?;
    let started = parts.next()?.parse().ok()?;
    let pid = parts.next()?.parse().ok()?;
    Some((parts.next()?, pid, started))
}

/// The host name, the kernel's boot id and the process id namespace (`pid:[4026531836]`): two
/// containers on one kernel with one host name (host networking) see different processes under
/// the same pid, so neither may judge the other's workers by its own `/proc`.
fn host() -> String {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_owned()).ok();
    let name = read("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".into());
    let boot = read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let pids = std::fs::read_link("/proc/self/ns/pid")
        .map(|link| link.display().to_string())
        .unwrap_or_default();
    format!("{name}:{boot}:{pids}")
}

/// A process's start time in clock ticks after boot, if it runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces; count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_names_the_pid_namespace() {
        if std::path::Path::new("/proc/self/ns/pid").exists() {
            assert!(Process::current().host.ends_with(']'), "{}", Process::current().host);
            assert!(
                Process::current().host.contains(":pid:["),
                "{}",
                Process::current().host
            );
        }
    }

    #[test]
    fn owners_read_back() {
        let me = Process::current();
        let owner = me.owner(3);
        assert_eq!(parse(&owner), Some((me.host.as_str(), me.pid, me.started)));
        assert_eq!(parse("a/b/with/slashes/12/34/0"), Some(("a/b/with/slashes", 12, 34)));
        assert_eq!(parse("3f2a-uuid-0"), None);
    }

    #[test]
    fn a_live_process_is_not_gone_and_a_dead_one_is() {
        let me = Process::current();
        if me.started == 0 {
            eprintln!("notice: no /proc here; leases are only released by expiry");
            return;
        }
        assert!(!me.holder_is_gone(&me.owner(0)), "this process is alive");
        // An earlier run of this very pid (a restart that got the same pid) is gone.
        let earlier = format!("{}/{}/{}/0", me.host, me.pid, me.started - 1);
        assert!(me.holder_is_gone(&earlier));
        // A child that ran and was reaped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let started = start_time(pid);
        child.wait().unwrap();
        if let Some(started) = started {
            assert!(me.holder_is_gone(&format!("{}/{pid}/{started}/0", me.host)));
        }
        // Another host's workers, and owners of the old uuid form, are left to expire.
        assert!(!me.holder_is_gone(&format!("elsewhere:boot/{}/{}/0", me.pid, me.started - 1)));
        assert!(!me.holder_is_gone("6f9c2d3e-0"));
        // The parent of this process runs.
        let parent = std::os::unix::process::parent_id();
        if let Some(started) = start_time(parent) {
            assert!(!me.holder_is_gone(&format!("{}/{parent}/{started}/1", me.host)));
        }
    }
}
