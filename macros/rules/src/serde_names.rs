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
    // Exactly as serde's derive renames a field (its `RenameRule`), ASCII
    // case changes only; `lowercase` leaves a field as written.
    let pascal = || {
        let mut pascal = String::with_capacity(field.len());
        let mut capitalize = true;
        for c in field.chars() {
            if c == '_' {
                capitalize = true;
            } else if capitalize {
                pascal.push(c.to_ascii_uppercase());
                capitalize = false;
            } else {
                pascal.push(c);
            }
        }
        pascal
    };
    Some(match rule {
        "lowercase" | "snake_case" => field.to_owned(),
        "UPPERCASE" | "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.to_ascii_uppercase().replace('_', "-"),
        "PascalCase" => pascal(),
        "camelCase" => {
            let pascal = pascal();
            let mut chars = pascal.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_lowercase().to_string() + chars.as_str()
            })
        }
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
        // As serde: not snake_case in, serde's result out.
        assert_eq!(rename_field("ID", "camelCase").as_deref(), Some("iD"));
        assert_eq!(
            rename_field("Foo_bar", "camelCase").as_deref(),
            Some("fooBar")
        );
        assert_eq!(
            rename_field("MaxRows", "lowercase").as_deref(),
            Some("MaxRows")
        );
        assert_eq!(rename_field("_x", "PascalCase").as_deref(), Some("X"));
    }
}
