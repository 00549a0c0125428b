//! What this crate's benchmark examples share (`mod common;`): the clock they time with, the
//! error they stop on, and the paths every one of them is given.

mod clock;

use std::path::PathBuf;

pub use clock::Clock;

/// Any error, printed as the benchmark stops.
pub type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// What every benchmark of the MiniLM is given: its data, the encoder, and where its results
/// go (the program's description says what the data and the results are).
#[derive(clap::Args)]
pub struct Paths {
    /// The benchmark's data.
    #[arg(long)]
    pub data: PathBuf,
    /// The MiniLM's directory (`scripts/fetch-minilm` prints it).
    #[arg(long)]
    pub model: PathBuf,
    /// Where the results are written.
    #[arg(long)]
    pub out: PathBuf,
}
