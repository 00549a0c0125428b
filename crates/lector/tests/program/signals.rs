//! The signals an operator sends `lector serve`, besides the first SIGTERM: SIGHUP is logged and
//! ignored, and a second SIGTERM ends a graceful stop that is still waiting for a request.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// A `lector serve` process and the lines of its log.
struct Served {
    child: Child,
    lines: Receiver<String>,
}

impl Served {
    fn start(dir: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lector"))
            .current_dir(dir)
            .env_remove("LECTOR_DATABASE_URL")
            .env("RUST_LOG", "info")
            .args(["serve", "--listen", "127.0.0.1:0", "--tls", "proxy"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        Self { child, lines }
    }

    /// The first line from now on that contains `wanted`; fails the test after 30 s.
    fn logged(&mut self, wanted: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(wanted) => return line,
                Ok(_) => {}
                Err(_) => {
                    let _ = self.child.kill();
                    panic!("the server did not log {wanted:?}");
                }
            }
        }
    }

    fn signal(&self, name: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([name, &pid]).status().unwrap().success());
    }

    /// A new connection's answer to GET /health, as the trusted proxy sends it.
    fn health(&self, address: &str) -> String {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let request = "GET /health HTTP/1.1\r\nhost: lector\r\nx-forwarded-proto: https\r\nconnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = std::io::Read::read_to_string(&mut stream, &mut answer);
        answer
    }
}

#[test]
fn a_hangup_is_ignored_and_a_second_sigterm_ends_the_drain() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(dir.path());
    let line = served.logged("lector is serving");
    let address = line
        .split("address=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the address is logged")
        .to_owned();
    assert!(served.health(&address).starts_with("HTTP/1.1 200"));

    // Its default action would end the process on the spot.
    served.signal("-HUP");
    served.logged("SIGHUP ignored");
    assert!(served.health(&address).starts_with("HTTP/1.1 200"), "still serving");

    // A request whose body never ends keeps the graceful stop waiting for it (30 s).
    let mut stalled = std::net::TcpStream::connect(&address).unwrap();
    let head = "POST /auth/login HTTP/1.1\r\nhost: lector\r\nx-forwarded-proto: https\r\n\
                content-type: application/json\r\ncontent-length: 100\r\n\r\n{\"email\": ";
    stalled.write_all(head.as_bytes()).unwrap();
    served.signal("-TERM");
    served.logged("draining connections");
    served.signal("-TERM");
    served.logged("second shutdown signal: exiting now");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the server did not exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        status.code(),
        Some(130),
        "the forced exit is told apart from a graceful one"
    );
    drop(stalled);
}
