//! AS-SCHEMA-001, AS-SCHEMA-003: the schema subset, and how schemars output
//! is normalized into it.

use std::collections::{BTreeSet, HashMap};

use agent_surface::prelude::*;
use agent_surface::schema::{self, SchemaLimits, check_subset};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn subset(schema: &Value) -> Result<(), (String, String)> {
    check_subset(schema, &SchemaLimits::default())
        .map_err(|e| (e.keyword().to_owned(), e.pointer().to_owned()))
}

#[test]
fn as_schema_001_allowlisted_keywords_are_accepted() {
    let schema = json!({
        "type": "object",
        "title": "t", "description": "d", "deprecated": false, "examples": [{}], "default": {},
        "properties": {
            "s": {"type": "string", "minLength": 1, "maxLength": 9, "pattern": "^[a-z]+$", "format": "email"},
            "n": {"type": ["number", "null"], "minimum": 0, "maximum": 9, "exclusiveMinimum": -1, "exclusiveMaximum": 10, "multipleOf": 0.5},
            "a": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 0, "maxItems": 3, "uniqueItems": true},
            "e": {"enum": ["x", "y"]},
            "c": {"const": 3},
            "u": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}
        },
        "required": ["s"],
        "additionalProperties": false,
        "$defs": {"Item": {"type": "object", "additionalProperties": true}}
    });
    assert_eq!(subset(&schema), Ok(()));
}

#[test]
fn as_schema_001_forbidden_keywords_are_rejected_with_keyword_and_pointer() {
    let cases = [
        (json!({"oneOf": [{"type": "string"}]}), "oneOf", ""),
        (json!({"allOf": [{"type": "string"}]}), "allOf", ""),
        (json!({"not": {}}), "not", ""),
        (json!({"if": {}, "then": {}}), "if", ""),
        (
            json!({"type": "object", "patternProperties": {}}),
            "patternProperties",
            "",
        ),
        (
            json!({"type": "array", "prefixItems": [{}]}),
            "prefixItems",
            "",
        ),
        (
            json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            "additionalProperties",
            "/properties/m",
        ),
        (
            json!({"type": "array", "items": {"type": "string", "format": "ipv4"}}),
            "format",
            "/items",
        ),
        (
            json!({"type": "array", "items": [{"type": "string"}]}),
            "items",
            "",
        ),
        (json!({"$ref": "https://example.com/schema"}), "$ref", ""),
        (json!({"$ref": "#/$defs/Missing"}), "$ref", ""),
        (
            json!({"type": "object", "properties": {"x": {"$defs": {}}}}),
            "$defs",
            "/properties/x",
        ),
        (json!({"type": "strings"}), "type", ""),
        (
            json!({"type": "string", "pattern": "(?<=a)b"}),
            "pattern",
            "",
        ),
        (
            json!({"anyOf": [{"readOnly": true}]}),
            "readOnly",
            "/anyOf/0",
        ),
        (
            json!({"type": "object", "properties": {"a/b": {"unevaluatedProperties": false}}}),
            "unevaluatedProperties",
            "/properties/a~1b",
        ),
    ];
    for (schema, keyword, pointer) in cases {
        assert_eq!(
            subset(&schema),
            Err((keyword.to_owned(), pointer.to_owned())),
            "{schema}"
        );
    }
}

#[test]
fn as_schema_001_a_pattern_too_big_to_compile_says_so() {
    let schema = json!({"type": "string", "maxLength": 2000, "pattern": "^\\w{1,300}$"});
    let error = agent_surface::schema::check_subset(
        &schema,
        &agent_surface::schema::SchemaLimits::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("compiles to more than"), "{error}");
    assert!(!error.contains("look-around"), "{error}");
}

fn nest_arrays(depth: usize) -> Value {
    (0..depth).fold(
        json!({"type": "string"}),
        |inner, _| json!({"type": "array", "items": inner}),
    )
}

#[test]
fn as_schema_001_depth_and_size_caps() {
    assert_eq!(subset(&nest_arrays(8)), Ok(()));
    let err = check_subset(&nest_arrays(9), &SchemaLimits::default()).unwrap_err();
    assert!(err.message().contains("deeper than 8"), "{err}");
    assert_eq!(
        err.pointer(),
        "/items/items/items/items/items/items/items/items/items"
    );

    let description = "x".repeat(17_000);
    let err = check_subset(
        &json!({"type": "string", "description": description}),
        &SchemaLimits::default(),
    )
    .unwrap_err();
    assert!(err.message().contains("16384"), "{err}");
    let relaxed = SchemaLimits::default().max_bytes(20_000).max_depth(8);
    assert!(
        check_subset(
            &json!({"type": "string", "description": "x".repeat(17_000)}),
            &relaxed
        )
        .is_ok()
    );
}

// --- schemars output normalized into the subset -----------------------------

/// A tagged enum: schemars emits `oneOf`, provably exclusive.
#[agent_schema]
#[serde(tag = "kind")]
pub(crate) enum Shape {
    /// A circle.
    Circle { radius: f64 },
    /// A square.
    Square { side: u32 },
}

/// An externally tagged enum with unit and data variants.
#[agent_schema]
pub(crate) enum Command {
    /// Stop.
    Stop,
    /// Move by.
    Move(i32),
    /// Go to.
    GoTo { x: u16, y: u16 },
}

/// Unit variants with docs: `oneOf` of `const` branches.
#[agent_schema]
pub(crate) enum Level {
    /// Low.
    Low,
    /// High.
    High,
}

/// A recursive type: `$ref: "#"` at the root.
#[agent_schema]
pub(crate) struct Tree {
    /// Label.
    pub label: String,
    /// Children.
    pub children: Vec<Tree>,
}

/// Everything that needs normalizing in one input.
#[agent_schema]
pub(crate) struct Everything {
    /// Small integer.
    pub small: u8,
    /// Medium integer.
    pub medium: u32,
    /// Signed.
    pub signed: i64,
    /// Float.
    pub ratio: f32,
    /// Optional.
    pub maybe: Option<u16>,
    /// A homogeneous tuple.
    pub point: (i16, i16, i16),
    /// A set.
    pub tags: BTreeSet<String>,
    /// Anything.
    pub extra: Value,
    /// An internally tagged union.
    pub shape: Shape,
    /// An externally tagged union.
    pub command: Command,
    /// A documented C-like enum.
    pub level: Level,
    /// A fixed-size array.
    pub rgb: [u8; 3],
    /// A free-form object.
    pub labels: HashMap<String, Value>,
}

fn schema_of<T: schemars::JsonSchema>() -> Value {
    schema::schema_for::<T>(&SchemaLimits::default()).unwrap()
}

#[test]
fn as_schema_001_schemars_output_is_normalized_into_the_subset() {
    let schema = schema_of::<Everything>();
    let p = &schema["properties"];
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert_eq!(
        p["small"],
        json!({"description": "Small integer.", "type": "integer", "minimum": 0, "maximum": 255})
    );
    assert_eq!(p["medium"]["maximum"], json!(4294967295u64));
    assert!(p["signed"].get("format").is_none());
    assert!(p["ratio"].get("format").is_none());
    assert_eq!(p["maybe"]["type"], json!(["integer", "null"]));
    assert_eq!(
        p["point"]["items"],
        json!({"type": "integer", "minimum": -32768, "maximum": 32767})
    );
    assert_eq!(
        (
            p["point"]["minItems"].clone(),
            p["point"]["maxItems"].clone()
        ),
        (json!(3), json!(3))
    );
    assert!(p["point"].get("prefixItems").is_none());
    assert_eq!(p["tags"]["uniqueItems"], json!(true));
    assert_eq!(p["labels"]["additionalProperties"], json!(true));
    assert_eq!(p["rgb"]["items"]["maximum"], json!(255));
    let defs = &schema["$defs"];
    assert!(defs["Shape"].get("oneOf").is_none() && defs["Shape"]["anyOf"].is_array());
    assert!(defs["Command"]["anyOf"].is_array());
    assert!(defs["Level"]["anyOf"].is_array());
    // camelCase and deny_unknown_fields come from #[agent_schema].
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(defs["Command"]["anyOf"][2]["required"], json!(["goTo"]));
}

#[test]
fn as_schema_001_normalized_unions_still_validate_like_serde() {
    let schema = schema_of::<Everything>();
    let validator = schema::compile(&schema).unwrap();
    let good = json!({
        "small": 1, "medium": 2, "signed": -3, "ratio": 0.5, "maybe": null, "point": [1, 2, 3],
        "tags": ["a"], "extra": {"any": [1]}, "shape": {"kind": "circle", "radius": 1.5},
        "command": {"goTo": {"x": 1, "y": 2}}, "level": "high", "rgb": [1, 2, 3], "labels": {"k": 1}
    });
    assert_eq!(validator.validate(&good), []);
    let parsed: Everything = serde_json::from_value(good).unwrap();
    assert!(matches!(parsed.shape, Shape::Circle { .. }));
    let bad = json!({
        "small": 256, "medium": 2, "signed": -3, "ratio": 0.5, "maybe": null, "point": [1, 2],
        "tags": ["a", "a"], "extra": 1, "shape": {"kind": "square", "side": -1},
        "command": "jump", "level": "mid", "rgb": [1, 2, 3], "labels": {}
    });
    let paths: Vec<String> = validator
        .validate(&bad)
        .iter()
        .map(|i| i.path().to_owned())
        .collect();
    assert_eq!(
        paths,
        [
            "/command",
            "/level",
            "/point",
            "/shape/side",
            "/small",
            "/tags"
        ]
    );
}

#[test]
fn as_schema_001_root_recursion_moves_into_defs() {
    let schema = schema_of::<Tree>();
    assert_eq!(
        schema["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Tree"})
    );
    let validator = schema::compile(&schema).unwrap();
    assert!(
        validator.is_valid(&json!({"label": "a", "children": [{"label": "b", "children": []}]}))
    );
    assert!(
        !validator.is_valid(&json!({"label": "a", "children": [{"label": 1, "children": []}]}))
    );
}

/// Shapes that cannot be expressed: rejected with a clear message.
#[allow(dead_code)] // only the schema is used
#[derive(schemars::JsonSchema)]
pub(crate) struct TypedMap {
    /// Counts.
    pub counts: HashMap<String, u32>,
}

#[allow(dead_code)] // only the schema is used
#[derive(schemars::JsonSchema)]
pub(crate) struct MixedTuple {
    /// A pair.
    pub pair: (u8, String),
}

#[allow(dead_code)] // only the schema is used
#[derive(schemars::JsonSchema)]
pub(crate) struct Huge {
    /// Too wide for JSON numbers.
    pub id: u128,
}

#[allow(dead_code)] // only the schema is used
#[derive(schemars::JsonSchema)]
#[schemars(untagged)]
pub(crate) enum Overlapping {
    /// Any text.
    A(String),
    /// Some text.
    B(String),
}

#[test]
fn as_schema_001_inexpressible_shapes_are_rejected_with_the_fix() {
    let limits = SchemaLimits::default();
    let err = schema::schema_for::<TypedMap>(&limits).unwrap_err();
    assert_eq!(
        (err.keyword(), err.pointer()),
        ("additionalProperties", "/properties/counts")
    );
    assert!(err.message().contains("Vec of"), "{err}");
    let err = schema::schema_for::<MixedTuple>(&limits).unwrap_err();
    assert_eq!(
        (err.keyword(), err.pointer()),
        ("prefixItems", "/properties/pair")
    );
    assert!(err.message().contains("named fields"), "{err}");
    let err = schema::schema_for::<Huge>(&limits).unwrap_err();
    assert_eq!(err.keyword(), "format");
    assert!(err.message().contains("128-bit"), "{err}");
    // Untagged enums are already `anyOf` (overlap is fine there).
    assert!(schema::schema_for::<Overlapping>(&limits).is_ok());
}

// --- property tests -------------------------------------------------------------

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..4, 4u64..9)
            .prop_map(|(min, max)| json!({"type": "string", "minLength": min, "maxLength": max})),
        Just(json!({"type": "string", "pattern": "^[a-z]+$", "format": "uuid"})),
        (-5i64..0, 0i64..5)
            .prop_map(|(min, max)| json!({"type": "integer", "minimum": min, "maximum": max})),
        Just(json!({"type": ["number", "null"], "multipleOf": 0.5, "exclusiveMaximum": 3})),
        Just(json!({"type": "boolean", "description": "flag", "deprecated": true})),
        Just(json!({"enum": ["a", "b", 1, null]})),
        Just(json!({"const": {"k": [1]}, "title": "c", "examples": [1]})),
        Just(json!({})),
    ]
}

fn allowlisted_schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::btree_map("[a-z]{1,6}", inner.clone(), 0..4), any::<bool>()).prop_map(
                |(properties, closed)| {
                    let required: Vec<Value> = properties.keys().take(1).map(|k| json!(k)).collect();
                    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": !closed})
                }
            ),
            (inner.clone(), 0u64..3, any::<bool>())
                .prop_map(|(items, min, unique)| json!({"type": "array", "items": items, "minItems": min, "uniqueItems": unique})),
            prop::collection::vec(inner, 1..4).prop_map(|branches| json!({"anyOf": branches})),
        ]
    })
}

/// Every subschema object of a schema, as (JSON pointer, pointer into the value).
fn subschema_pointers(schema: &Value, pointer: String, out: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    out.push(pointer.clone());
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, child) in properties {
            subschema_pointers(child, format!("{pointer}/properties/{name}"), out);
        }
    }
    if let Some(items) = object.get("items") {
        subschema_pointers(items, format!("{pointer}/items"), out);
    }
    if let Some(Value::Array(branches)) = object.get("anyOf") {
        for (index, branch) in branches.iter().enumerate() {
            subschema_pointers(branch, format!("{pointer}/anyOf/{index}"), out);
        }
    }
}

const FORBIDDEN: [&str; 12] = [
    "oneOf",
    "allOf",
    "not",
    "if",
    "patternProperties",
    "prefixItems",
    "contains",
    "$id",
    "unevaluatedProperties",
    "dependentRequired",
    "propertyNames",
    "minProperties",
];

proptest! {
    #[test]
    fn as_schema_003_random_allowlisted_schemas_are_accepted(schema in allowlisted_schema()) {
        prop_assert_eq!(subset(&schema), Ok(()));
        prop_assert!(schema::compile(&schema).is_ok());
    }

    #[test]
    fn as_schema_003_any_forbidden_keyword_is_rejected_where_it_is(
        schema in allowlisted_schema(),
        keyword in prop::sample::select(FORBIDDEN.to_vec()),
        at in any::<prop::sample::Index>(),
    ) {
        let mut pointers = Vec::new();
        subschema_pointers(&schema, String::new(), &mut pointers);
        let pointer = at.get(&pointers).clone();
        let mut broken = schema.clone();
        let target: &mut Map<String, Value> = broken.pointer_mut(&pointer).and_then(Value::as_object_mut).unwrap();
        target.insert(keyword.to_owned(), json!([]));
        prop_assert_eq!(subset(&broken), Err((keyword.to_owned(), pointer)));
    }

    #[test]
    fn as_schema_003_excess_depth_is_rejected(schema in allowlisted_schema()) {
        let deep = (0..9).fold(schema, |inner, _| json!({"type": "array", "items": inner}));
        let err = check_subset(&deep, &SchemaLimits::default()).unwrap_err();
        prop_assert!(err.message().contains("deeper than 8"));
    }
}

/// An operation with a struct variant.
#[agent_surface::agent_schema]
pub(crate) enum Motion {
    /// Moves.
    Move {
        /// How far.
        #[schemars(range(max = 10))]
        distance: u32,
        /// How fast (0: the default speed).
        #[serde(default)]
        #[schemars(range(max = 10))]
        speed: u32,
    },
}

#[test]
fn as_schema_001_struct_variants_reject_unknown_fields_as_structs_do() {
    // A typo is an error, not a field left at its default.
    let typo = serde_json::from_value::<Motion>(json!({"move": {"distance": 5, "sped": 3}}));
    assert!(typo.is_err());
    let fine = serde_json::from_value::<Motion>(json!({"move": {"distance": 5}}));
    assert!(matches!(
        fine,
        Ok(Motion::Move {
            distance: 5,
            speed: 0
        })
    ));
    let schema =
        serde_json::to_value(agent_surface::macro_support::schemars::schema_for!(Motion)).unwrap();
    let text = schema.to_string();
    assert!(text.contains(r#""additionalProperties":false"#), "{text}");
}

#[test]
fn as_schema_001_issue_paths_show_invisible_characters_as_question_marks() {
    let schema = schema::compile(&json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": false
    }))
    .unwrap();
    let issues = schema.validate(&json!({"a\u{1b}[31m\u{202e}\u{200b}\u{0}b": 1}));
    let path = issues[0].path().to_owned();
    assert_eq!(path, "/a?[31m???b", "{issues:?}");
}
