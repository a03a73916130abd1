//! The schema compiler: a schema of the subset turned into a flat table of
//! nodes once, with its references resolved and unproductive cycles
//! rejected.

use std::collections::HashMap;
use std::fmt::Write as _;

use regex::Regex;
use serde_json::Value;

use super::format::Format;
use super::{SchemaError, push_pointer};

pub(super) const NULL: u8 = 1;
pub(super) const BOOLEAN: u8 = 2;
pub(super) const INTEGER: u8 = 4;
pub(super) const NUMBER: u8 = 8;
pub(super) const STRING: u8 = 16;
pub(super) const ARRAY: u8 = 32;
pub(super) const OBJECT: u8 = 64;

const TYPE_NAMES: [(u8, &str); 7] = [
    (OBJECT, "object"),
    (ARRAY, "array"),
    (STRING, "string"),
    (NUMBER, "number"),
    (INTEGER, "integer"),
    (BOOLEAN, "boolean"),
    (NULL, "null"),
];

#[derive(Debug, Default)]
pub(super) struct Node {
    pub(super) types: u8,
    pub(super) enumeration: Option<Vec<Value>>,
    pub(super) constant: Option<Value>,
    /// Sorted by name for binary search.
    pub(super) properties: Vec<(String, usize)>,
    pub(super) required: Vec<String>,
    pub(super) closed: bool,
    pub(super) items: Option<usize>,
    pub(super) min_items: Option<u64>,
    pub(super) max_items: Option<u64>,
    pub(super) unique_items: bool,
    pub(super) min_length: Option<u64>,
    pub(super) max_length: Option<u64>,
    pub(super) pattern: Option<(Regex, String)>,
    pub(super) format: Option<Format>,
    pub(super) minimum: Option<f64>,
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_minimum: Option<f64>,
    pub(super) exclusive_maximum: Option<f64>,
    pub(super) multiple_of: Option<f64>,
    pub(super) any_of: Vec<usize>,
    pub(super) reference: Option<usize>,
    pub(super) default: Option<Value>,
}

/// A schema compiled for validation. Build it once per contract with
/// [`compile`]; [`validate`](CompiledSchema::validate) is then cheap and
/// allocation-free on valid inputs.
#[derive(Debug)]
pub struct CompiledSchema {
    pub(super) nodes: Vec<Node>,
    pub(super) root: usize,
    /// Whether any node declares a `default` (when none does, filling
    /// defaults has nothing to do and skips the walk).
    pub(super) has_defaults: bool,
    /// The most any valid value can take (canonical bytes, nesting), when
    /// the schema bounds it: worked out on first use (see `extent.rs`).
    pub(super) extent: std::sync::OnceLock<Option<(usize, usize)>>,
}

/// Compiles a schema that passed [`check_subset`](super::check_subset).
///
/// Keywords outside the subset are not interpreted (the subset check rejects
/// them); malformed keyword values and reference cycles that never descend
/// into a property or an item are errors.
pub fn compile(schema: &Value) -> Result<CompiledSchema, SchemaError> {
    let mut compiler = Compiler {
        nodes: Vec::new(),
        pointers: Vec::new(),
        defs: HashMap::new(),
    };
    let defs = schema.get("$defs").and_then(Value::as_object);
    // Reserve a node per definition first so references (even recursive ones)
    // resolve to stable indices.
    if let Some(defs) = defs {
        for name in defs.keys() {
            let index = compiler.reserve(push_pointer("/$defs", name));
            compiler.defs.insert(name.clone(), index);
        }
        for (name, def) in defs {
            let index = compiler.defs.get(name).copied().unwrap_or_default();
            let pointer = push_pointer("/$defs", name);
            let node = compiler.node(def, &pointer)?;
            if let Some(slot) = compiler.nodes.get_mut(index) {
                *slot = node;
            }
        }
    }
    let root = compiler.compile(schema, "")?;
    compiler.reject_cycles()?;
    let has_defaults = compiler.nodes.iter().any(|node| node.default.is_some());
    Ok(CompiledSchema {
        nodes: compiler.nodes,
        root,
        has_defaults,
        extent: std::sync::OnceLock::new(),
    })
}

struct Compiler {
    nodes: Vec<Node>,
    pointers: Vec<String>,
    defs: HashMap<String, usize>,
}

fn bad(keyword: &str, pointer: &str, message: &str) -> SchemaError {
    SchemaError::new(keyword, pointer, message)
}

impl Compiler {
    fn reserve(&mut self, pointer: String) -> usize {
        self.nodes.push(Node::default());
        self.pointers.push(pointer);
        self.nodes.len() - 1
    }

    fn compile(&mut self, schema: &Value, pointer: &str) -> Result<usize, SchemaError> {
        let node = self.node(schema, pointer)?;
        let index = self.reserve(pointer.to_owned());
        if let Some(slot) = self.nodes.get_mut(index) {
            *slot = node;
        }
        Ok(index)
    }

    fn node(&mut self, schema: &Value, pointer: &str) -> Result<Node, SchemaError> {
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(true) => return Ok(Node::default()),
            _ => return Err(bad("", pointer, "a schema must be an object or `true`")),
        };
        let mut node = Node::default();
        let number = |key: &str| -> Result<Option<f64>, SchemaError> {
            match object.get(key) {
                None => Ok(None),
                Some(value) => value
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| bad(key, pointer, "must be a number")),
            }
        };
        let count = |key: &str| -> Result<Option<u64>, SchemaError> {
            match object.get(key) {
                None => Ok(None),
                Some(value) => value
                    .as_u64()
                    .or_else(|| {
                        value
                            .as_f64()
                            .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                            .map(|f| f as u64)
                    })
                    .map(Some)
                    .ok_or_else(|| bad(key, pointer, "must be a non-negative integer")),
            }
        };
        node.types = match object.get("type") {
            None => 0,
            Some(Value::String(name)) => {
                type_bit(name).ok_or_else(|| bad("type", pointer, "unknown type name"))?
            }
            Some(Value::Array(names)) => names.iter().try_fold(0, |bits, name| {
                name.as_str()
                    .and_then(type_bit)
                    .map(|bit| bits | bit)
                    .ok_or_else(|| bad("type", pointer, "unknown type name"))
            })?,
            Some(_) => return Err(bad("type", pointer, "must be a name or an array of names")),
        };
        node.enumeration = match object.get("enum") {
            None => None,
            Some(Value::Array(values)) => Some(values.clone()),
            Some(_) => return Err(bad("enum", pointer, "must be an array")),
        };
        node.constant = object.get("const").cloned();
        // A `null` default is never filled in (serde reads an absent
        // optional field as `None` already, and an `Option<Option<T>>`
        // tells absent from `null`): kept out here, a schema whose only
        // defaults are `null` skips filling altogether.
        node.default = object.get("default").filter(|d| !d.is_null()).cloned();
        if let Some(properties) = object.get("properties") {
            let properties = properties
                .as_object()
                .ok_or_else(|| bad("properties", pointer, "must be an object"))?;
            let here = push_pointer(pointer, "properties");
            for (name, property) in properties {
                let index = self.compile(property, &push_pointer(&here, name))?;
                node.properties.push((name.clone(), index));
            }
            node.properties.sort_by(|a, b| a.0.cmp(&b.0));
        }
        if let Some(required) = object.get("required") {
            node.required = required
                .as_array()
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .ok_or_else(|| bad("required", pointer, "must be an array"))?;
        }
        node.closed = object.get("additionalProperties") == Some(&Value::Bool(false));
        if let Some(items) = object.get("items") {
            node.items = Some(self.compile(items, &push_pointer(pointer, "items"))?);
        }
        node.min_items = count("minItems")?;
        node.max_items = count("maxItems")?;
        node.unique_items = object.get("uniqueItems") == Some(&Value::Bool(true));
        node.min_length = count("minLength")?;
        node.max_length = count("maxLength")?;
        if let Some(pattern) = object.get("pattern") {
            let text = pattern
                .as_str()
                .ok_or_else(|| bad("pattern", pointer, "must be a string"))?;
            let regex = Regex::new(text)
                .map_err(|_| bad("pattern", pointer, "not a supported regular expression"))?;
            node.pattern = Some((regex, text.to_owned()));
        }
        if let Some(format) = object.get("format") {
            node.format = Some(
                format
                    .as_str()
                    .and_then(Format::parse)
                    .ok_or_else(|| bad("format", pointer, "unsupported format"))?,
            );
        }
        node.minimum = number("minimum")?;
        node.maximum = number("maximum")?;
        node.exclusive_minimum = number("exclusiveMinimum")?;
        node.exclusive_maximum = number("exclusiveMaximum")?;
        node.multiple_of = number("multipleOf")?.filter(|m| *m > 0.0);
        if let Some(branches) = object.get("anyOf") {
            let branches = branches
                .as_array()
                .ok_or_else(|| bad("anyOf", pointer, "must be an array"))?;
            let here = push_pointer(pointer, "anyOf");
            for (index, branch) in branches.iter().enumerate() {
                let compiled = self.compile(branch, &push_pointer(&here, &index.to_string()))?;
                node.any_of.push(compiled);
            }
        }
        if let Some(reference) = object.get("$ref") {
            let name = reference
                .as_str()
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(fragment_token)
                .ok_or_else(|| {
                    bad(
                        "$ref",
                        pointer,
                        "only `#/$defs/<name>` references are supported",
                    )
                })?;
            node.reference = Some(
                *self
                    .defs
                    .get(&*name)
                    .ok_or_else(|| bad("$ref", pointer, "names a missing definition"))?,
            );
        }
        Ok(node)
    }

    /// A cycle through `$ref`/`anyOf` alone would recurse forever on any value.
    fn reject_cycles(&self) -> Result<(), SchemaError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Active,
            Done,
        }
        fn visit(nodes: &[Node], marks: &mut [Mark], index: usize) -> Option<usize> {
            match marks.get(index) {
                Some(Mark::Active) => return Some(index),
                Some(Mark::Done) | None => return None,
                Some(Mark::New) => {}
            }
            if let Some(mark) = marks.get_mut(index) {
                *mark = Mark::Active;
            }
            let node = nodes.get(index)?;
            let next = node.reference.iter().chain(node.any_of.iter());
            for &child in next {
                if let Some(cycle) = visit(nodes, marks, child) {
                    return Some(cycle);
                }
            }
            if let Some(mark) = marks.get_mut(index) {
                *mark = Mark::Done;
            }
            None
        }
        let mut marks = vec![Mark::New; self.nodes.len()];
        for index in 0..self.nodes.len() {
            if let Some(cycle) = visit(&self.nodes, &mut marks, index) {
                let pointer = self.pointers.get(cycle).cloned().unwrap_or_default();
                return Err(bad(
                    "$ref",
                    &pointer,
                    "this reference cycle never descends into a property or an item, so no value could ever be checked against it",
                ));
            }
        }
        Ok(())
    }
}

fn type_bit(name: &str) -> Option<u8> {
    TYPE_NAMES
        .iter()
        .find(|(_, type_name)| *type_name == name)
        .map(|(bit, _)| *bit)
}

pub(super) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integral(number: &serde_json::Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0)
}

pub(super) fn matches_types(types: u8, value: &Value) -> bool {
    if types == 0 {
        return true;
    }
    let bits = match value {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Number(n) if is_integral(n) => NUMBER | INTEGER,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    };
    types & bits != 0
}

pub(super) fn expected_types(types: u8) -> String {
    let names: Vec<&str> = TYPE_NAMES
        .iter()
        .filter(|(bit, _)| types & bit != 0)
        .map(|(_, name)| *name)
        .collect();
    names.join(" or ")
}

pub(super) fn list_values(values: &[Value]) -> String {
    let mut out = String::new();
    for (index, value) in values.iter().take(10).enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        out.push_str(&value.to_string());
    }
    if values.len() > 10 {
        let _ = write!(out, ", … ({} values)", values.len());
    }
    out
}

/// A JSON Pointer token as a URI fragment writes it (RFC 6901, section 6):
/// percent-decoded, then `~1` read as `/` and `~0` as `~` (schemars writes
/// the name of a type renamed `a b` as `a%20b`). `None` when it is no
/// token (a `/` inside, a bad escape, no UTF-8).
fn fragment_token(encoded: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !encoded.contains(['%', '~', '/']) {
        return Some(std::borrow::Cow::Borrowed(encoded));
    }
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            decoded.push(byte);
            at += 1;
        }
    }
    let text = String::from_utf8(decoded).ok()?;
    if text.contains('/') {
        return None;
    }
    Some(std::borrow::Cow::Owned(
        text.replace("~1", "/").replace("~0", "~"),
    ))
}

#[cfg(test)]
mod fragment_tests {
    use super::fragment_token;

    #[test]
    fn a_reference_token_is_percent_decoded_then_unescaped() {
        assert_eq!(fragment_token("Tree").as_deref(), Some("Tree"));
        assert_eq!(fragment_token("Gr%C3%B6%C3%9Fe").as_deref(), Some("Größe"));
        assert_eq!(fragment_token("a~1b~01").as_deref(), Some("a/b~1"));
        assert_eq!(fragment_token("a%2"), None);
        assert_eq!(fragment_token("a/b"), None);
        assert_eq!(fragment_token("%FF"), None);
    }
}
