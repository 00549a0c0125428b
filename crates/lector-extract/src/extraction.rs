//! Extraction: the fields a model names (its labels), looked for in a read document, each held
//! to its settings (required, confidence threshold, data type), and the verdicts the answer
//! gives: were the required fields found, were the thresholds met, did the conversions pass,
//! and the credits used (one per page). No HTTP and no SQL here.
//!
//! Fields are found by the built-in recognisers (`builtin`), so labels named like the usual
//! invoice fields work before any training, and by what a trained model learnt of them
//! (`learned`); where both find a value, a sure learnt one is taken. A label neither knows is
//! reported not found.

use crate::builtin::{Builtin, Found, find};
use crate::convert::{Converted, DataType, convert};
use crate::learned::FieldModel;
use crate::page::ReadDocument;

/// How one field is judged.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSetting {
    pub label: String,
    pub required: bool,
    /// The least confidence (0..1) a value needs to be taken without review.
    pub threshold: f32,
    pub data_type: DataType,
}

/// The confidence a value needs when nothing else is configured.
pub const DEFAULT_THRESHOLD: f32 = 0.5;

impl FieldSetting {
    /// The setting of a label nobody configured: optional, the default threshold, and the type
    /// its name suggests (text otherwise).
    pub fn for_label(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            required: false,
            threshold: DEFAULT_THRESHOLD,
            data_type: Builtin::for_label(label).map_or(DataType::Text, Builtin::data_type),
        }
    }
}

/// A field's settings as a HITL configuration gives them: `{required, confidence_threshold,
/// data_type}`, each optional.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingOverride {
    pub required: Option<bool>,
    pub confidence_threshold: Option<f32>,
    pub data_type: Option<DataType>,
}

impl SettingOverride {
    /// Reads the settings of every field from a HITL configuration's `labels` object, or says
    /// which field's settings are wrong.
    /// Every field's settings, or the first problem: where it is (`""` for the whole object,
    /// `total`, `total.confidence_threshold`) and what it is.
    pub fn parse_all(labels: &serde_json::Value) -> Result<Vec<(String, SettingOverride)>, (String, String)> {
        let Some(map) = labels.as_object() else {
            return Err((String::new(), "must be an object of field settings".into()));
        };
        map.iter()
            .map(|(label, value)| {
                let setting: SettingOverride = serde_json::from_value(value.clone()).map_err(|e| {
                    (
                        label.clone(),
                        format!("{e} (required, confidence_threshold, data_type)"),
                    )
                })?;
                if setting.confidence_threshold.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
                    let field = format!("{label}.confidence_threshold");
                    return Err((field, "must be between 0 and 1".into()));
                }
                Ok((label.clone(), setting))
            })
            .collect()
    }
}

impl FieldSetting {
    /// The setting of `label` with what a configuration says of it.
    pub fn configured(label: &str, overrides: &[(String, SettingOverride)]) -> Self {
        let mut setting = Self::for_label(label);
        if let Some((_, o)) = overrides.iter().find(|(name, _)| name == label) {
            setting.required = o.required.unwrap_or(setting.required);
            setting.threshold = o.confidence_threshold.unwrap_or(setting.threshold);
            setting.data_type = o.data_type.unwrap_or(setting.data_type);
        }
        setting
    }
}

/// Why a review's corrected values cannot be taken, as (field, problem) pairs: a field that is
/// not one of the project's `labels`, or a value that does not read as its field's data type.
/// An empty value says the field is not on the document, and is taken.
pub fn correction_problems<'v>(
    labels: &[String],
    overrides: &[(String, SettingOverride)],
    values: impl IntoIterator<Item = (&'v String, &'v String)>,
) -> Vec<(String, String)> {
    values
        .into_iter()
        .filter_map(|(field, value)| {
            if !labels.contains(field) {
                return Some((field.clone(), "is not a field (label) of this project".to_owned()));
            }
            if value.trim().is_empty() {
                return None;
            }
            let data_type = FieldSetting::configured(field, overrides).data_type;
            let why = convert(data_type, value).err()?;
            let type_name = format!("{data_type:?}").to_lowercase();
            let article = if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            Some((
                field.clone(),
                format!("does not read as {article} {type_name} value: {why}"),
            ))
        })
        .collect()
}

/// What became of one field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldResult {
    pub setting: FieldSetting,
    /// The value as found on the page, with its place and confidence.
    pub found: Option<Found>,
    /// The found value in the setting's type, or why it does not convert.
    pub conversion: Option<Result<Converted, String>>,
}

impl FieldResult {
    pub fn threshold_met(&self) -> bool {
        self.found
            .as_ref()
            .is_none_or(|f| f.confidence >= self.setting.threshold)
    }

    pub fn conversion_passed(&self) -> bool {
        self.conversion.as_ref().is_none_or(Result::is_ok)
    }
}

/// The extraction of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct Extraction {
    pub fields: Vec<FieldResult>,
    /// One per page.
    pub credits: usize,
}

impl Extraction {
    pub fn all_required_fields_found(&self) -> bool {
        self.fields.iter().all(|f| !f.setting.required || f.found.is_some())
    }

    pub fn all_confidence_thresholds_met(&self) -> bool {
        self.fields.iter().all(FieldResult::threshold_met)
    }

    pub fn all_data_conversion_passed(&self) -> bool {
        self.fields.iter().all(FieldResult::conversion_passed)
    }
}

/// Looks for every field of `settings` in `document`, with what `learned` (a trained model's
/// fields) knows of them.
pub fn extract(document: &ReadDocument, settings: &[FieldSetting], learned: Option<&FieldModel>) -> Extraction {
    let fields = settings
        .iter()
        .map(|setting| {
            let built_in = Builtin::for_label(&setting.label).and_then(|builtin| find(builtin, document));
            let taught = learned
                .and_then(|model| model.field(&setting.label))
                .and_then(|field| field.find(&document.pages, setting.data_type));
            let found = surer(built_in, taught);
            let conversion = found.as_ref().map(|f| convert(setting.data_type, &f.text));
            FieldResult {
                setting: setting.clone(),
                found,
                conversion,
            }
        })
        .collect();
    Extraction {
        fields,
        credits: document.pages.len(),
    }
}

/// A learnt value at least this sure is taken over a built-in one: the model was taught on the
/// project's own documents, where the built-in keywords can mislead (a customer number under
/// "Invoice Number" in a header table).
const TAUGHT_TRUSTED: f32 = 0.75;

/// The learnt value when it is trusted or surer than the built-in one; else the built-in one.
fn surer(built_in: Option<Found>, taught: Option<Found>) -> Option<Found> {
    match (built_in, taught) {
        (Some(b), Some(t)) if t.confidence >= TAUGHT_TRUSTED || t.confidence > b.confidence => Some(t),
        (Some(b), _) => Some(b),
        (None, t) => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DocumentFormat;

    #[test]
    fn corrections_name_their_fields_and_read_as_their_types() {
        let labels = ["date".to_owned(), "total".to_owned(), "note".to_owned()];
        let overrides = SettingOverride::parse_all(&serde_json::json!({"note": {"data_type": "number"}})).unwrap();
        let values: std::collections::BTreeMap<String, String> = [
            ("date", "14.03.2024"),
            ("total", "1.234,50 €"),
            ("note", ""),
            ("no_such_field", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let problems = correction_problems(&labels, &overrides, &values);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "no_such_field");
        let wrong: std::collections::BTreeMap<String, String> =
            [("date", "not a date"), ("total", "abc"), ("note", "seven")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        let fields: Vec<String> = correction_problems(&labels, &overrides, &wrong)
            .into_iter()
            .map(|(field, _)| field)
            .collect();
        assert_eq!(fields, ["date", "note", "total"]);
    }
    use crate::page::{Line, Page, Quad, TextSource, Word};

    fn document(lines: &[&[(&str, f32)]]) -> ReadDocument {
        let lines = lines
            .iter()
            .enumerate()
            .map(|(n, words)| Line {
                words: words
                    .iter()
                    .enumerate()
                    .map(|(i, (text, confidence))| Word {
                        text: (*text).into(),
                        quad: Quad::rect(
                            0.1 * i as f32,
                            0.05 * n as f32,
                            0.1 * i as f32 + 0.08,
                            0.05 * n as f32 + 0.02,
                        ),
                        confidence: *confidence,
                    })
                    .collect(),
            })
            .collect();
        ReadDocument {
            format: DocumentFormat::Png,
            pages: vec![
                Page {
                    number: 1,
                    width: 1000.0,
                    height: 1400.0,
                    source: TextSource::Ocr,
                    lines,
                },
                Page {
                    number: 2,
                    width: 1000.0,
                    height: 1400.0,
                    source: TextSource::Ocr,
                    lines: Vec::new(),
                },
            ],
        }
    }

    #[test]
    fn settings_follow_the_label_names() {
        assert_eq!(FieldSetting::for_label("total").data_type, DataType::Amount);
        assert_eq!(FieldSetting::for_label("Rechnungsdatum").data_type, DataType::Date);
        assert_eq!(FieldSetting::for_label("po_number").data_type, DataType::Text);
    }

    #[test]
    fn configurations_override_settings() {
        let labels =
            serde_json::json!({"total": {"required": true, "confidence_threshold": 0.9}, "ref": {"data_type": "id"}});
        let overrides = SettingOverride::parse_all(&labels).unwrap();
        let total = FieldSetting::configured("total", &overrides);
        assert!(total.required && total.threshold == 0.9 && total.data_type == DataType::Amount);
        assert_eq!(FieldSetting::configured("ref", &overrides).data_type, DataType::Id);
        let (field, why) = SettingOverride::parse_all(&serde_json::json!({"x": {"colour": 1}})).unwrap_err();
        assert_eq!(field, "x");
        assert!(why.contains("colour"), "{why}");
        let (field, _) =
            SettingOverride::parse_all(&serde_json::json!({"x": {"confidence_threshold": 2}})).unwrap_err();
        assert_eq!(field, "x.confidence_threshold");
        assert_eq!(SettingOverride::parse_all(&serde_json::json!([])).unwrap_err().0, "");
    }

    #[test]
    fn verdicts_follow_the_settings() {
        let read = document(&[
            &[("Total:", 0.9), ("12,50", 0.4), ("€", 0.9)],
            &[("Datum:", 0.95), ("31.02.2024", 0.9)],
        ]);
        let mut total = FieldSetting::for_label("total");
        let date = FieldSetting::for_label("date");
        let po = FieldSetting {
            required: true,
            ..FieldSetting::for_label("po_number")
        };
        let extraction = extract(&read, &[total.clone(), date.clone()], None);
        assert_eq!(extraction.credits, 2);
        assert!(extraction.all_required_fields_found());
        // The amount was read unsurely (0.4 × 0.95 < 0.5).
        assert!(!extraction.all_confidence_thresholds_met());
        assert_eq!(extraction.fields[0].conversion.clone().unwrap().unwrap().value, "12.50");
        // No 31 February: the date keyword has no value that converts, so it is not found.
        assert!(extraction.fields[1].found.is_none());
        assert!(extraction.all_data_conversion_passed());

        total.threshold = 0.3;
        let extraction = extract(&read, &[total.clone(), po], None);
        assert!(extraction.all_confidence_thresholds_met());
        assert!(!extraction.all_required_fields_found(), "po_number has no recogniser");

        // A value found as an amount but configured as a date fails its conversion.
        let as_date = FieldSetting {
            data_type: DataType::Date,
            ..total
        };
        let extraction = extract(&read, &[as_date], None);
        assert!(!extraction.all_data_conversion_passed());
    }
}
