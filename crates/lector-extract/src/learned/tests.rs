//! The learned field finder's tests: learning from annotated pages, finding values by their
//! announcing words and shape, and what an uploaded field model may hold.

use super::*;
use crate::page::{Line, TextSource};

/// A page of rows of words, each word a tenth of the page wide at its column.
fn page(rows: &[&[(usize, &str)]]) -> Page {
    let lines = rows
        .iter()
        .enumerate()
        .map(|(r, words)| Line {
            words: words
                .iter()
                .map(|(column, text)| Word {
                    text: (*text).into(),
                    quad: Quad::rect(
                        *column as f32 * 0.1,
                        r as f32 * 0.03,
                        *column as f32 * 0.1 + 0.09,
                        r as f32 * 0.03 + 0.02,
                    ),
                    confidence: 1.0,
                })
                .collect(),
        })
        .collect();
    text_page(lines)
}

/// A 600×800 page of `lines` read from a PDF's text layer (the neighbours' tests use it too).
pub(super) fn text_page(lines: Vec<Line>) -> Page {
    Page {
        number: 1,
        width: 600.0,
        height: 800.0,
        source: TextSource::TextLayer,
        lines,
    }
}

fn annotate(page: &Page, label: &str, value: &str) -> Annotation {
    let text = page.text();
    let at = text.find(value).expect("the value is on the page");
    let start = text[..at].chars().count();
    Annotation {
        label: label.into(),
        start,
        end: start + value.chars().count(),
    }
}

#[test]
fn shapes_match_word_by_word() {
    assert_eq!(shape_match("A-9", "A-9"), 1.0);
    assert!((shape_match("Aa Aa A", "Aa Aa AaA") - 0.8 * 2.0 / 3.0).abs() < 1e-6);
    assert_eq!(shape_match("9.9", "Aa"), 0.0);
}

#[test]
fn shapes_write_each_run_once() {
    assert_eq!(shape("INV-2024-0042"), "A-9-9");
    assert_eq!(shape("12.03.2025"), "9.9.9");
    assert_eq!(shape("Muster GmbH"), "Aa AaA");
    assert_eq!(shape("1.234,56 €"), "9.9,9 €");
}

#[test]
fn a_field_is_found_by_its_announcing_words_and_shape() {
    let labels = vec!["order".to_owned(), "customer".to_owned()];
    let first = page(&[
        &[(0, "Acme"), (1, "Ltd")],
        &[(0, "Order"), (1, "ref:"), (2, "PO-7731")],
        &[(0, "Customer"), (3, "K-100")],
        &[(0, "Total"), (3, "12.00")],
    ]);
    let second = page(&[
        &[(0, "Blue"), (1, "River"), (2, "Inc.")],
        &[(0, "Order"), (1, "ref:"), (2, "PO-1204")],
        &[(0, "Customer"), (3, "K-733")],
    ]);
    let annotations = [
        vec![
            annotate(&first, "order", "PO-7731"),
            annotate(&first, "customer", "K-100"),
        ],
        vec![
            annotate(&second, "order", "PO-1204"),
            annotate(&second, "customer", "K-733"),
        ],
    ];
    let model = FieldModel::train([(&first, &annotations[0][..]), (&second, &annotations[1][..])], &labels);
    let model = FieldModel::from_json(&model.to_json()).expect("the model reads back");

    // A new page with the rows moved down and another customer line: found by its words.
    let new = page(&[
        &[(0, "Harbour"), (1, "&"), (2, "Finch")],
        &[(0, "Note:"), (1, "thanks")],
        &[(0, "Customer"), (3, "K-9")],
        &[(0, "Order"), (1, "ref:"), (2, "PO-5555")],
        &[(0, "Total"), (3, "99.00")],
    ]);
    let order = model
        .field("order")
        .unwrap()
        .find(std::slice::from_ref(&new), DataType::Id)
        .unwrap();
    assert_eq!(order.text, "PO-5555");
    assert!(order.confidence > 0.8, "{}", order.confidence);
    let customer = model.field("customer").unwrap().find(&[new], DataType::Text).unwrap();
    assert_eq!(customer.text, "K-9");
    assert!(model.field("total").is_none());
}

#[test]
fn an_uploaded_field_model_is_held_to_what_training_makes() {
    let labels = vec!["order".to_owned()];
    let first = page(&[&[(0, "Order"), (1, "ref:"), (2, "PO-7731")]]);
    let annotations = [annotate(&first, "order", "PO-7731")];
    let trained = FieldModel::train([(&first, &annotations[..])], &labels);
    assert_eq!(FieldModel::uploaded(&trained.to_json(), &labels), Ok(trained.clone()));

    let refused = |edit: &dyn Fn(&mut FieldModel), labels: &[String]| {
        let mut model = trained.clone();
        edit(&mut model);
        FieldModel::uploaded(&model.to_json(), labels).unwrap_err()
    };
    let said = refused(&|_| {}, &["total".to_owned()]);
    assert!(said.contains("\"order\" is not one of the model's labels"), "{said}");
    let said = refused(&|m| m.fields.push(m.fields[0].clone()), &labels);
    assert!(said.contains("labels, once"), "{said}");
    let said = refused(
        &|m| m.fields[0].examples = vec![m.fields[0].examples[0].clone(); MAX_EXAMPLES + 1],
        &labels,
    );
    assert!(said.contains("more than 400 examples"), "{said}");
    let said = refused(
        &|m| m.fields[0].examples[0].context = (0..8).map(|i| format!("l:w{i}")).collect(),
        &labels,
    );
    assert!(said.contains("more announcing words"), "{said}");
    // What training would not keep is left out: a long word, a word of no side, an example
    // of a long shape.
    let mut long = trained.clone();
    let example = &mut long.fields[0].examples[0];
    example
        .context
        .extend([format!("l:{}", "w".repeat(99)), "x:total".to_owned()]);
    let mut long_shape = example.clone();
    long_shape.shape = "A9".repeat(51);
    long.fields[0].examples.push(long_shape);
    assert_eq!(FieldModel::uploaded(&long.to_json(), &labels), Ok(trained.clone()));
    let said = FieldModel::uploaded("[1, 2]", &labels).unwrap_err();
    assert!(said.contains("cannot be read"), "{said}");
}

#[test]
fn words_above_announce_values_in_header_tables() {
    let labels = vec!["number".to_owned()];
    let pages: Vec<Page> = ["A-1", "A-22", "A-333"]
        .iter()
        .map(|n| page(&[&[(0, "Number"), (4, "Date")], &[(0, n), (4, "2025-01-02")]]))
        .collect();
    let annotations: Vec<Vec<Annotation>> = pages
        .iter()
        .zip(["A-1", "A-22", "A-333"])
        .map(|(p, n)| vec![annotate(p, "number", n)])
        .collect();
    let model = FieldModel::train(pages.iter().zip(&annotations).map(|(p, a)| (p, &a[..])), &labels);
    let new = page(&[&[(0, "Number"), (4, "Date")], &[(0, "B-4444"), (4, "2026-03-04")]]);
    let found = model.field("number").unwrap().find(&[new], DataType::Text).unwrap();
    assert_eq!(found.text, "B-4444");
}

#[test]
fn corrected_values_are_located_as_written_or_as_converted() {
    let page = page(&[
        &[(0, "Rechnung"), (1, "R-77")],
        &[(0, "Datum:"), (1, "02.01.2025")],
        &[(0, "Summe"), (1, "1.234,50"), (2, "EUR")],
    ]);
    let text: Vec<char> = page.text().chars().collect();
    let read = |(s, e): (usize, usize)| text[s..e].iter().collect::<String>();
    assert_eq!(locate(&page, "R-77").map(read).as_deref(), Some("R-77"));
    assert_eq!(locate(&page, "2025-01-02").map(read).as_deref(), Some("02.01.2025"));
    assert_eq!(locate(&page, "1234.50").map(read).as_deref(), Some("1.234,50"));
    assert_eq!(locate(&page, "nowhere"), None);
    assert_eq!(locate(&page, "  "), None);
}

#[test]
fn nothing_like_the_examples_is_not_found() {
    let labels = vec!["iban".to_owned()];
    let first = page(&[&[(0, "IBAN:"), (1, "DE89"), (2, "3704"), (3, "0044")]]);
    let annotations = [annotate(&first, "iban", "DE89 3704 0044")];
    let model = FieldModel::train([(&first, &annotations[..])], &labels);
    let other = page(&[&[(0, "Dear"), (1, "customer,")], &[(0, "thank"), (1, "you")]]);
    assert!(model.field("iban").unwrap().find(&[other], DataType::Text).is_none());
}

#[test]
fn ranges_outside_the_words_and_unknown_labels_teach_nothing() {
    let first = page(&[&[(0, "Total"), (1, "5.00")]]);
    let annotations = [
        Annotation {
            label: "total".into(),
            start: 500,
            end: 510,
        },
        annotate(&first, "other", "5.00"),
    ];
    let model = FieldModel::train([(&first, &annotations[..])], &["total".to_owned()]);
    assert!(model.fields.is_empty());
}
