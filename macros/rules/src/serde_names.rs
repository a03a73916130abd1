//! Serde's `rename_all` rules applied to a Rust field name: the one
//! implementation of how a field is named on the wire, shared by the macros
//! (procedure field handles) and anything that checks those names against a
//! generated schema.

/// `field` (a Rust field name, `snake_case`) under the serde `rename_all`
/// rule `rule`; `None` for a rule serde does not know.
///
/// ```
/// use agent_surface_rules::rename_field;
///
/// assert_eq!(rename_field("device_ids", "camelCase").as_deref(), Some("deviceIds"));
/// assert_eq!(rename_field("device_ids", "kebab-case").as_deref(), Some("device-ids"));
/// assert_eq!(rename_field("device_ids", "Title Case"), None);
/// ```
pub fn rename_field(field: &str, rule: &str) -> Option<String> {
    let capitalized = |word: &str| {
        let mut chars = word.chars();
        chars.next().map_or_else(String::new, |first| {
            first.to_uppercase().collect::<String>() + chars.as_str()
        })
    };
    Some(match rule {
        "lowercase" => field.to_lowercase(),
        "UPPERCASE" => field.to_uppercase(),
        "snake_case" => field.to_owned(),
        "SCREAMING_SNAKE_CASE" => field.to_uppercase(),
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.replace('_', "-").to_uppercase(),
        "PascalCase" => field
            .split('_')
            .filter(|w| !w.is_empty())
            .map(capitalized)
            .collect(),
        "camelCase" => crate::ids::snake_to_camel(field),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::rename_field;

    #[test]
    fn every_serde_rule() {
        let cases = [
            ("lowercase", "max_rows"),
            ("UPPERCASE", "MAX_ROWS"),
            ("snake_case", "max_rows"),
            ("SCREAMING_SNAKE_CASE", "MAX_ROWS"),
            ("kebab-case", "max-rows"),
            ("SCREAMING-KEBAB-CASE", "MAX-ROWS"),
            ("PascalCase", "MaxRows"),
            ("camelCase", "maxRows"),
        ];
        for (rule, wire) in cases {
            assert_eq!(
                rename_field("max_rows", rule).as_deref(),
                Some(wire),
                "{rule}"
            );
        }
        assert_eq!(rename_field("max_rows", "camel"), None);
    }
}
