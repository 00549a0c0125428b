//! A job's progress when it runs in phases (a batch analysis first imports its texts, then
//! runs the model over them): each phase reports its own fraction done, mapped onto its share
//! of the job's, so the task's progress rises through the phases instead of reaching 1 in the
//! first and standing there for the rest.

/// A phase's share of its job's progress, `from` where it starts to `to` where it ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    from: f64,
    to: f64,
}

impl Phase {
    /// The whole job is one phase.
    pub const WHOLE: Phase = Phase { from: 0.0, to: 1.0 };

    /// A phase from `from` to `to` of its job's progress (both in [0, 1], `from` ≤ `to`).
    pub const fn new(from: f64, to: f64) -> Self {
        Phase { from, to }
    }

    /// The job's progress once the phase has done `done` (in [0, 1]) of its part.
    pub fn of_job(self, done: f64) -> f64 {
        self.from + (self.to - self.from) * done.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::Phase;

    #[test]
    fn a_phase_maps_its_progress_onto_its_share() {
        assert_eq!(Phase::WHOLE.of_job(0.4), 0.4);
        let import = Phase::new(0.0, 0.25);
        let model = Phase::new(0.25, 1.0);
        assert_eq!(import.of_job(1.0), 0.25);
        assert_eq!(model.of_job(0.0), 0.25);
        assert_eq!(model.of_job(0.5), 0.625);
        assert_eq!(model.of_job(2.0), 1.0, "a fraction past the end is the phase's end");
        assert_eq!(import.of_job(-1.0), 0.0);
    }
}
