//! Timestamps: stored as microseconds since the Unix epoch, served as RFC 3339 in UTC.

use serde::{Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

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
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000)
            .ok()
            .and_then(|t| t.format(&Rfc3339).ok())
            .unwrap_or_default()
    }

    /// Parses an RFC 3339 date-time with any offset.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
        Some(Self((t.unix_timestamp_nanos() / 1_000) as i64))
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
    }
}
