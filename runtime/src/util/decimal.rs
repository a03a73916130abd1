//! A surface version on the wire: a decimal string, written straight into
//! the output without an intermediate `String`.

use serde::{Serialize, Serializer};

/// Serializes a `u64` as its decimal string (`"42"`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecimalString(pub(crate) u64);

impl Serialize for DecimalString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::DecimalString;

    #[test]
    fn writes_the_decimal_string() {
        assert_eq!(
            serde_json::to_string(&DecimalString(42)).ok().as_deref(),
            Some("\"42\"")
        );
        assert_eq!(
            serde_json::to_value(DecimalString(u64::MAX)).ok(),
            Some(serde_json::Value::from(u64::MAX.to_string()))
        );
    }
}
