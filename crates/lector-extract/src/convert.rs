//! A field's data type, and the conversion of the text found on a page into that type's clean
//! form: numbers and amounts in either decimal convention, dates to ISO 8601, IBANs checked by
//! their check digits, e-mail addresses, phone numbers and ids normalised. A conversion that
//! fails says why; the extraction answer reports it (`all_data_conversion_passed`).

use serde::{Deserialize, Serialize};

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    Text,
    Number,
    Amount,
    Date,
    Id,
    Email,
    Iban,
    Phone,
}

/// A value in its clean form; amounts also name their currency when the text does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Converted {
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

impl Converted {
    fn plain(value: String) -> Self {
        Self { value, currency: None }
    }
}

/// Converts `raw` (as found on the page) into `kind`'s clean form, or says why it cannot.
pub fn convert(kind: DataType, raw: &str) -> Result<Converted, String> {
    let raw = raw.trim();
    // A value at a sentence's end carries its full stop ("… IBAN DE89 … 00.").
    let raw = if kind == DataType::Text {
        raw
    } else {
        raw.trim_end_matches(['.', ',', ';', ':'])
    };
    if raw.is_empty() {
        return Err("the value is empty".into());
    }
    match kind {
        DataType::Text => Ok(Converted::plain(raw.split_whitespace().collect::<Vec<_>>().join(" "))),
        DataType::Number => number(raw).map(Converted::plain),
        DataType::Amount => amount(raw),
        DataType::Date => date(raw).map(Converted::plain),
        DataType::Id => id(raw).map(Converted::plain),
        DataType::Email => email(raw).map(Converted::plain),
        DataType::Iban => iban(raw).map(Converted::plain),
        DataType::Phone => phone(raw).map(Converted::plain),
    }
}

/// A decimal number written with either `.` or `,` as the decimal mark and the other (or a
/// space or apostrophe) grouping thousands: "1.234,50", "1,234.50", "1 234,5", "-12".
fn number(raw: &str) -> Result<String, String> {
    let cleaned: String = raw
        .chars()
        .filter(|c| !matches!(c, ' ' | '\u{a0}' | '\u{202f}' | '\''))
        .collect();
    let (negative, digits) = match cleaned.strip_prefix('-').or_else(|| cleaned.strip_prefix('−')) {
        Some(rest) => (true, rest.to_string()),
        None => (false, cleaned.trim_end_matches('-').to_string()),
    };
    let negative = negative || cleaned.ends_with('-');
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',') {
        return Err(format!("{raw:?} is not a number"));
    }
    let decimal_mark = decimal_mark(&digits);
    let mut whole = String::new();
    let mut fraction = String::new();
    let mut in_fraction = false;
    for (i, c) in digits.char_indices() {
        match c {
            '0'..='9' if in_fraction => fraction.push(c),
            '0'..='9' => whole.push(c),
            _ if Some(i) == decimal_mark => in_fraction = true,
            _ => {}
        }
    }
    if whole.is_empty() && fraction.is_empty() {
        return Err(format!("{raw:?} is not a number"));
    }
    let whole = whole.trim_start_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let sign = if negative { "-" } else { "" };
    Ok(if fraction.is_empty() {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction}")
    })
}

/// The byte index of the decimal mark, if the number has one. The last separator is the
/// decimal mark when both kinds appear; a lone separator followed by exactly three digits groups
/// thousands ("1.234", "12,500"); anything else is a decimal mark.
fn decimal_mark(digits: &str) -> Option<usize> {
    let last = digits.rfind(['.', ','])?;
    let mark = digits.as_bytes()[last];
    let other = if mark == b'.' { ',' } else { '.' };
    if digits.contains(other) {
        return Some(last);
    }
    let after = digits.len() - last - 1;
    let same_marks = digits.bytes().filter(|&b| b == mark).count();
    if same_marks > 1 || (after == 3 && last > 0) {
        None
    } else {
        Some(last)
    }
}

/// Currency symbols and the codes they stand for.
const CURRENCIES: [(&str, &str); 8] = [
    ("€", "EUR"),
    ("$", "USD"),
    ("£", "GBP"),
    ("¥", "JPY"),
    ("CHF", "CHF"),
    ("Fr.", "CHF"),
    ("zł", "PLN"),
    ("kr", "SEK"),
];

/// An amount: a number with an optional currency symbol or ISO code before or after it; the
/// value keeps two decimals.
fn amount(raw: &str) -> Result<Converted, String> {
    let mut currency = None;
    let mut rest = raw.to_string();
    for (symbol, code) in CURRENCIES {
        if rest.contains(symbol) {
            currency = Some(code.to_string());
            rest = rest.replace(symbol, " ");
            break;
        }
    }
    if currency.is_none() {
        let code = rest
            .split(|c: char| !c.is_ascii_alphabetic())
            .find(|w| w.len() == 3 && w.chars().all(|c| c.is_ascii_uppercase()));
        if let Some(code) = code {
            currency = Some(code.to_string());
            rest = rest.replace(code, " ");
        }
    }
    let value = number(rest.trim()).map_err(|_| format!("{raw:?} is not an amount"))?;
    let (whole, fraction) = value.split_once('.').unwrap_or((&value, ""));
    if fraction.len() > 2 {
        return Err(format!("{raw:?} has more than two decimals"));
    }
    Ok(Converted {
        value: format!("{whole}.{fraction:0<2}"),
        currency,
    })
}

/// Month names of the languages read (English and German, full and short).
const MONTHS: [(&str, u8); 36] = [
    ("january", 1),
    ("januar", 1),
    ("jan", 1),
    ("jänner", 1),
    ("february", 2),
    ("februar", 2),
    ("feb", 2),
    ("march", 3),
    ("märz", 3),
    ("mar", 3),
    ("mär", 3),
    ("april", 4),
    ("apr", 4),
    ("may", 5),
    ("mai", 5),
    ("june", 6),
    ("juni", 6),
    ("jun", 6),
    ("july", 7),
    ("juli", 7),
    ("jul", 7),
    ("august", 8),
    ("aug", 8),
    ("september", 9),
    ("sep", 9),
    ("sept", 9),
    ("october", 10),
    ("oktober", 10),
    ("oct", 10),
    ("okt", 10),
    ("november", 11),
    ("nov", 11),
    ("december", 12),
    ("dezember", 12),
    ("dec", 12),
    ("dez", 12),
];

fn month_named(word: &str) -> Option<u8> {
    let word = word.trim_end_matches('.').to_lowercase();
    MONTHS.iter().find(|(name, _)| *name == word).map(|(_, month)| *month)
}

/// A date to ISO 8601 (`YYYY-MM-DD`): day first with `.`, `/` or `-` ("14.03.2024",
/// "14/03/24"), year first ("2024-03-14"), or with a month name ("14. März 2024",
/// "March 14, 2024"). A slashed date whose second number is over 12 is read month first.
fn date(raw: &str) -> Result<String, String> {
    let bad = || format!("{raw:?} is not a date");
    let parts: Vec<&str> = raw
        .split(|c: char| c == '.' || c == '/' || c == '-' || c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    let [a, b, c] = parts[..] else {
        return Err(bad());
    };
    let num = |s: &str| s.parse::<u32>().ok();
    let (year, month, day) = if let (Some(y), Some(m), Some(d)) = (num(a), num(b), num(c))
        && a.len() == 4
    {
        (y, m, d)
    } else if let (Some(d), Some(m), Some(y)) = (num(a), num(b), num(c)) {
        if m > 12 && d <= 12 && raw.contains('/') {
            (y, d, m)
        } else {
            (y, m, d)
        }
    } else if let (Some(d), Some(m), Some(y)) = (num(a), month_named(b), num(c)) {
        (y, u32::from(m), d)
    } else if let (Some(m), Some(d), Some(y)) = (month_named(a), num(b), num(c)) {
        (y, u32::from(m), d)
    } else {
        return Err(bad());
    };
    let year = match year {
        0..=69 => 2000 + year,
        70..=99 => 1900 + year,
        1000..=9999 => year,
        _ => return Err(bad()),
    };
    let month = time::Month::try_from(u8::try_from(month).map_err(|_| bad())?).map_err(|_| bad())?;
    let date =
        time::Date::from_calendar_date(year as i32, month, u8::try_from(day).map_err(|_| bad())?).map_err(|_| bad())?;
    Ok(format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    ))
}

/// An id: letters, digits and `-`, `/`, `.`, `_`, `#`, upper-cased, without spaces.
fn id(raw: &str) -> Result<String, String> {
    let value: String = raw
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_uppercase();
    let value = value.trim_start_matches('#').trim_start_matches(':').to_string();
    let valid = value.chars().any(|c| c.is_ascii_alphanumeric())
        && value.chars().all(|c| c.is_alphanumeric() || "-/._".contains(c));
    if valid {
        Ok(value)
    } else {
        Err(format!("{raw:?} is not an id"))
    }
}

/// An e-mail address: one `@`, a local part, a domain with a dot; lower-cased domain.
fn email(raw: &str) -> Result<String, String> {
    let bad = || format!("{raw:?} is not an e-mail address");
    let raw = raw.trim_start_matches("mailto:");
    let (local, domain) = raw.split_once('@').ok_or_else(bad)?;
    let local_ok = !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_alphanumeric() || ".!#$%&'*+/=?^_`{|}~-".contains(c));
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(char::is_alphabetic));
    if local_ok && domain_ok {
        Ok(format!("{local}@{}", domain.to_lowercase()))
    } else {
        Err(bad())
    }
}

/// An IBAN: country code, check digits and account, spaces removed and upper-cased, its length
/// right for its country where known and its check digits right (ISO 13616, mod 97).
fn iban(raw: &str) -> Result<String, String> {
    let value: String = raw
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect::<String>()
        .to_uppercase();
    let value = value.trim_start_matches("IBAN:").trim_start_matches("IBAN").to_string();
    let bad = |why: &str| format!("{raw:?} is not an IBAN: {why}");
    if !(15..=34).contains(&value.len()) || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(bad("it has the wrong length or characters"));
    }
    let (country, check) = (&value[..2], &value[2..4]);
    if !country.chars().all(|c| c.is_ascii_uppercase()) || !check.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad("it does not start with a country code and check digits"));
    }
    if let Some(length) = iban_length(country)
        && value.len() != length
    {
        return Err(bad(&format!("an IBAN of {country} has {length} characters")));
    }
    if iban_remainder(&value) != 1 {
        return Err(bad("its check digits are wrong"));
    }
    Ok(value
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).expect("ASCII"))
        .collect::<Vec<_>>()
        .join(" "))
}

/// The IBAN length of the countries whose length is checked.
pub(crate) const IBAN_LENGTHS: [(&str, usize); 20] = [
    ("DE", 22),
    ("AT", 20),
    ("CH", 21),
    ("FR", 27),
    ("GB", 22),
    ("NL", 18),
    ("BE", 16),
    ("ES", 24),
    ("IT", 27),
    ("LU", 20),
    ("PL", 28),
    ("DK", 18),
    ("SE", 24),
    ("NO", 15),
    ("FI", 18),
    ("IE", 22),
    ("PT", 25),
    ("SA", 24),
    ("AE", 23),
    ("EG", 29),
];

fn iban_length(country: &str) -> Option<usize> {
    IBAN_LENGTHS.iter().find(|(c, _)| *c == country).map(|(_, n)| *n)
}

/// The IBAN's number (first four characters moved to the end, letters as 10..35) mod 97.
fn iban_remainder(value: &str) -> u32 {
    let rearranged = value[4..].chars().chain(value[..4].chars());
    rearranged.fold(0u32, |acc, c| {
        let digit = c.to_digit(36).expect("alphanumeric");
        if digit < 10 {
            (acc * 10 + digit) % 97
        } else {
            (acc * 100 + digit) % 97
        }
    })
}

/// A phone number: digits with an optional leading `+` (or `00`), separators dropped.
fn phone(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim();
    let international = trimmed.starts_with('+') || trimmed.starts_with("00");
    let digits: String = trimmed.chars().filter(char::is_ascii_digit).collect();
    let allowed = trimmed.chars().all(|c| c.is_ascii_digit() || " +-/().".contains(c));
    let digits = if trimmed.starts_with("00") {
        digits[2..].to_string()
    } else {
        digits
    };
    if !allowed || !(6..=15).contains(&digits.len()) {
        return Err(format!("{raw:?} is not a phone number"));
    }
    Ok(if international { format!("+{digits}") } else { digits })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(kind: DataType, raw: &str) -> String {
        convert(kind, raw).unwrap_or_else(|e| panic!("{raw:?}: {e}")).value
    }

    #[test]
    fn numbers_in_both_conventions() {
        for (raw, clean) in [
            ("1.234,50", "1234.50"),
            ("1,234.50", "1234.50"),
            ("1 234,5", "1234.5"),
            ("12,500", "12500"),
            ("1.234.567", "1234567"),
            ("0,99", "0.99"),
            ("-12", "-12"),
            ("42", "42"),
            ("3.5", "3.5"),
        ] {
            assert_eq!(ok(DataType::Number, raw), clean, "{raw}");
        }
        assert!(convert(DataType::Number, "twelve").is_err());
        assert!(convert(DataType::Number, ".,").is_err());
    }

    #[test]
    fn amounts_keep_two_decimals_and_their_currency() {
        let amount = convert(DataType::Amount, "1.234,50 €").unwrap();
        assert_eq!(
            (amount.value.as_str(), amount.currency.as_deref()),
            ("1234.50", Some("EUR"))
        );
        let amount = convert(DataType::Amount, "USD 99").unwrap();
        assert_eq!(
            (amount.value.as_str(), amount.currency.as_deref()),
            ("99.00", Some("USD"))
        );
        let amount = convert(DataType::Amount, "$1,299.9").unwrap();
        assert_eq!(
            (amount.value.as_str(), amount.currency.as_deref()),
            ("1299.90", Some("USD"))
        );
        assert_eq!(convert(DataType::Amount, "17,00").unwrap().currency, None);
        assert!(convert(DataType::Amount, "1.2345 €").is_err());
    }

    #[test]
    fn dates_become_iso() {
        for (raw, iso) in [
            ("14.03.2024", "2024-03-14"),
            ("14/03/24", "2024-03-14"),
            ("2024-03-14", "2024-03-14"),
            ("03/14/2024", "2024-03-14"),
            ("14. März 2024", "2024-03-14"),
            ("March 14, 2024", "2024-03-14"),
            ("1 Dec 2023", "2023-12-01"),
            ("29.02.2024", "2024-02-29"),
        ] {
            assert_eq!(ok(DataType::Date, raw), iso, "{raw}");
        }
        for bad in ["30.02.2024", "14.13.2024", "yesterday", "2024", "1.2.3.4"] {
            assert!(convert(DataType::Date, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ibans_are_checked() {
        assert_eq!(
            ok(DataType::Iban, "DE89 3704 0044 0532 0130 00"),
            "DE89 3704 0044 0532 0130 00"
        );
        assert_eq!(
            ok(DataType::Iban, "gb29nwbk60161331926819"),
            "GB29 NWBK 6016 1331 9268 19"
        );
        let wrong = convert(DataType::Iban, "DE88 3704 0044 0532 0130 00").unwrap_err();
        assert!(wrong.contains("check digits"), "{wrong}");
        assert!(
            convert(DataType::Iban, "DE89 3704 0044 0532 0130")
                .unwrap_err()
                .contains("22 characters")
        );
    }

    #[test]
    fn ids_emails_phones_and_text() {
        assert_eq!(ok(DataType::Id, "#inv-2024/0017"), "INV-2024/0017");
        assert!(convert(DataType::Id, "---").is_err());
        assert_eq!(ok(DataType::Email, "Billing@Muster-GmbH.DE"), "Billing@muster-gmbh.de");
        assert!(convert(DataType::Email, "billing@localhost").is_err());
        assert!(convert(DataType::Email, "no at sign").is_err());
        assert_eq!(ok(DataType::Phone, "+49 (30) 123-4567"), "+49301234567");
        assert_eq!(ok(DataType::Phone, "0049 30 1234567"), "+49301234567");
        assert_eq!(ok(DataType::Phone, "030 1234567"), "0301234567");
        assert!(convert(DataType::Phone, "12").is_err());
        assert_eq!(ok(DataType::Text, "  Muster   GmbH "), "Muster GmbH");
        assert!(convert(DataType::Text, "  ").is_err());
    }
}
