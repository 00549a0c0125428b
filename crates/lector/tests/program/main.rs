//! Tests that run the `lector` program itself: its command line, and workers killed
//! (SIGKILL) in the middle of imports, analyses, file reads and trainings. One binary, so the
//! service is linked once for all of them.

mod common;

mod cli;
mod kill;
mod kill_analysis;
mod kill_file;
mod kill_training;
mod signals;
