//! The compiled validator: a schema of the subset turned into a flat table of
//! nodes once, then run against inputs without touching the schema JSON again.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use regex::Regex;
use serde_json::{Map, Value};

use super::format::Format;
use super::{Issue, SchemaError, push_pointer};

/// Most issues reported for one input; the rest are counted in a final issue.
pub const MAX_ISSUES: usize = 32;
/// Longest property name quoted in an issue path, in characters.
pub(crate) const MAX_PATH_SEGMENT: usize = 64;
/// Deepest nesting of arrays and objects the validator descends into; a
/// deeper value is an issue at that depth, never a deeper recursion. The
/// invocation pipeline refuses inputs deeper than `Limits::max_input_depth`
/// before validating, so this only bounds direct use and raised limits.
pub const MAX_VALUE_DEPTH: usize = 128;

const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const INTEGER: u8 = 4;
const NUMBER: u8 = 8;
const STRING: u8 = 16;
const ARRAY: u8 = 32;
const OBJECT: u8 = 64;

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
struct Node {
    types: u8,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    /// Sorted by name for binary search.
    properties: Vec<(String, usize)>,
    required: Vec<String>,
    closed: bool,
    items: Option<usize>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<(Regex, String)>,
    format: Option<Format>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
    multiple_of: Option<f64>,
    any_of: Vec<usize>,
    reference: Option<usize>,
    default: Option<Value>,
}

/// A schema compiled for validation. Build it once per contract with
/// [`compile`]; [`validate`](CompiledSchema::validate) is then cheap and
/// allocation-free on valid inputs.
#[derive(Debug)]
pub struct CompiledSchema {
    nodes: Vec<Node>,
    root: usize,
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
    Ok(CompiledSchema {
        nodes: compiler.nodes,
        root,
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
        node.default = object.get("default").cloned();
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
                    .get(name)
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

fn json_type_name(value: &Value) -> &'static str {
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

fn matches_types(types: u8, value: &Value) -> bool {
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

fn expected_types(types: u8) -> String {
    let names: Vec<&str> = TYPE_NAMES
        .iter()
        .filter(|(bit, _)| types & bit != 0)
        .map(|(_, name)| *name)
        .collect();
    names.join(" or ")
}

fn list_values(values: &[Value]) -> String {
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

/// Collected issues, capped at [`MAX_ISSUES`]: the rest are counted and
/// reported as one final `"and N more issues"` issue. Every list of issues
/// built from agent input (the validator's, the meta-mode envelope's) goes
/// through it.
#[derive(Default)]
pub(crate) struct Issues {
    list: Vec<Issue>,
    dropped: usize,
    /// Whether an object property failed its `const`/`enum` (a union tag).
    tag_mismatch: bool,
}

impl Issues {
    fn push(&mut self, path: &Path<'_>, message: impl Into<std::borrow::Cow<'static, str>>) {
        if self.list.len() < MAX_ISSUES {
            self.list.push(Issue::new(path.render(), message));
        } else {
            self.dropped += 1;
        }
    }

    /// Adds an issue whose path is already rendered (see [`key_pointer`]).
    pub(crate) fn push_issue(&mut self, issue: Issue) {
        if self.list.len() < MAX_ISSUES {
            self.list.push(issue);
        } else {
            self.dropped += 1;
        }
    }

    fn count(&self) -> usize {
        self.list.len() + self.dropped
    }

    /// Whether no issue was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The listed issues, plus a final one counting those left out.
    pub(crate) fn finish(self) -> Vec<Issue> {
        let Issues {
            mut list, dropped, ..
        } = self;
        if dropped > 0 {
            list.push(Issue::new("", format!("and {dropped} more issues")));
        }
        list
    }
}

/// The JSON pointer of a top-level property, cleaned as every issue path
/// is: at most [`MAX_PATH_SEGMENT`] characters of the name, `~` and `/`
/// escaped, control characters shown as `?`.
pub(crate) fn key_pointer(key: &str) -> String {
    let mut out = String::with_capacity(key.len().min(4 * MAX_PATH_SEGMENT) + 1);
    push_segment(&mut out, key);
    out
}

/// Appends `/` and the cleaned property name (see [`key_pointer`]).
fn push_segment(out: &mut String, key: &str) {
    out.push('/');
    let key = match key.char_indices().nth(MAX_PATH_SEGMENT) {
        Some((cut, _)) => key.get(..cut).unwrap_or(key),
        None => key,
    };
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
}

impl CompiledSchema {
    /// Every issue of `value` against the schema, each with its JSON pointer;
    /// empty when the value is valid. At most [`MAX_ISSUES`] are listed, plus a
    /// final issue counting the rest. An array or object nested deeper than
    /// [`MAX_VALUE_DEPTH`] is one issue there, so any value is safe to check
    /// on any thread stack.
    pub fn validate(&self, value: &Value) -> Vec<Issue> {
        let mut issues = Issues::default();
        self.check(self.root, value, &Path::Root, 0, &mut issues);
        issues.finish()
    }

    /// Inserts the `default` of every absent property that declares one,
    /// through nested objects (a valid value stays valid).
    pub fn fill_defaults(&self, value: &mut Value) {
        self.fill(self.root, value, 0);
    }

    fn fill(&self, index: usize, value: &mut Value, depth: usize) {
        // Recursive definitions terminate with the value's own depth.
        if depth > 64 {
            return;
        }
        let Some(node) = self.nodes.get(index) else {
            return;
        };
        if let Some(reference) = node.reference {
            self.fill(reference, value, depth + 1);
        }
        match value {
            Value::Object(map) => {
                for (name, property) in &node.properties {
                    match map.get_mut(name) {
                        Some(child) => self.fill(*property, child, depth + 1),
                        None => {
                            let default = self.nodes.get(*property).and_then(|p| {
                                p.default.clone().or_else(|| {
                                    p.reference
                                        .and_then(|r| self.nodes.get(r))
                                        .and_then(|r| r.default.clone())
                                })
                            });
                            if let Some(default) = default {
                                map.insert(name.clone(), default);
                            }
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = node.items {
                    for child in items {
                        self.fill(item, child, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `value` is valid (stops at the first issue).
    pub fn is_valid(&self, value: &Value) -> bool {
        self.validate(value).is_empty()
    }

    /// Checks `value` (at `depth` arrays and objects below the root).
    fn check(
        &self,
        index: usize,
        value: &Value,
        path: &Path<'_>,
        depth: usize,
        issues: &mut Issues,
    ) {
        let Some(node) = self.nodes.get(index) else {
            return;
        };
        if depth >= MAX_VALUE_DEPTH && matches!(value, Value::Array(_) | Value::Object(_)) {
            issues.push(
                path,
                format!("nests deeper than {MAX_VALUE_DEPTH} levels of arrays and objects"),
            );
            return;
        }
        if let Some(reference) = node.reference {
            self.check(reference, value, path, depth, issues);
        }
        if !matches_types(node.types, value) {
            issues.push(
                path,
                format!(
                    "expected {}, got {}",
                    expected_types(node.types),
                    json_type_name(value)
                ),
            );
            return;
        }
        if let Some(constant) = &node.constant
            && value != constant
        {
            issues.push(path, format!("must be {constant}"));
            issues.tag_mismatch |= path.is_property();
        }
        if let Some(values) = &node.enumeration
            && !values.contains(value)
        {
            issues.push(path, format!("must be one of {}", list_values(values)));
            issues.tag_mismatch |= path.is_property();
        }
        match value {
            Value::Object(map) => self.check_object(node, map, path, depth, issues),
            Value::Array(items) => self.check_array(node, items, path, depth, issues),
            Value::String(text) => check_string(node, text, path, issues),
            Value::Number(number) => check_number(node, number, path, issues),
            _ => {}
        }
        if !node.any_of.is_empty() {
            self.check_any_of(node, value, path, depth, issues);
        }
    }

    fn check_object(
        &self,
        node: &Node,
        map: &Map<String, Value>,
        path: &Path<'_>,
        depth: usize,
        issues: &mut Issues,
    ) {
        for name in &node.required {
            if !map.contains_key(name) {
                issues.push(&Path::Key(path, name), "required property is missing");
            }
        }
        for (key, child) in map {
            let known = node
                .properties
                .binary_search_by(|(name, _)| name.as_str().cmp(key))
                .ok()
                .and_then(|at| node.properties.get(at));
            let here = Path::Key(path, key);
            match known {
                Some((_, property)) => self.check(*property, child, &here, depth + 1, issues),
                None if node.closed => {
                    let allowed: Vec<&str> = node
                        .properties
                        .iter()
                        .map(|(name, _)| name.as_str())
                        .collect();
                    let message = if allowed.is_empty() {
                        "unknown property; this object takes no properties".to_owned()
                    } else {
                        format!("unknown property; allowed: {}", allowed.join(", "))
                    };
                    issues.push(&here, message);
                }
                None => {}
            }
        }
    }

    fn check_array(
        &self,
        node: &Node,
        items: &[Value],
        path: &Path<'_>,
        depth: usize,
        issues: &mut Issues,
    ) {
        let len = items.len() as u64;
        if let Some(min) = node.min_items.filter(|min| len < *min) {
            issues.push(path, format!("must have at least {min} item(s)"));
        }
        if let Some(max) = node.max_items.filter(|max| len > *max) {
            issues.push(path, format!("must have at most {max} item(s)"));
        }
        if node.unique_items {
            let mut seen = HashSet::with_capacity(items.len());
            if !items
                .iter()
                .all(|item| seen.insert(crate::canonical::canonical_json(item)))
            {
                issues.push(path, "items must be unique");
            }
        }
        if let Some(item_schema) = node.items {
            for (index, item) in items.iter().enumerate() {
                self.check(
                    item_schema,
                    item,
                    &Path::Index(path, index),
                    depth + 1,
                    issues,
                );
            }
        }
    }

    fn check_any_of(
        &self,
        node: &Node,
        value: &Value,
        path: &Path<'_>,
        depth: usize,
        issues: &mut Issues,
    ) {
        let mut best: Option<(bool, usize, Issues)> = None;
        let mut tie = false;
        for &branch in &node.any_of {
            let mut attempt = Issues::default();
            self.check(branch, value, path, depth, &mut attempt);
            if attempt.count() == 0 {
                return;
            }
            let rank = (attempt.tag_mismatch, attempt.count());
            match &best {
                Some((tag, count, _)) if (*tag, *count) < rank => {}
                Some((tag, count, _)) if (*tag, *count) == rank => tie = true,
                _ => {
                    tie = false;
                    best = Some((rank.0, rank.1, attempt));
                }
            }
        }
        match best {
            Some((false, _, attempt)) if !tie => {
                for issue in attempt.list {
                    issues.push_issue(issue);
                }
            }
            _ => issues.push(
                path,
                format!(
                    "does not match any of the {} allowed shapes",
                    node.any_of.len()
                ),
            ),
        }
    }
}

/// Where a value sits in the input: a stack-linked JSON pointer, rendered
/// only when an issue is reported (valid inputs allocate nothing).
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// Whether the path ends at an object property (a possible union tag).
    fn is_property(&self) -> bool {
        matches!(self, Path::Key(..))
    }

    fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.write(out);
                push_segment(out, key);
            }
            Path::Index(parent, index) => {
                parent.write(out);
                let _ = write!(out, "/{index}");
            }
        }
    }
}

fn check_string(node: &Node, text: &str, path: &Path<'_>, issues: &mut Issues) {
    if node.min_length.is_some() || node.max_length.is_some() {
        let len = text.chars().count() as u64;
        if let Some(min) = node.min_length.filter(|min| len < *min) {
            issues.push(path, format!("must be at least {min} character(s) long"));
        }
        if let Some(max) = node.max_length.filter(|max| len > *max) {
            issues.push(path, format!("must be at most {max} character(s) long"));
        }
    }
    if let Some((regex, source)) = &node.pattern
        && !regex.is_match(text)
    {
        issues.push(path, format!("must match the pattern {source}"));
    }
    if let Some(format) = node.format
        && !format.matches(text)
    {
        issues.push(path, format.expectation());
    }
}

fn check_number(node: &Node, number: &serde_json::Number, path: &Path<'_>, issues: &mut Issues) {
    let Some(value) = number.as_f64() else {
        return;
    };
    if let Some(min) = node.minimum.filter(|min| value < *min) {
        issues.push(path, format!("must be at least {min}"));
    }
    if let Some(max) = node.maximum.filter(|max| value > *max) {
        issues.push(path, format!("must be at most {max}"));
    }
    if let Some(min) = node.exclusive_minimum.filter(|min| value <= *min) {
        issues.push(path, format!("must be greater than {min}"));
    }
    if let Some(max) = node.exclusive_maximum.filter(|max| value >= *max) {
        issues.push(path, format!("must be less than {max}"));
    }
    if let Some(step) = node.multiple_of {
        let quotient = value / step;
        if (quotient - quotient.round()).abs() > 1e-9 * quotient.abs().max(1.0) {
            issues.push(path, format!("must be a multiple of {step}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issues(schema: Value, value: Value) -> Vec<(String, String)> {
        compile(&schema)
            .unwrap()
            .validate(&value)
            .into_iter()
            .map(|issue| (issue.path().to_owned(), issue.message().to_owned()))
            .collect()
    }

    #[test]
    fn reports_every_issue_with_its_path_without_echoing_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string", "minLength": 2}, "minItems": 1},
                "mode": {"type": "string", "enum": ["replace", "add"]},
                "when": {"type": "string", "format": "date-time"}
            },
            "required": ["ids", "mode"],
            "additionalProperties": false
        });
        let found = issues(
            schema,
            json!({"ids": ["s3cret-ok", "x", 7], "when": "secret-time", "zz": 1}),
        );
        assert_eq!(
            found,
            [
                (
                    "/mode".to_owned(),
                    "required property is missing".to_owned()
                ),
                (
                    "/ids/1".to_owned(),
                    "must be at least 2 character(s) long".to_owned()
                ),
                (
                    "/ids/2".to_owned(),
                    "expected string, got integer".to_owned()
                ),
                (
                    "/when".to_owned(),
                    Format::DateTime.expectation().to_owned()
                ),
                (
                    "/zz".to_owned(),
                    "unknown property; allowed: ids, mode, when".to_owned()
                ),
            ]
        );
        let text = format!("{found:?}");
        assert!(!text.contains("secret"));
    }

    #[test]
    fn tagged_unions_report_the_matching_branch() {
        let schema = json!({"anyOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
            {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind", "y"]}
        ]});
        assert_eq!(
            issues(schema.clone(), json!({"kind": "b", "y": 3})),
            [("/y".to_owned(), "expected string, got integer".to_owned())]
        );
        assert!(issues(schema, json!({"kind": "a", "x": 1})).is_empty());
    }

    #[test]
    fn recursive_definitions_validate_and_pure_cycles_are_rejected() {
        let schema = json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}
        });
        assert!(issues(schema, json!({"children": [{"children": []}]})).is_empty());
        let cycle =
            json!({"$ref": "#/$defs/A", "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}]}}});
        assert_eq!(compile(&cycle).unwrap_err().keyword(), "$ref");
    }

    #[test]
    fn recursive_schemas_check_deep_values_on_a_small_stack() {
        let found = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let tree = json!({
                    "$ref": "#/$defs/Tree",
                    "$defs": {"Tree": {"type": "object", "properties": {
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}
                });
                let any = json!({
                    "$ref": "#/$defs/A",
                    "$defs": {"A": {"type": ["array", "null"], "items": {"$ref": "#/$defs/A"}}}
                });
                let validators = [compile(&tree).unwrap(), compile(&any).unwrap()];
                let mut objects = json!({});
                let mut arrays = Value::Null;
                for _ in 0..100_000 {
                    let mut map = Map::new();
                    map.insert("children".to_owned(), Value::Array(vec![objects]));
                    objects = Value::Object(map);
                    arrays = Value::Array(vec![arrays]);
                }
                let found: Vec<Vec<Issue>> = validators
                    .iter()
                    .flat_map(|v| [v.validate(&objects), v.validate(&arrays)])
                    .collect();
                crate::util::nesting::dispose(objects);
                crate::util::nesting::dispose(arrays);
                found
            })
            .unwrap()
            .join()
            .unwrap();
        let deep = format!("nests deeper than {MAX_VALUE_DEPTH} levels of arrays and objects");
        assert_eq!(found_messages(&found[0]), [deep.as_str()]);
        assert_eq!(found_messages(&found[3]), [deep.as_str()]);
        // The path names where the bound was hit, not the value.
        assert_eq!(
            found[0][0].path().matches("/children/0").count(),
            MAX_VALUE_DEPTH / 2
        );
    }

    fn found_messages(issues: &[Issue]) -> Vec<&str> {
        issues.iter().map(Issue::message).collect()
    }

    #[test]
    fn integral_floats_are_integers() {
        let schema = json!({"type": "integer", "minimum": 0, "multipleOf": 2});
        assert!(issues(schema.clone(), json!(4.0)).is_empty());
        assert_eq!(issues(schema, json!(3)).len(), 1);
    }

    #[test]
    fn issue_count_is_bounded() {
        let schema = json!({"type": "array", "items": {"type": "string"}});
        let found = compile(&schema).unwrap().validate(&json!(vec![1; 100]));
        assert_eq!(found.len(), MAX_ISSUES + 1);
        assert_eq!(found.last().unwrap().message(), "and 68 more issues");
    }
}
