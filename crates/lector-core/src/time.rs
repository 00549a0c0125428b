//! Timestamps: stored as microseconds since the Unix epoch, served as RFC 3339 in UTC.

use serde::{Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime};

/// A UTC instant with microsecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub fn now() -> Self {
        let nanos = OffsetDateTime::now_utc().unix_timestamp_nanos();
        Self((nanos / 1_000) as i64)
    }

    pub fn micros(self) -> i64 {
        self.0
    }

    pub fn plus_seconds(self, seconds: i64) -> Self {
        Self(self.0.saturating_add(seconds.saturating_mul(1_000_000)))
    }

    pub fn unix_seconds(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }

    pub fn to_rfc3339(self) -> String {
        self.formatted().unwrap_or_default()
    }

    /// RFC 3339 in UTC; None for an instant outside the years 0 to 9999, which it cannot spell.
    fn formatted(self) -> Option<String> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
    }

    /// The instant of a parsed date-time, if it can be served again: one whose offset takes it
    /// past the year 9999 (or before 0) in UTC is refused, not served as "".
    fn servable(t: OffsetDateTime) -> Option<Self> {
        let t = Self(i64::try_from(t.unix_timestamp_nanos() / 1_000).ok()?);
        t.formatted().map(|_| t)
    }

    /// Parses an RFC 3339 date-time with any offset.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        Self::servable(OffsetDateTime::parse(text, &Rfc3339).ok()?)
    }

    /// Parses a date-time a client sent: RFC 3339 with any offset, or an ISO 8601 date-time
    /// without one, read as UTC: `2024-05-01T12:00:00.123456`, as Python's
    /// `datetime.now().isoformat()` writes a naive datetime (and the original client sends one).
    /// `T` or a space between date and time; seconds required, a fraction of up to nine digits.
    pub fn parse_lenient(text: &str) -> Option<Self> {
        if let Some(t) = Self::parse_rfc3339(text) {
            return Some(t);
        }
        let naive = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]");
        let spaced = format_description!("[year]-[month]-[day] [hour]:[minute]:[second][optional [.[subsecond]]]");
        let t = PrimitiveDateTime::parse(text, naive)
            .or_else(|_| PrimitiveDateTime::parse(text, spaced))
            .ok()?
            .assume_utc();
        Self::servable(t)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_rfc3339() {
        let t = Timestamp(1_700_000_000_123_456);
        assert_eq!(t.to_rfc3339(), "2023-11-14T22:13:20.123456Z");
        assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()), Some(t));
        assert_eq!(Timestamp::parse_rfc3339("2023-11-14T23:13:20.123456+01:00"), Some(t));
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
        let last = Timestamp::parse_rfc3339("9999-12-31T23:59:59Z").unwrap();
        assert_eq!(last.to_rfc3339(), "9999-12-31T23:59:59Z");
        assert_eq!(Timestamp::parse_rfc3339("9999-12-31T23:59:59-00:01"), None);
    }

    #[test]
    fn lenient_parsing_reads_a_date_time_without_offset_as_utc() {
        let t = Timestamp(1_700_000_000_123_456);
        assert_eq!(Timestamp::parse_rfc3339("2023-11-14T22:13:20.123456"), None);
        for text in [
            "2023-11-14T22:13:20.123456",
            "2023-11-14 22:13:20.123456",
            "2023-11-14T22:13:20.123456Z",
            "2023-11-14T23:13:20.123456+01:00",
        ] {
            assert_eq!(Timestamp::parse_lenient(text), Some(t), "{text}");
        }
        assert_eq!(
            Timestamp::parse_lenient("2023-11-14T22:13:20"),
            Some(Timestamp(1_700_000_000_000_000))
        );
        assert_eq!(
            Timestamp::parse_lenient("2023-11-14T22:13:20.5"),
            Some(Timestamp(1_700_000_000_500_000))
        );
        for bad in [
            "",
            "yesterday",
            "2023-11-14",
            "2023-11-14T22:13",
            "2023-11-14T22:13:20.",
            "2023-13-14T22:13:20",
            "2023-11-14T22:13:20.123456 ",
            "2023-11-14T22:13:20.123456+01",
            "9999-12-31T23:59:59-23:59",
            "0000-01-01T00:00:00+23:59",
        ] {
            assert_eq!(Timestamp::parse_lenient(bad), None, "{bad:?}");
        }
    }
}
