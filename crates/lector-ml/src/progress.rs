//! Progress reporting and cancellation for training.
//!
//! The caller passes one callback; it receives the fraction done, a number in `[0, 1]` that
//! never decreases, and answers [`ControlFlow::Break`] to cancel. Work is budgeted up front
//! (epochs × non-zeros for every solve that will run), so the fraction is monotone even when a
//! solve converges early: its unused budget is skipped, never given back.

use std::ops::ControlFlow;

use crate::error::{Error, Result};

/// The callback type taken by [`crate::Model::train`].
pub type ProgressFn<'a> = dyn FnMut(f64) -> ControlFlow<()> + 'a;

pub(crate) struct Progress<'a, 'b> {
    callback: &'a mut ProgressFn<'b>,
    total: f64,
    done: f64,
    reported: f64,
}

impl<'a, 'b> Progress<'a, 'b> {
    pub(crate) fn new(callback: &'a mut ProgressFn<'b>) -> Self {
        Self {
            callback,
            total: 0.0,
            done: 0.0,
            reported: 0.0,
        }
    }

    /// Adds work to the plan (before it starts).
    pub(crate) fn plan(&mut self, units: f64) {
        self.total += units.max(0.0);
    }

    /// Marks `units` done and asks the caller whether to go on.
    pub(crate) fn advance(&mut self, units: f64) -> Result<()> {
        self.done += units.max(0.0);
        let fraction = if self.total > 0.0 {
            (self.done / self.total).clamp(0.0, 0.999)
        } else {
            0.0
        };
        if fraction > self.reported {
            self.reported = fraction;
        }
        match (self.callback)(self.reported) {
            ControlFlow::Continue(()) => Ok(()),
            ControlFlow::Break(()) => Err(Error::Cancelled),
        }
    }

    pub(crate) fn finish(&mut self) {
        self.reported = 1.0;
        let _ = (self.callback)(1.0);
    }
}
