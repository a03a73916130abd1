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

/// What is wrong with one character of an id, and what to write instead.
fn bad_char(c: char, allowed: &str) -> String {
    if c == '_' {
        format!("`_`; underscores are reserved for wire names, so use `-` instead ({allowed})")
    } else if c.is_ascii_uppercase() {
        format!("the uppercase letter `{c}`; write it lowercase ({allowed})")
    } else if !c.is_ascii() {
        format!("`{c}` (U+{:04X}), which is not ASCII ({allowed})", c as u32)
    } else if c.is_whitespace() {
        format!("a space ({allowed})")
    } else {
        format!("`{c}` ({allowed})")
    }
}

fn check_type_segment(segment: &str, whole: &str) -> Result<(), String> {
    const ALLOWED: &str = "segments hold lowercase ASCII letters, digits and `-`";
    let Some(first) = segment.chars().next() else {
        let place = if whole.starts_with('.') {
            "a leading `.`"
        } else if whole.ends_with('.') {
            "a trailing `.`"
        } else {
            "two dots in a row"
        };
        return Err(format!(
            "component type `{whole}` has an empty segment ({place}); write dot-separated segments such as `devices.table`"
        ));
    };
    if let Some(bad) = segment
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        let example = if bad == '_' || bad == ' ' || bad.is_ascii_uppercase() {
            suggest_type(whole)
        } else {
            "devices.table".to_owned()
        };
        return Err(format!(
            "segment `{segment}` of component type `{whole}` contains {}; for example `{example}`",
            bad_char(bad, ALLOWED)
        ));
    }
    if !first.is_ascii_lowercase() {
        return Err(format!(
            "segment `{segment}` of component type `{whole}` starts with `{first}`; each segment starts with a lowercase letter (for example `devices.table`)"
        ));
    }
    Ok(())
}

/// A component type close to `text` that follows the grammar, for messages.
fn suggest_type(text: &str) -> String {
    let fixed: String = text
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.')
        .collect();
    let segments: Vec<&str> = fixed.split('.').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() {
        "devices.table".to_owned()
    } else {
        segments.join(".")
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
    if let Some((prefix, rest)) = text.split_once(':') {
        return Err(if Plane::parse(prefix).is_some() {
            format!(
                "component type `{text}` carries the plane prefix `{prefix}:`; the type is only the part after it: write `{rest}` (capability ids add `view:` themselves)"
            )
        } else {
            format!(
                "component type `{text}` contains `:`; write dot-separated lowercase segments such as `devices.table`"
            )
        });
    }
    too_long("the component type", text)?;
    text.split('.')
        .try_for_each(|segment| check_type_segment(segment, text))
}

/// Checks a capability name such as `selectRows`.
pub fn check_capability_name(text: &str) -> Result<(), String> {
    const ALLOWED: &str = "a capability name is camelCase ASCII letters and digits";
    let Some(first) = text.chars().next() else {
        return Err(
            "the capability name is empty; write camelCase such as `selectRows`".to_owned(),
        );
    };
    if let Some(bad) = text.chars().find(|c| !c.is_ascii_alphanumeric()) {
        let (reason, example) = if bad == '_' || bad == '-' {
            (
                format!("`{bad}`; write it camelCase"),
                snake_to_camel(&text.replace('-', "_")),
            )
        } else {
            (bad_char(bad, ALLOWED), "selectRows".to_owned())
        };
        return Err(format!(
            "capability name `{text}` contains {reason}: for example `{example}`"
        ));
    }
    if !first.is_ascii_lowercase() {
        return Err(format!(
            "capability name `{text}` starts with `{first}`; a capability name is camelCase and starts with a lowercase letter (for example `selectRows`)"
        ));
    }
    too_long("the capability name", text)
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
        let Some(first) = segment.chars().next() else {
            return Err(format!(
                "procedure path `{text}` has an empty segment; write dot-separated segments such as `devices.disable`"
            ));
        };
        if let Some(bad) = segment
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
        {
            return Err(format!(
                "segment `{segment}` of procedure path `{text}` contains {}",
                bad_char(bad, "path segments hold ASCII letters, digits and `-`")
            ));
        }
        if !first.is_ascii_alphabetic() {
            return Err(format!(
                "segment `{segment}` of procedure path `{text}` starts with `{first}`; each segment starts with a letter (for example `devices.disable`)"
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
