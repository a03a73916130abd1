//! Schemas for the types of other crates that users reach for: dates and
//! times, UUIDs and URLs, each as a string with the subset's `format`.
//!
//! | feature | types | schema |
//! |---|---|---|
//! | `chrono` | `DateTime<Utc>`, `DateTime<FixedOffset>`, `DateTime<Local>` | `{"type": "string", "format": "date-time"}` |
//! | `chrono` | `NaiveDate` | `{"type": "string", "format": "date"}` |
//! | `uuid` | `Uuid` | `{"type": "string", "format": "uuid"}` |
//! | `url` | `Url` | `{"type": "string", "format": "uri"}` |
//!
//! The schemas come from schemars' own features (`chrono04`, `uuid1`,
//! `url2`), which the runtime features turn on. Types without a schemars
//! feature (the `time` crate's `OffsetDateTime` and `Date`, chrono's
//! naive date-times, which carry no offset) take a format helper instead:
//!
//! ```
//! use agent_surface::prelude::*;
//!
//! #[agent_schema]
//! pub struct Window {
//!     /// When the window opens, RFC 3339 (for example with
//!     /// `#[serde(with = "time::serde::rfc3339")]` on a `time::OffsetDateTime`).
//!     #[schemars(schema_with = "agent_surface::schema::formats::date_time")]
//!     pub opens: String,
//! }
//! ```

#[cfg(feature = "chrono")]
mod chrono_types {
    use super::super::AgentSchema;

    use super::super::bounded::Bounded;

    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    impl<Tz: chrono::TimeZone> AgentSchema for chrono::DateTime<Tz>
    where
        Self: schemars::JsonSchema,
    {
        const FLATTENS: bool = false;
    }
    #[cfg_attr(docsrs, doc(cfg(feature = "chrono")))]
    impl AgentSchema for chrono::NaiveDate {
        const FLATTENS: bool = false;
    }
    // Fixed-length strings on the wire.
    impl<Tz: chrono::TimeZone, D> Bounded<D> for chrono::DateTime<Tz> {
        const UNBOUNDED: Option<&'static str> = None;
    }
    impl<D> Bounded<D> for chrono::NaiveDate {
        const UNBOUNDED: Option<&'static str> = None;
    }
}

#[cfg(feature = "uuid")]
#[cfg_attr(docsrs, doc(cfg(feature = "uuid")))]
impl super::AgentSchema for uuid::Uuid {
    const FLATTENS: bool = false;
}
// A fixed-length string on the wire.
#[cfg(feature = "uuid")]
impl<D> super::bounded::Bounded<D> for uuid::Uuid {
    const UNBOUNDED: Option<&'static str> = None;
}

#[cfg(feature = "url")]
#[cfg_attr(docsrs, doc(cfg(feature = "url")))]
impl super::AgentSchema for url::Url {
    const FLATTENS: bool = false;
}
// A string: the field that holds it carries its `length(max = …)`, and
// reached unseen (through a generic parameter) it is unbounded.
#[cfg(feature = "url")]
impl<D> super::bounded::Bounded<D> for url::Url {
    const UNBOUNDED: Option<&'static str> = <String as super::bounded::Bounded<D>>::UNBOUNDED;
    const UNSEEN: bool = true;
}

/// `#[schemars(schema_with = "…")]` helpers: the string formats of the
/// subset, for field types that have no schema of their own.
pub mod formats {
    use schemars::{Schema, SchemaGenerator, json_schema};

    /// `{"type": "string", "format": "date-time"}`: an RFC 3339 date-time.
    pub fn date_time(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date-time"})
    }

    /// `{"type": "string", "format": "date"}`: a `YYYY-MM-DD` date.
    pub fn date(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "date"})
    }

    /// `{"type": "string", "format": "uuid"}`.
    pub fn uuid(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "uuid"})
    }

    /// `{"type": "string", "format": "uri"}`: an absolute URI.
    pub fn uri(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "uri"})
    }

    /// `{"type": "string", "format": "email"}`.
    pub fn email(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "email"})
    }
}
