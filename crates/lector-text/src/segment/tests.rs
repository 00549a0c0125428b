//! Segmentation tests: rules per language, code-point spans, whitespace, client segments.

use super::*;

/// Python's `text[start:end]`.
fn slice(text: &str, [start, end]: [usize; 2]) -> String {
    text.chars().skip(start).take(end - start).collect()
}

fn texts(text: &str, language: Language) -> Vec<String> {
    let segments = split_sentences(text, language);
    for segment in &segments {
        assert_eq!(
            slice(text, segment.span),
            segment.text,
            "span of {segment:?} in {text:?}"
        );
    }
    segments.into_iter().map(|s| s.text).collect()
}

#[test]
fn english_abbreviations_numbers_and_initials_do_not_split() {
    assert_eq!(
        texts(
            "Dr. Smith went to Washington. He arrived at 3.5 p.m. yesterday.",
            Language::En
        ),
        ["Dr. Smith went to Washington.", "He arrived at 3.5 p.m. yesterday."]
    );
    assert_eq!(
        texts("J. R. R. Tolkien wrote books. Mr. and Mrs. Jones came.", Language::En),
        ["J. R. R. Tolkien wrote books.", "Mr. and Mrs. Jones came."]
    );
    assert_eq!(
        texts(
            "I like it, e.g. the soup. But not the rest... Really?! Fine.",
            Language::En
        ),
        ["I like it, e.g. the soup.", "But not the rest...", "Really?!", "Fine."]
    );
}

#[test]
fn closing_quotes_and_brackets_stay_with_their_sentence() {
    assert_eq!(
        texts("He said \"Yes.\" Then he left. (It was late.) Fine.", Language::En),
        ["He said \"Yes.\"", "Then he left.", "(It was late.)", "Fine."]
    );
    assert_eq!(
        texts("See [1.] Then (see Fig. 2) more.", Language::En),
        ["See [1.]", "Then (see Fig. 2) more."]
    );
    assert_eq!(
        texts("Er sagte: „Ich komme.“ Dann ging er.", Language::De),
        ["Er sagte: „Ich komme.“", "Dann ging er."]
    );
}

#[test]
fn german_abbreviations_and_ordinals() {
    assert_eq!(
        texts(
            "Das ist z. B. gut. Wir haben u.a. Äpfel. Der 3. Oktober ist frei. Dr. Müller kommt.",
            Language::De
        ),
        [
            "Das ist z. B. gut.",
            "Wir haben u.a. Äpfel.",
            "Der 3. Oktober ist frei.",
            "Dr. Müller kommt."
        ]
    );
}

#[test]
fn arabic_full_stop_question_mark_and_urdu_full_stop() {
    let text = "الطعام كان رائعا. الخدمة سيئة؟ لا أعرف! نعم۔ حسنا";
    assert_eq!(
        texts(text, Language::Ar),
        ["الطعام كان رائعا.", "الخدمة سيئة؟", "لا أعرف!", "نعم۔", "حسنا"]
    );
    let segments = split_sentences(text, Language::Ar);
    assert_eq!(segments[1].span, [18, 30]);
}

#[test]
fn spans_count_code_points_not_bytes() {
    let segments = split_sentences("Café. Öl.  Next one!", Language::En);
    let spans: Vec<_> = segments.iter().map(|s| s.span).collect();
    assert_eq!(spans, [[0, 5], [6, 9], [11, 20]]);
    // An emoji outside the BMP is one code point (two UTF-16 units, four bytes).
    let segments = split_sentences("Nice 😀. Next.", Language::En);
    assert_eq!(segments[1].span, [8, 13]);
}

#[test]
fn whitespace_between_and_around_sentences_is_not_part_of_a_segment() {
    let text = "   First one.  \n\n  Second one.\t ";
    let segments = split_sentences(text, Language::En);
    assert_eq!(
        segments.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
        ["First one.", "Second one."]
    );
    assert_eq!(segments[0].span, [3, 13]);
    assert_eq!(segments[1].span, [19, 30]);
    assert!(split_sentences(" \n\t ", Language::De).is_empty());
    assert!(split_sentences("", Language::Ar).is_empty());
}

#[test]
fn split_false_keeps_the_whole_trimmed_text() {
    let segments = segment("  One. Two.  ", Language::En, false);
    assert_eq!(
        segments,
        [Segment {
            text: "One. Two.".into(),
            span: [2, 11]
        }]
    );
    assert!(segment("   ", Language::En, false).is_empty());
    assert_eq!(segment("One. Two.", Language::En, true).len(), 2);
}

#[test]
fn long_texts_are_covered_without_gaps_or_overlaps() {
    let text = "Ein Satz über Öl. Noch einer?\n\n".repeat(2_000);
    let segments = split_sentences(&text, Language::De);
    assert_eq!(segments.len(), 4_000);
    let mut previous_end = 0;
    for segment in &segments {
        assert!(segment.start() >= previous_end);
        previous_end = segment.end();
    }
    assert_eq!(slice(&text, segments[3_999].span), "Noch einer?");
}

#[test]
fn never_panics_on_odd_input() {
    let alphabet: Vec<char> = "a .!?…\"“„«»()\n\t\u{a0}\u{3000}é3۔؟.اDrz\u{301}\r".chars().collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..3_000u64 {
        let text: String = (0..round % 40)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                alphabet[(state % alphabet.len() as u64) as usize]
            })
            .collect();
        for language in [Language::En, Language::De, Language::Ar] {
            for segment in split_sentences(&text, language) {
                assert_eq!(slice(&text, segment.span), segment.text);
            }
        }
    }
}

#[test]
fn languages_parse_from_codes() {
    assert_eq!(Language::from_code("de"), Some(Language::De));
    assert_eq!(Language::from_code("AR"), Some(Language::Ar));
    assert_eq!(Language::from_code("en-GB"), Some(Language::En));
    assert_eq!(Language::from_code("fr"), None);
    assert_eq!(Language::from_code_or_default(None), Language::En);
    assert!("xx".parse::<Language>().is_err());
}

#[test]
fn client_segments_get_spans_and_are_checked() {
    let text = "Café. Öl ist gut. Café.";
    let found = check_segments(
        text,
        &[
            ClientSegment {
                text: "Café.",
                span: None,
            },
            ClientSegment {
                text: "Café.",
                span: None,
            },
        ],
    )
    .unwrap();
    assert_eq!(found[0].span, [0, 5]);
    assert_eq!(found[1].span, [18, 23]);

    let given = [ClientSegment {
        text: "Öl ist gut.",
        span: Some([6, 17]),
    }];
    assert_eq!(check_segments(text, &given).unwrap()[0].span, [6, 17]);

    // Not NFC from the client ("e" + combining acute) still matches the NFC document.
    let decomposed = [ClientSegment {
        text: "Cafe\u{301}.",
        span: Some([0, 5]),
    }];
    assert_eq!(check_segments(text, &decomposed).unwrap()[0].text, "Café.");
}

#[test]
fn bad_client_segments_name_the_segment() {
    let text = "One. Two.";
    let cases: [&[ClientSegment<'_>]; 5] = [
        &[ClientSegment {
            text: "Three.",
            span: None,
        }],
        &[ClientSegment {
            text: "One.",
            span: Some([0, 3]),
        }],
        &[ClientSegment {
            text: "Two.",
            span: Some([5, 40]),
        }],
        &[
            ClientSegment {
                text: "Two.",
                span: None,
            },
            ClientSegment {
                text: "One.",
                span: Some([0, 4]),
            },
        ],
        &[ClientSegment { text: "  ", span: None }],
    ];
    for (case, given) in cases.iter().enumerate() {
        let error = check_segments(text, given).unwrap_err();
        assert_eq!(error.status(), 422, "case {case}");
        let expected = if case == 3 { 1 } else { 0 };
        assert_eq!(
            error.location(),
            Some(&Location::Segment(expected)),
            "case {case}: {error}"
        );
    }
}

#[test]
fn a_single_newline_is_not_a_boundary_but_a_full_stop_before_it_is() {
    assert_eq!(texts("line one\nline two", Language::En), ["line one\nline two"]);
    assert_eq!(texts("First.\nSecond.", Language::En), ["First.", "Second."]);
}

#[test]
fn languages_serialise_as_codes() {
    assert_eq!(serde_json::to_string(&Language::De).unwrap(), "\"de\"");
    assert_eq!(serde_json::from_str::<Language>("\"ar\"").unwrap(), Language::Ar);
}
