//! Checks for the string formats of the subset.

/// A string format of the subset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    DateTime,
    Date,
    Uuid,
    Email,
    Uri,
}

impl Format {
    pub(crate) fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "date-time" => Format::DateTime,
            "date" => Format::Date,
            "uuid" => Format::Uuid,
            "email" => Format::Email,
            "uri" => Format::Uri,
            _ => return None,
        })
    }

    pub(crate) fn expectation(self) -> &'static str {
        match self {
            Format::DateTime => "must be an RFC 3339 date-time such as 2026-01-31T09:30:00Z",
            Format::Date => "must be a date written YYYY-MM-DD",
            Format::Uuid => "must be a UUID such as 123e4567-e89b-12d3-a456-426614174000",
            Format::Email => "must be an email address",
            Format::Uri => "must be an absolute URI with a scheme, such as https://example.com/x",
        }
    }

    pub(crate) fn matches(self, text: &str) -> bool {
        match self {
            Format::DateTime => is_date_time(text),
            Format::Date => is_date(text),
            Format::Uuid => is_uuid(text),
            Format::Email => is_email(text),
            Format::Uri => is_uri(text),
        }
    }
}

fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn is_date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(year), Some(month), Some(day), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(year), digits(month), digits(day)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

fn is_time(text: &str) -> bool {
    // HH:MM:SS[.frac](Z|±HH:MM)
    let (clock, offset) = match text.find(['Z', 'z', '+', '-']) {
        Some(at) => text.split_at(at),
        None => return false,
    };
    let offset_ok = match offset {
        "Z" | "z" => true,
        _ => {
            let sign_stripped = offset.get(1..).unwrap_or_default();
            let mut parts = sign_stripped.split(':');
            matches!(
                (parts.next().and_then(digits_2), parts.next().and_then(digits_2), parts.next()),
                (Some(h), Some(m), None) if h <= 23 && m <= 59
            )
        }
    };
    let (whole, fraction) = match clock.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (clock, None),
    };
    let fraction_ok =
        fraction.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    let mut parts = whole.split(':');
    let clock_ok = matches!(
        (
            parts.next().and_then(digits_2),
            parts.next().and_then(digits_2),
            parts.next().and_then(digits_2),
            parts.next()
        ),
        (Some(h), Some(m), Some(s), None) if h <= 23 && m <= 59 && s <= 60
    );
    offset_ok && fraction_ok && clock_ok
}

fn digits_2(text: &str) -> Option<u32> {
    if text.len() == 2 { digits(text) } else { None }
}

fn is_date_time(text: &str) -> bool {
    match text.find(['T', 't']) {
        Some(at) => {
            let (date, time) = text.split_at(at);
            is_date(date) && is_time(time.get(1..).unwrap_or_default())
        }
        None => false,
    }
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~.-".contains(&b));
    let domain_ok = !domain.is_empty()
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    local_ok && domain_ok
}

fn is_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.');
    scheme_ok
        && !rest.is_empty()
        && !text.chars().any(|c| {
            c.is_whitespace()
                || c.is_control()
                || matches!(c, '<' | '>' | '"' | '{' | '}' | '|' | '\\' | '^' | '`')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert!(Format::DateTime.matches("2026-02-28T09:30:00Z"));
        assert!(Format::DateTime.matches("2024-02-29T23:59:60.123+05:30"));
        assert!(!Format::DateTime.matches("2023-02-29T09:30:00Z"));
        assert!(!Format::DateTime.matches("2026-02-28 09:30:00Z"));
        assert!(!Format::DateTime.matches("2026-02-28T09:30:00"));
        assert!(Format::Date.matches("2026-12-31"));
        assert!(!Format::Date.matches("2026-13-01"));
        assert!(Format::Uuid.matches("123e4567-e89b-12d3-a456-426614174000"));
        assert!(!Format::Uuid.matches("123e4567e89b12d3a456426614174000"));
        assert!(Format::Email.matches("ops@example.com"));
        assert!(!Format::Email.matches("ops@@example.com"));
        assert!(!Format::Email.matches("ops example@x.com"));
        assert!(Format::Uri.matches("https://example.com/a?b=c"));
        assert!(Format::Uri.matches("urn:isbn:0451450523"));
        assert!(!Format::Uri.matches("/relative/path"));
        assert!(!Format::Uri.matches("https://exa mple.com"));
    }
}
