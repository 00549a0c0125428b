//! The rules and bounds of a definition, one by one.

use super::*;
use serde_json::json;

fn parse(value: serde_json::Value) -> Definition {
    serde_json::from_value(value).expect("a definition")
}

fn problems_of(definition: &Definition) -> Vec<String> {
    let mut problems = Problems::default();
    definition.check(&mut problems, false);
    problems.0.iter().map(|p| p.field.clone()).collect()
}

#[test]
fn defaults_follow_the_webhook_node() {
    let d = parse(json!({"trigger": {"path": "inbox"}}));
    assert_eq!(d.trigger.methods(), vec![Method::Get]);
    assert_eq!(d.trigger.response_mode, ResponseMode::Immediately);
    assert_eq!(d.trigger.response_data, ResponseData::FirstEntryJson);
    assert_eq!(d.trigger.response_code, 200);
    let multi = parse(json!({"trigger": {"path": "inbox", "multiple_methods": true}}));
    assert_eq!(multi.trigger.methods(), vec![Method::Get, Method::Post]);
    let named = parse(json!({"trigger": {"path": "a", "property_name": ""}}));
    assert_eq!(named.trigger.property(), Some("data"));
    assert!(problems_of(&d).is_empty());
}

#[test]
fn paths_are_plain() {
    for good in ["inbox", "support/mail-in", "a.b~c_d/2"] {
        assert!(check_path(good).is_ok(), "{good}");
    }
    for bad in [
        "",
        "/inbox",
        "inbox/",
        "a//b",
        "a/../b",
        ".",
        "a b",
        "ä",
        "a?b",
        &"x".repeat(201),
    ] {
        assert!(check_path(bad).is_err(), "{bad}");
    }
}

#[test]
fn every_problem_is_named_by_its_field() {
    let d = parse(json!({
        "trigger": {"path": "/x", "response_code": 99, "property_name": "data",
                    "authentication": {"type": "header", "name": "Authorization"}},
        "steps": [
            {"type": "analyze", "model_id": 0},
            {"type": "set", "fields": [{"name": "a", "value": 1, "from": "b"}]},
            {"type": "http_request", "url": "ftp://x"}
        ],
        "steps_by_method": {"POST": []}
    }));
    let fields = problems_of(&d);
    for field in [
        "trigger.path",
        "trigger.response_code",
        "trigger.property_name",
        "trigger.authentication.name",
        "trigger.authentication.value",
        "steps[0].model_id",
        "steps[1].fields[0]",
        "steps[2].url",
        "steps_by_method.POST",
    ] {
        assert!(fields.iter().any(|f| f == field), "{field} in {fields:?}");
    }
}

/// A URL that an earlier step made whole is taken (the docs' `{{ url }}`); a scheme other than
/// http or https written out is not.
#[test]
fn a_url_may_start_with_a_placeholder() {
    let steps = |url: &str| parse(json!({"trigger": {"path": "a"}, "steps": [{"type": "http_request", "url": url}]}));
    assert!(problems_of(&steps("{{ url }}")).is_empty());
    assert!(problems_of(&steps("{{ scheme }}://api.example.org/")).is_empty());
    assert!(problems_of(&steps("https://api.example.org/{{ id }}")).is_empty());
    assert_eq!(problems_of(&steps("ftp://x/{{ id }}")), ["steps[0].url"]);
}

/// A trigger's key header is refused with `_`, as its message says: nginx drops such headers
/// by default, so every call would answer 401. A step's outbound header may have one.
#[test]
fn a_key_header_has_no_underscore() {
    let keyed = |name: &str| {
        parse(json!({"trigger": {"path": "x",
            "authentication": {"type": "header", "name": name, "value": "k1"}}}))
    };
    assert!(problems_of(&keyed("X-Api-Key")).is_empty());
    for bad in ["X_Api_Key", "_", "X Key", ""] {
        assert_eq!(problems_of(&keyed(bad)), ["trigger.authentication.name"], "{bad:?}");
    }
    let outbound = parse(json!({"trigger": {"path": "x"},
        "steps": [{"type": "http_request", "url": "https://api.example.org/",
                   "headers": {"X_Api_Key": "k", "X-Other": "v"}}]}));
    assert!(problems_of(&outbound).is_empty());
    let spaced = parse(json!({"trigger": {"path": "x"},
        "steps": [{"type": "http_request", "url": "https://api.example.org/", "headers": {"X Key": "k"}}]}));
    assert_eq!(problems_of(&spaced), ["steps[0].headers"]);

    // A name stored before the rule stays accepted by an update that keeps it; not a new one.
    let stored = keyed("X_Api_Key");
    let kept = keyed("X_Api_Key").prepare(Some((&stored, Some("digest"))));
    assert!(kept.is_ok(), "{kept:?}");
    let Err(changed) = keyed("X_Other_Key").prepare(Some((&stored, Some("digest")))) else {
        panic!("a new `_` name is refused");
    };
    assert_eq!(changed.errors[0].field, "trigger.authentication.name");
    assert!(changed.errors[0].message.contains("nginx"), "{changed:?}");
}

/// A header value written with a control character could never be sent: refused when saved,
/// not answered 502 on every call.
#[test]
fn header_values_hold_no_control_characters() {
    let with_value = |value: &str| {
        parse(json!({"trigger": {"path": "x"},
            "steps": [{"type": "http_request", "url": "https://api.example.org/",
                       "headers": {"X-Note": value}}]}))
    };
    assert!(problems_of(&with_value("a\tb {{ body.note }}")).is_empty());
    assert_eq!(problems_of(&with_value("a\r\nX-Evil: 1")), ["steps[0].headers"]);
}

#[test]
fn a_stored_secret_may_be_left_out() {
    let d = parse(json!({"trigger": {"path": "x", "authentication": {"type": "basic", "user": "shop"}}}));
    let mut problems = Problems::default();
    d.check(&mut problems, true);
    assert!(problems.0.is_empty(), "{:?}", problems.0);
}

#[test]
fn each_method_may_lead_to_its_own_steps() {
    let d = parse(json!({
        "trigger": {"path": "x", "multiple_methods": true},
        "steps": [{"type": "set", "fields": [{"name": "a", "value": 1}]}],
        "steps_by_method": {"GET": []}
    }));
    assert!(problems_of(&d).is_empty());
    assert!(d.steps_for(Method::Get).is_empty());
    assert_eq!(d.steps_for(Method::Post).len(), 1);
}

#[test]
fn prepared_definitions_keep_no_secret() {
    let d = parse(json!({"trigger": {"path": "shop/orders", "multiple_methods": true,
        "authentication": {"type": "header", "name": "X-Key", "value": "k1"}}}));
    let prepared = d.clone().prepare(None).unwrap();
    assert!(!prepared.json.contains("k1"));
    let digest = prepared.auth_digest.clone().unwrap();
    assert!(crate::admission::matches(&digest, "k1"));
    assert_eq!(
        prepared.routes,
        vec![
            ("GET".to_owned(), "shop/orders".to_owned()),
            ("POST".to_owned(), "shop/orders".to_owned())
        ]
    );
    // An update without the value keeps the digest; another type needs its own secret.
    let stored: Definition = serde_json::from_str(&prepared.json).unwrap();
    let again = parse(json!({"trigger": {"path": "x", "authentication": {"type": "header", "name": "X-Key"}}}));
    assert_eq!(
        again.prepare(Some((&stored, Some(&digest)))).unwrap().auth_digest,
        Some(digest.clone())
    );
    let basic = parse(json!({"trigger": {"path": "x", "authentication": {"type": "basic", "user": "u"}}}));
    assert!(basic.prepare(Some((&stored, Some(&digest)))).is_err());
    let none = parse(json!({"trigger": {"path": "x"}}));
    assert_eq!(none.prepare(Some((&stored, Some(&digest)))).unwrap().auth_digest, None);
}

#[test]
fn unknown_step_types_and_fields_are_refused() {
    let unknown = serde_json::from_value::<Definition>(json!({"trigger": {"path": "x"}, "steps": [{"type": "shell"}]}));
    assert!(unknown.is_err());
    let extra = serde_json::from_value::<Definition>(json!({"trigger": {"path": "x", "colour": 1}}));
    assert!(extra.is_err());
}
