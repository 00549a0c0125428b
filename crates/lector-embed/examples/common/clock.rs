//! CPU time of the whole process, all its threads (the machine is shared), for this crate's
//! benchmark examples (`common::Clock`).

use std::time::Instant;

/// User plus system time of every thread of this process, from `/proc/self/stat` (in clock
/// ticks of 1/100 s).
fn cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// A start, read back as CPU seconds (wall seconds where Linux's counter is absent) and as
/// wall seconds.
pub struct Clock {
    wall: Instant,
    cpu: Option<f64>,
}

impl Clock {
    pub fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: cpu_s(),
        }
    }

    pub fn cpu_seconds(&self) -> f64 {
        match (self.cpu, cpu_s()) {
            (Some(a), Some(b)) => b - a,
            _ => self.wall_seconds(),
        }
    }

    pub fn wall_seconds(&self) -> f64 {
        self.wall.elapsed().as_secs_f64()
    }
}
