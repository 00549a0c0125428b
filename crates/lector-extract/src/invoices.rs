//! Invoices made to order with their true field values, for the extraction benchmark and
//! tests: four layouts (labels beside their values, labels above them in a header table,
//! a right-hand column, a letter with the number in its subject line), each in English and
//! German, with random vendors, numbers, dates, line items, totals and valid IBANs, all from a
//! seed. Only built with the `samples` feature.

use crate::samples::{TextRun, text_pdf};

/// The true values of an invoice's fields, in their clean form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truth {
    pub invoice_number: String,
    /// ISO 8601.
    pub date: String,
    /// Two decimals, no grouping.
    pub total: String,
    /// Grouped in fours.
    pub iban: String,
    pub vendor: String,
}

/// An invoice: its PDF, what it says, and how it was laid out.
#[derive(Debug, Clone)]
pub struct Invoice {
    pub pdf: Vec<u8>,
    pub truth: Truth,
    pub layout: usize,
    pub german: bool,
}

/// How many layouts there are.
pub const LAYOUTS: usize = 4;

const VENDORS: [&str; 12] = [
    "Muster GmbH",
    "Acme Ltd",
    "Nordlicht Handels AG",
    "Blue River Inc.",
    "Bäckerei Sommer KG",
    "Stellar Tools LLC",
    "Rheinwerk Logistik GmbH",
    "Harbour & Finch Ltd",
    "Kranich Software SE",
    "Greenleaf Supplies Inc.",
    "Alpenblick Hotel GmbH",
    "Quantum Parts Corp",
];
const ITEMS_EN: [&str; 6] = [
    "Consulting",
    "Licence fee",
    "Shipping",
    "Maintenance",
    "Training day",
    "Hardware",
];
const ITEMS_DE: [&str; 6] = [
    "Beratung",
    "Lizenzgebühr",
    "Versand",
    "Wartung",
    "Schulungstag",
    "Hardware",
];
const MONTHS_EN: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A deterministic source of numbers (xorshift64*).
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// `count` invoices from `seed`, the layouts and languages taking turns.
pub fn invoices(count: usize, seed: u64) -> Vec<Invoice> {
    let mut dice = Dice(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..count)
        .map(|i| invoice(&mut dice, i % LAYOUTS, (i / LAYOUTS) % 2 == 1))
        .collect()
}

fn invoice(dice: &mut Dice, layout: usize, german: bool) -> Invoice {
    let vendor = dice.pick(&VENDORS).to_string();
    let number = match dice.below(3) {
        0 => format!("INV-{}-{:04}", 2020 + dice.below(6), dice.below(10_000)),
        1 => format!("RE{:06}", dice.below(1_000_000)),
        _ => format!("{}/{:03}", 2020 + dice.below(6), dice.below(1000)),
    };
    let (year, month, day) = (
        2020 + dice.below(6) as u32,
        1 + dice.below(12) as u32,
        1 + dice.below(28) as u32,
    );
    let items: Vec<(String, u64)> = (0..1 + dice.below(4))
        .map(|_| {
            let name = dice.pick(if german { &ITEMS_DE } else { &ITEMS_EN }).to_string();
            (name, 1_000 + dice.below(250_000))
        })
        .collect();
    let cents: u64 = items.iter().map(|(_, c)| c).sum();
    let iban = iban(dice);
    let truth = Truth {
        invoice_number: number.to_uppercase(),
        date: format!("{year:04}-{month:02}-{day:02}"),
        total: format!("{}.{:02}", cents / 100, cents % 100),
        iban: iban.clone(),
        vendor: vendor.clone(),
    };
    let shown_date = if german {
        format!("{day:02}.{month:02}.{year}")
    } else if dice.below(2) == 0 {
        format!("{} {day}, {year}", MONTHS_EN[month as usize - 1])
    } else {
        format!("{year}-{month:02}-{day:02}")
    };
    let page = Page {
        vendor: &vendor,
        number: &number,
        date: &shown_date,
        items: &items,
        cents,
        iban: &iban,
        german,
    };
    let runs = match layout {
        0 => beside(&page),
        1 => header_table(&page),
        2 => right_column(&page),
        _ => letter(&page),
    };
    Invoice {
        pdf: text_pdf(&[runs]),
        truth,
        layout,
        german,
    }
}

/// An amount as the language writes it: "1.234,50 €" or "€1,234.50".
fn money(cents: u64, german: bool) -> String {
    let whole = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(if german { '.' } else { ',' });
        }
        grouped.push(c);
    }
    if german {
        format!("{grouped},{:02} €", cents % 100)
    } else {
        format!("€{grouped}.{:02}", cents % 100)
    }
}

/// A German IBAN with right check digits, grouped in fours.
fn iban(dice: &mut Dice) -> String {
    let bban: String = (0..18).map(|_| char::from(b'0' + dice.below(10) as u8)).collect();
    // Check digits: 98 minus the remainder of BBAN + "DE00" (D=13, E=14) by 97.
    let remainder = format!("{bban}131400")
        .bytes()
        .fold(0u32, |acc, b| (acc * 10 + u32::from(b - b'0')) % 97);
    let value = format!("DE{:02}{bban}", 98 - remainder);
    value
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).expect("ASCII"))
        .collect::<Vec<_>>()
        .join(" ")
}

type Items = [(String, u64)];

/// What an invoice's page shows, as its layouts place it.
#[derive(Clone, Copy)]
struct Page<'a> {
    vendor: &'a str,
    number: &'a str,
    /// As the page writes it.
    date: &'a str,
    items: &'a Items,
    cents: u64,
    iban: &'a str,
    german: bool,
}

/// The page's line items from `top` down, each with its amount at the right; answers where
/// the next row would start.
fn lines_of_items(runs: &mut Vec<TextRun>, page: &Page<'_>, top: f32) -> f32 {
    let mut y = top;
    for (name, cents) in page.items {
        runs.push(TextRun::new(60.0, y, 10.0, name.as_str()));
        runs.push(TextRun::new(430.0, y, 10.0, money(*cents, page.german)));
        y += 16.0;
    }
    y
}

/// The total on a row of its own, in bold: its label at `x`, the amount in the items' column.
fn total_row(runs: &mut Vec<TextRun>, page: &Page<'_>, x: f32, y: f32, label: &str) {
    runs.push(TextRun::new(x, y, 11.0, label).bold());
    runs.push(TextRun::new(430.0, y, 11.0, money(page.cents, page.german)).bold());
}

fn beside(page: &Page<'_>) -> Vec<TextRun> {
    let (title, no, on, total, pay) = if page.german {
        ("Rechnung", "Rechnung Nr.", "Datum:", "Gesamtbetrag:", "Bankverbindung")
    } else {
        ("Invoice", "Invoice No.", "Date:", "Total:", "Bank details")
    };
    let mut runs = vec![
        TextRun::new(50.0, 70.0, 18.0, page.vendor).bold(),
        TextRun::new(50.0, 88.0, 9.0, "Hauptstraße 12, 10115 Berlin"),
        TextRun::new(50.0, 150.0, 16.0, title).bold(),
        TextRun::new(50.0, 180.0, 10.0, format!("{no} {}", page.number)),
        TextRun::new(50.0, 196.0, 10.0, format!("{on} {}", page.date)),
    ];
    let y = lines_of_items(&mut runs, page, 250.0);
    total_row(&mut runs, page, 300.0, y + 20.0, total);
    runs.push(TextRun::new(50.0, 760.0, 8.0, format!("{pay}: IBAN {}", page.iban)));
    runs
}

fn header_table(page: &Page<'_>) -> Vec<TextRun> {
    let (no, on, due, total) = if page.german {
        ("Rechnungsnummer", "Rechnungsdatum", "Kundennummer", "Rechnungsbetrag")
    } else {
        ("Invoice Number", "Invoice Date", "Customer", "Amount due")
    };
    let mut runs = vec![
        TextRun::new(350.0, 60.0, 16.0, page.vendor).bold(),
        TextRun::new(50.0, 140.0, 9.0, no),
        TextRun::new(220.0, 140.0, 9.0, on),
        TextRun::new(390.0, 140.0, 9.0, due),
        TextRun::new(50.0, 154.0, 11.0, page.number),
        TextRun::new(220.0, 154.0, 11.0, page.date),
        TextRun::new(390.0, 154.0, 11.0, "K-20417"),
    ];
    let y = lines_of_items(&mut runs, page, 220.0);
    runs.push(TextRun::new(300.0, y + 24.0, 11.0, total));
    runs.push(TextRun::new(300.0, y + 40.0, 13.0, money(page.cents, page.german)).bold());
    runs.push(TextRun::new(50.0, 770.0, 8.0, "IBAN"));
    runs.push(TextRun::new(50.0, 781.0, 8.0, page.iban));
    runs
}

fn right_column(page: &Page<'_>) -> Vec<TextRun> {
    let (no, on, total) = if page.german {
        ("Rechnungs-Nr.:", "Datum:", "Summe")
    } else {
        ("Invoice #:", "Date:", "Total due")
    };
    let mut runs = vec![
        TextRun::new(50.0, 60.0, 14.0, page.vendor).bold(),
        TextRun::new(360.0, 110.0, 10.0, no),
        TextRun::new(460.0, 110.0, 10.0, page.number),
        TextRun::new(360.0, 126.0, 10.0, on),
        TextRun::new(460.0, 126.0, 10.0, page.date),
    ];
    let y = lines_of_items(&mut runs, page, 240.0);
    total_row(&mut runs, page, 60.0, y + 18.0, total);
    runs.push(TextRun::new(360.0, 700.0, 8.0, format!("IBAN: {}", page.iban)));
    runs
}

fn letter(page: &Page<'_>) -> Vec<TextRun> {
    let (subject, greeting, total, transfer) = if page.german {
        (
            "Rechnung",
            "Sehr geehrte Damen und Herren, wir berechnen:",
            "Zu zahlen",
            "Bitte überweisen Sie auf",
        )
    } else {
        (
            "Invoice",
            "Dear customer, we charge you for:",
            "Grand total",
            "Please transfer to",
        )
    };
    let mut runs = vec![
        TextRun::new(
            50.0,
            50.0,
            9.0,
            format!("{} · Hauptstraße 12 · 10115 Berlin", page.vendor),
        ),
        TextRun::new(400.0, 120.0, 10.0, format!("Berlin, {}", page.date)),
        TextRun::new(50.0, 170.0, 12.0, format!("{subject} {}", page.number)).bold(),
        TextRun::new(50.0, 200.0, 10.0, greeting),
    ];
    let y = lines_of_items(&mut runs, page, 230.0);
    total_row(&mut runs, page, 60.0, y + 16.0, total);
    runs.push(TextRun::new(
        50.0,
        y + 60.0,
        10.0,
        format!("{transfer} IBAN {}.", page.iban),
    ));
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_ibans_are_well_formed() {
        assert_eq!(money(123_450, true), "1.234,50 €");
        assert_eq!(money(123_450, false), "€1,234.50");
        assert_eq!(money(99, false), "€0.99");
        let mut dice = Dice(7);
        for _ in 0..50 {
            let iban = iban(&mut dice);
            crate::convert::convert(crate::convert::DataType::Iban, &iban).expect("a valid IBAN");
        }
    }

    #[test]
    fn the_same_seed_makes_the_same_invoices() {
        let (a, b) = (invoices(8, 1), invoices(8, 1));
        assert!(a.iter().zip(&b).all(|(x, y)| x.pdf == y.pdf && x.truth == y.truth));
        assert_eq!(
            a.iter().map(|i| (i.layout, i.german)).collect::<Vec<_>>()[..5],
            [(0, false), (1, false), (2, false), (3, false), (0, true)]
        );
    }
}
