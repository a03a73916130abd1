//! The identity grammar.
//!
//! ```text
//! capability-id   = plane ":" component-type "." capability-name   ; view plane
//!                 | "domain:" procedure-path                        ; domain plane
//! plane           = "view" | "domain"
//! component-type  = segment *( "." segment )
//! segment         = lowercase-letter *( lowercase-letter / digit / "-" )
//! capability-name = lowercase-letter *( letter / digit )            ; camelCase
//! instance-id     = 1*( letter / digit / "-" / "_" )
//! procedure-path  = path-segment *( "." path-segment )
//! path-segment    = letter *( letter / digit / "-" )
//! ```
//!
//! Underscores are reserved for the wire-name encoding (they only appear in
//! instance ids). Every id is at most [`MAX_ID_LEN`] characters.
//!
//! Each check returns `Err` with a message that says what is wrong and how to
//! write it instead.

use crate::Plane;

/// Maximum length of any id (component type, instance id, capability id).
pub const MAX_ID_LEN: usize = 128;

/// The instance id used when none is given.
pub const DEFAULT_INSTANCE: &str = "default";

fn too_long(what: &str, text: &str) -> Result<(), String> {
    if text.len() > MAX_ID_LEN {
        Err(format!(
            "{what} is {} characters long; ids are at most {MAX_ID_LEN}",
            text.len()
        ))
    } else {
        Ok(())
    }
}

fn check_type_segment(segment: &str, whole: &str) -> Result<(), String> {
    let mut chars = segment.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if segment.is_empty() {
        Err(format!(
            "component type `{whole}` has an empty segment; write dot-separated segments such as `devices.table`"
        ))
    } else if first_ok && rest_ok {
        Ok(())
    } else {
        Err(format!(
            "segment `{segment}` of component type `{whole}` must start with a lowercase letter and contain only lowercase letters, digits and `-` (for example `devices.table`)"
        ))
    }
}

/// Checks a component type such as `devices.table`.
pub fn check_component_type(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(
            "the component type is empty; write dot-separated lowercase segments such as `devices.table`"
                .to_owned(),
        );
    }
    too_long("the component type", text)?;
    text.split('.')
        .try_for_each(|segment| check_type_segment(segment, text))
}

/// Checks a capability name such as `selectRows`.
pub fn check_capability_name(text: &str) -> Result<(), String> {
    let mut chars = text.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric());
    if first_ok && rest_ok {
        too_long("the capability name", text)
    } else {
        Err(format!(
            "capability name `{text}` must be camelCase: a lowercase letter followed by letters and digits (for example `selectRows`)"
        ))
    }
}

/// Checks an instance id such as `main` or `device_456`.
pub fn check_instance_id(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(
            "the instance id is empty; use a data-derived id such as `main` or `device-42`"
                .to_owned(),
        );
    }
    too_long("the instance id", text)?;
    match text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        Some(bad) => Err(format!(
            "instance id `{text}` contains `{bad}`; use only letters, digits, `-` and `_` (derive it from data, for example `device-42`)"
        )),
        None => Ok(()),
    }
}

/// Checks the path of a domain procedure id (the part after `domain:`).
pub fn check_procedure_path(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(
            "the procedure path is empty; write dot-separated segments such as `devices.disable`"
                .to_owned(),
        );
    }
    for segment in text.split('.') {
        let mut chars = segment.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !(first_ok && rest_ok) {
            return Err(format!(
                "segment `{segment}` of procedure path `{text}` must start with a letter and contain only letters, digits and `-` (for example `devices.disable`)"
            ));
        }
    }
    Ok(())
}

/// The parts of a well-formed capability id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapabilityIdParts<'a> {
    /// The plane prefix.
    pub plane: Plane,
    /// View plane: the component type. Domain plane: the whole procedure path.
    pub path: &'a str,
    /// View plane: the capability name (after the last dot). Domain plane: `None`.
    pub name: Option<&'a str>,
}

/// Checks and splits a capability id such as `view:devices.table.selectRows`
/// or `domain:devices.disable`.
pub fn parse_capability_id(text: &str) -> Result<CapabilityIdParts<'_>, String> {
    too_long("the capability id", text)?;
    let Some((plane, rest)) = text.split_once(':') else {
        return Err(format!(
            "capability id `{text}` has no plane; write `view:<component-type>.<name>` or `domain:<path>`"
        ));
    };
    match Plane::parse(plane) {
        Some(Plane::View) => {
            let Some((component_type, name)) = rest.rsplit_once('.') else {
                return Err(format!(
                    "view capability id `{text}` needs a component type and a name, as in `view:devices.table.selectRows`"
                ));
            };
            check_component_type(component_type)?;
            check_capability_name(name)?;
            Ok(CapabilityIdParts {
                plane: Plane::View,
                path: component_type,
                name: Some(name),
            })
        }
        Some(Plane::Domain) => {
            check_procedure_path(rest)?;
            Ok(CapabilityIdParts {
                plane: Plane::Domain,
                path: rest,
                name: None,
            })
        }
        None => Err(format!(
            "capability id `{text}` has plane `{plane}`; the plane is `view` or `domain`"
        )),
    }
}

/// Formats the id of a view capability: `view:<component_type>.<name>`.
pub fn view_capability_id(component_type: &str, name: &str) -> String {
    let mut id = String::with_capacity(6 + component_type.len() + name.len());
    id.push_str("view:");
    id.push_str(component_type);
    id.push('.');
    id.push_str(name);
    id
}

/// Converts a Rust method name to a capability name: `select_rows` → `selectRows`.
///
/// Leading underscores and `r#` prefixes are dropped; the result may still
/// fail [`check_capability_name`] (for example `_2fa` → `2fa`).
pub fn snake_to_camel(snake: &str) -> String {
    let snake = snake.strip_prefix("r#").unwrap_or(snake);
    let mut out = String::with_capacity(snake.len());
    let mut upper_next = false;
    for c in snake.trim_start_matches('_').chars() {
        if c == '_' {
            upper_next = !out.is_empty();
        } else if upper_next {
            out.extend(c.to_uppercase());
            upper_next = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_from_method_names() {
        assert_eq!(snake_to_camel("select_rows"), "selectRows");
        assert_eq!(snake_to_camel("read_state"), "readState");
        assert_eq!(snake_to_camel("go_to"), "goTo");
        assert_eq!(snake_to_camel("close"), "close");
        assert_eq!(snake_to_camel("r#type"), "type");
        assert_eq!(snake_to_camel("a__b"), "aB");
        assert_eq!(snake_to_camel("export_v2_csv"), "exportV2Csv");
    }
}
