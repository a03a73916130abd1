//! Validation: a compiled schema run against an input without touching
//! the schema JSON again, its issues capped and their paths cleaned.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::Issue;
use super::compile::{
    CompiledSchema, Node, expected_types, json_type_name, list_values, matches_types,
};

/// Most issues reported for one input; the rest are counted in a final issue.
pub const MAX_ISSUES: usize = 32;
/// Longest property name quoted in an issue path, in characters.
pub(crate) const MAX_PATH_SEGMENT: usize = 64;
/// Deepest nesting of arrays and objects the validator descends into; a
/// deeper value is an issue at that depth, never a deeper recursion. The
/// invocation pipeline refuses inputs deeper than `Limits::max_input_depth`
/// before validating, so this only bounds direct use and raised limits.
pub const MAX_VALUE_DEPTH: usize = 128;

/// Collected issues, capped at [`MAX_ISSUES`]: the rest are counted and
/// reported as one final `"and N more issues"` issue. Every list of issues
/// built from agent input (the validator's, the meta-mode envelope's) goes
/// through it.
#[derive(Default)]
pub struct Issues {
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
    pub fn push_issue(&mut self, issue: Issue) {
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
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The listed issues, plus a final one counting those left out.
    pub fn finish(self) -> Vec<Issue> {
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
/// is: at most `MAX_PATH_SEGMENT` (64) characters of the name, `~` and `/`
/// escaped, control and invisible characters (bidi controls, zero-width
/// and other format characters) shown as `?`.
pub fn key_pointer(key: &str) -> String {
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
            c if crate::util::display_text::is_hidden(c) => out.push('?'),
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
    /// through nested objects (a valid value stays valid). A `null` default
    /// is not one (see the compiler): for an `Option<Option<T>>` field absent
    /// ("unchanged") and `null` ("clear") differ, so omitted stays omitted.
    pub fn fill_defaults(&self, value: &mut Value) {
        if self.has_defaults {
            self.fill(self.root, value, 0);
        }
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
    use crate::schema::compile;
    use crate::schema::format::Format;
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
