//! The subset checker: accepts exactly the allowlisted keywords, shapes and
//! limits, and names the first keyword that is not.

use serde_json::{Map, Value};

use super::{SchemaError, SchemaLimits, push_pointer};

/// JSON type names allowed in `type`.
pub(crate) const TYPES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// String formats of the subset.
pub(crate) const FORMATS: [&str; 5] = ["date-time", "date", "uuid", "email", "uri"];

/// Checks that `schema` stays inside the supported subset.
///
/// Returns the first violation found, depth first in document order, with the
/// keyword and the JSON pointer of the schema object that holds it.
pub fn check_subset(schema: &Value, limits: &SchemaLimits) -> Result<(), SchemaError> {
    let size = serde_json::to_string(schema)
        .map(|text| text.len())
        .unwrap_or(usize::MAX);
    if size > limits.max_bytes {
        return Err(SchemaError::new(
            "",
            "",
            format!(
                "the schema is {size} bytes serialized; the limit is {} bytes. Split the input or shorten descriptions",
                limits.max_bytes
            ),
        ));
    }
    let defs = schema.get("$defs").and_then(Value::as_object);
    Checker { limits, defs }.node(schema, "", 0)
}

/// The serialized size in bytes and the nesting depth of a schema, measured
/// the way [`check_subset`] limits them.
pub fn measure(schema: &Value) -> (usize, usize) {
    fn depth(schema: &Value) -> usize {
        let Some(object) = schema.as_object() else {
            return 0;
        };
        let mut deepest = 0;
        for (keyword, value) in object {
            let children: Box<dyn Iterator<Item = &Value>> = match (keyword.as_str(), value) {
                ("properties" | "$defs", Value::Object(map)) => Box::new(map.values()),
                ("anyOf", Value::Array(items)) => Box::new(items.iter()),
                ("items", item) => Box::new(std::iter::once(item)),
                _ => continue,
            };
            for child in children {
                deepest = deepest.max(1 + depth(child));
            }
        }
        deepest
    }
    let bytes = serde_json::to_string(schema)
        .map(|text| text.len())
        .unwrap_or(usize::MAX);
    (bytes, depth(schema))
}

struct Checker<'a> {
    limits: &'a SchemaLimits,
    defs: Option<&'a Map<String, Value>>,
}

fn unsupported(keyword: &str, pointer: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::new(keyword, pointer, message)
}

fn is_non_negative_integer(value: &Value) -> bool {
    value.as_u64().is_some() || value.as_f64().is_some_and(|f| f >= 0.0 && f.fract() == 0.0)
}

/// Advice for keywords that are commonly produced but not supported.
fn advice(keyword: &str) -> &'static str {
    match keyword {
        "oneOf" => {
            "use `anyOf` with mutually exclusive branches (tagged enums are converted automatically)"
        }
        "allOf" => "merge the branches into one object schema",
        "not" | "if" | "then" | "else" => "express the rule as a precondition on the action",
        "patternProperties" | "propertyNames" => {
            "use named properties, or an array of `{key, value}` entries"
        }
        "prefixItems" => "use a struct with named fields, or an array whose items share one type",
        "contains" | "minContains" | "maxContains" => "check it in a precondition",
        "dependentRequired" | "dependentSchemas" => "use an enum of object shapes (`anyOf`)",
        "unevaluatedProperties" | "unevaluatedItems" => {
            "use `additionalProperties: false` on a closed object"
        }
        "readOnly" | "writeOnly" | "contentEncoding" | "contentMediaType" | "$comment" | "$id"
        | "$anchor" | "$schema" | "definitions" => "remove it",
        _ => "use only the keywords of the supported subset",
    }
}

impl Checker<'_> {
    fn node(&self, schema: &Value, pointer: &str, depth: usize) -> Result<(), SchemaError> {
        if depth > self.limits.max_depth {
            return Err(unsupported(
                "",
                pointer,
                format!(
                    "the schema nests deeper than {} levels; flatten the type or move parts into separate inputs",
                    self.limits.max_depth
                ),
            ));
        }
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                return Err(unsupported(
                    "",
                    pointer,
                    "the `false` schema accepts nothing; remove the field or give it a type",
                ));
            }
            _ => {
                return Err(unsupported("", pointer, "a schema must be a JSON object"));
            }
        };
        for (keyword, value) in object {
            self.keyword(keyword, value, pointer, depth)?;
        }
        Ok(())
    }

    fn keyword(
        &self,
        keyword: &str,
        value: &Value,
        pointer: &str,
        depth: usize,
    ) -> Result<(), SchemaError> {
        let fail = |message: &str| Err(unsupported(keyword, pointer, message));
        match keyword {
            "type" => {
                let ok = match value {
                    Value::String(name) => TYPES.contains(&name.as_str()),
                    Value::Array(names) => {
                        !names.is_empty()
                            && names.iter().enumerate().all(|(index, name)| {
                                name.as_str().is_some_and(|name| TYPES.contains(&name))
                                    && !names.iter().take(index).any(|earlier| earlier == name)
                            })
                    }
                    _ => false,
                };
                if ok {
                    Ok(())
                } else {
                    fail(
                        "`type` must be one of object, array, string, number, integer, boolean, null, or an array of distinct names",
                    )
                }
            }
            "enum" => match value.as_array() {
                Some(values) if !values.is_empty() => Ok(()),
                _ => fail("`enum` must be a non-empty array"),
            },
            "const" | "default" => Ok(()),
            "examples" => match value {
                Value::Array(_) => Ok(()),
                _ => fail("`examples` must be an array"),
            },
            "description" | "title" => match value {
                Value::String(_) => Ok(()),
                _ => fail("annotations must be strings"),
            },
            "deprecated" | "uniqueItems" => match value {
                Value::Bool(_) => Ok(()),
                _ => fail("must be a boolean"),
            },
            "additionalProperties" => match value {
                Value::Bool(_) => Ok(()),
                _ => fail(
                    "`additionalProperties` must be a boolean: maps with typed values are outside the subset; use an array of `{key, value}` entries or a struct with named fields",
                ),
            },
            "properties" => {
                let Some(properties) = value.as_object() else {
                    return fail("`properties` must be an object of schemas");
                };
                let here = push_pointer(pointer, "properties");
                properties.iter().try_for_each(|(name, property)| {
                    self.node(property, &push_pointer(&here, name), depth + 1)
                })
            }
            "required" => {
                let ok = value.as_array().is_some_and(|names| {
                    names.iter().enumerate().all(|(index, name)| {
                        name.is_string() && !names.iter().take(index).any(|earlier| earlier == name)
                    })
                });
                if ok {
                    Ok(())
                } else {
                    fail("`required` must be an array of distinct property names")
                }
            }
            "items" => match value {
                Value::Object(_) | Value::Bool(true) => {
                    self.node(value, &push_pointer(pointer, "items"), depth + 1)
                }
                _ => fail(
                    "`items` must be a single schema; mixed tuples are outside the subset, use a struct with named fields",
                ),
            },
            "minItems" | "maxItems" | "minLength" | "maxLength" => {
                if is_non_negative_integer(value) {
                    Ok(())
                } else {
                    fail("must be a non-negative integer")
                }
            }
            "pattern" => {
                let Some(pattern) = value.as_str() else {
                    return fail("`pattern` must be a string");
                };
                match regex::Regex::new(pattern) {
                    Ok(_) => Ok(()),
                    Err(regex::Error::CompiledTooBig(limit)) => fail(&format!(
                        "the pattern compiles to more than the {limit} bytes a pattern may take \
                         (a large repetition such as `\\w{{1,300}}` multiplies its class): bound the \
                         length with `length(max = …)` and keep the pattern's repetitions small"
                    )),
                    Err(_) => fail(
                        "the pattern is not a regular expression this runtime supports (no look-around or back-references)",
                    ),
                }
            }
            "format" => match value.as_str() {
                Some(format) if FORMATS.contains(&format) => Ok(()),
                _ => fail(
                    "`format` must be one of date-time, date, uuid, email, uri; check other formats with `pattern` or a precondition",
                ),
            },
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                if value.is_number() {
                    Ok(())
                } else {
                    fail("must be a number")
                }
            }
            "multipleOf" => {
                if value.as_f64().is_some_and(|f| f > 0.0) {
                    Ok(())
                } else {
                    fail("`multipleOf` must be a number greater than 0")
                }
            }
            "anyOf" => match value.as_array() {
                Some(branches) if !branches.is_empty() => {
                    let here = push_pointer(pointer, "anyOf");
                    branches.iter().enumerate().try_for_each(|(index, branch)| {
                        self.node(branch, &push_pointer(&here, &index.to_string()), depth + 1)
                    })
                }
                _ => fail("`anyOf` must be a non-empty array of schemas"),
            },
            "$defs" => {
                if !pointer.is_empty() {
                    return fail("`$defs` is only supported at the root of a schema");
                }
                let Some(defs) = value.as_object() else {
                    return fail("`$defs` must be an object of schemas");
                };
                let here = push_pointer(pointer, "$defs");
                defs.iter().try_for_each(|(name, def)| {
                    self.node(def, &push_pointer(&here, name), depth + 1)
                })
            }
            "$ref" => {
                let target = value
                    .as_str()
                    .and_then(|reference| reference.strip_prefix("#/$defs/"));
                match target {
                    Some(name) if self.defs.is_some_and(|defs| defs.contains_key(name)) => Ok(()),
                    Some(_) => fail("`$ref` names a definition that `$defs` does not contain"),
                    None => {
                        fail("only internal references of the form `#/$defs/<name>` are supported")
                    }
                }
            }
            other => Err(unsupported(
                other,
                pointer,
                format!(
                    "`{other}` is outside the supported subset; {}",
                    advice(other)
                ),
            )),
        }
    }
}
