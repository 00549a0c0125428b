//! What the integration tests share: a progress callback that never cancels, and the CLASS set
//! of foods and drinks both the n-gram tests and the encoder tests learn from.

use std::ops::ControlFlow;

use lector_ml::{Example, Tag};

/// Progress that lets training run to its end.
pub fn go(_: f64) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

/// Foods served (class `food`), drinks served (`drinks`) and small talk (no class); with
/// `both_served`, also texts of a food and a drink served together (both classes).
pub fn class_set(both_served: bool) -> Vec<Example> {
    let mut out = Vec::new();
    let foods = ["pizza", "pasta", "salad", "soup", "steak", "sushi"];
    let drinks = ["beer", "wine", "coffee", "tea", "juice", "cola"];
    for (f, d) in foods.iter().zip(drinks) {
        out.push(Example::new(format!("the {f} was served"), vec![Tag::class("food")]));
        out.push(Example::new(format!("the {d} was served"), vec![Tag::class("drinks")]));
        if both_served {
            out.push(Example::new(
                format!("the {f} and the {d} were served"),
                vec![Tag::class("food"), Tag::class("drinks")],
            ));
        }
        out.push(Example::new("we sat down and talked", vec![]));
    }
    out
}
