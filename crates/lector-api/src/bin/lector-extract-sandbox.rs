//! The extraction sandbox as a program of its own, for this crate's tests: they run the server
//! inside the test process and cannot reach the `lector` binary, whose `extract-sandbox`
//! subcommand is what installations run. Both call the same function.

fn main() -> std::process::ExitCode {
    lector_extract::sandbox::child_main()
}
