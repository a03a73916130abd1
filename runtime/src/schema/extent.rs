//! The extent of a compiled schema: the longest canonical JSON and the
//! deepest nesting of arrays and objects that any value valid against it
//! can have, when the schema bounds both (every string a `maxLength`, every
//! array its `items` and a `maxItems`, every object closed, no recursion).
//!
//! Worked out once, the first time it is asked for. A handler's output whose
//! schema's extent is within the registry's limits needs no walk of its own
//! before validation: if it validates, it fits.

use serde_json::Value;

use super::compile::{ARRAY, BOOLEAN, CompiledSchema, INTEGER, NULL, NUMBER, Node, OBJECT, STRING};

/// The canonical form of any JSON number is at most this long: integers
/// are written from a `u64`, an `i64` or an integral `f64` below `1e21`
/// (at most 22 bytes with the sign), other numbers as JavaScript formats a
/// double (at most 25: `-0.0000012345678901234567`). Rounded up.
const NUMBER_BYTES: usize = 32;

/// Each character of a string is at most six bytes in canonical JSON (a
/// control character's `\u00XX`; any other is at most four bytes of UTF-8).
const CHARACTER_BYTES: usize = 6;

/// The most a valid value can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Bytes of its canonical JSON.
    pub(crate) bytes: usize,
    /// Arrays and objects nested inside one another (a scalar: 0).
    pub(crate) depth: usize,
}

impl Extent {
    const fn scalar(bytes: usize) -> Extent {
        Extent { bytes, depth: 0 }
    }

    /// The larger of two bounds (a value valid against either).
    fn max(self, other: Extent) -> Extent {
        Extent {
            bytes: self.bytes.max(other.bytes),
            depth: self.depth.max(other.depth),
        }
    }

    /// The tighter of two bounds (a value valid against both).
    fn min(self, other: Extent) -> Extent {
        Extent {
            bytes: self.bytes.min(other.bytes),
            depth: self.depth.min(other.depth),
        }
    }

    /// Whether every valid value fits `max_depth` and `max_bytes`.
    pub(crate) fn within(self, max_depth: usize, max_bytes: usize) -> bool {
        self.depth <= max_depth && self.bytes <= max_bytes
    }
}

impl CompiledSchema {
    /// The longest canonical JSON and deepest nesting any valid value can
    /// have; `None` when the schema leaves either unbounded. Worked out on
    /// first use (only output schemas are asked).
    pub(crate) fn extent(&self) -> Option<Extent> {
        let (bytes, depth) = (*self.extent.get_or_init(|| {
            extent(&self.nodes, self.root).map(|extent| (extent.bytes, extent.depth))
        }))?;
        Some(Extent { bytes, depth })
    }
}

/// The extent of `root` among `nodes`, or `None` when some valid value
/// has no bound (or one beyond `usize`).
fn extent(nodes: &[Node], root: usize) -> Option<Extent> {
    let mut walk = Walk {
        nodes,
        on_path: vec![false; nodes.len()],
        known: vec![None; nodes.len()],
    };
    walk.node(root)
}

struct Walk<'a> {
    nodes: &'a [Node],
    /// The nodes being worked out: reaching one again is a recursive
    /// schema, which bounds nothing by itself.
    on_path: Vec<bool>,
    /// Each node's extent once worked out: a definition referenced from
    /// many places is walked once (without it, a chain of definitions each
    /// referencing the next twice took time doubling with every link).
    /// Sound whatever path worked it out: a recursion cut on that path
    /// counted as unbounded, which only loosens a bound.
    known: Vec<Option<Option<Extent>>>,
}

impl Walk<'_> {
    fn node(&mut self, index: usize) -> Option<Extent> {
        let node = self.nodes.get(index)?;
        if let Some(known) = self.known.get(index).copied().flatten() {
            return known;
        }
        let slot = self.on_path.get_mut(index)?;
        if *slot {
            return None;
        }
        *slot = true;
        let extent = self.constrained(node);
        if let Some(slot) = self.on_path.get_mut(index) {
            *slot = false;
        }
        if let Some(known) = self.known.get_mut(index) {
            *known = Some(extent);
        }
        extent
    }

    /// A valid value satisfies every constraint of the node at once: the
    /// tightest of the bounds they give.
    fn constrained(&mut self, node: &Node) -> Option<Extent> {
        let mut bounds: Vec<Extent> = Vec::new();
        if let Some(constant) = &node.constant {
            bounds.push(literal(constant)?);
        }
        if let Some(values) = &node.enumeration {
            bounds.push(values.iter().try_fold(Extent::scalar(0), |most, value| {
                literal(value).map(|extent| most.max(extent))
            })?);
        }
        if let Some(extent) = self.typed(node) {
            bounds.push(extent);
        }
        if let Some(extent) = node.reference.and_then(|reference| self.node(reference)) {
            bounds.push(extent);
        }
        if !node.any_of.is_empty() {
            let mut most = Some(Extent::scalar(0));
            for &branch in &node.any_of {
                most = match (most, self.node(branch)) {
                    (Some(most), Some(extent)) => Some(most.max(extent)),
                    _ => None,
                };
            }
            bounds.extend(most);
        }
        bounds.into_iter().reduce(Extent::min)
    }

    /// The bound of the node's types (the largest of them), if each of its
    /// types is bounded here; none when it allows any type.
    fn typed(&mut self, node: &Node) -> Option<Extent> {
        if node.types == 0 {
            return None;
        }
        let mut most = Extent::scalar(0);
        for (bit, extent) in [
            (NULL, Some(Extent::scalar(4))),
            (BOOLEAN, Some(Extent::scalar(5))),
            (INTEGER | NUMBER, Some(Extent::scalar(NUMBER_BYTES))),
            (STRING, string(node)),
            (ARRAY, self.array(node)),
            (OBJECT, self.object(node)),
        ] {
            if node.types & bit != 0 {
                most = most.max(extent?);
            }
        }
        Some(most)
    }

    fn array(&mut self, node: &Node) -> Option<Extent> {
        let most = usize::try_from(node.max_items?).ok()?;
        if most == 0 {
            return Some(Extent { bytes: 2, depth: 1 });
        }
        let item = self.node(node.items?)?;
        // `[`, the items, the commas between them, `]`.
        let bytes = item
            .bytes
            .checked_add(1)?
            .checked_mul(most)?
            .checked_add(1)?;
        Some(Extent {
            bytes,
            depth: item.depth.checked_add(1)?,
        })
    }

    fn object(&mut self, node: &Node) -> Option<Extent> {
        if !node.closed {
            return None;
        }
        // `{` and every declared property present.
        let mut bytes: usize = 1;
        let mut depth: usize = 0;
        for (name, property) in &node.properties {
            let value = self.node(*property)?;
            let key =
                crate::canonical::canonical_len_within(&Value::String(name.clone()), usize::MAX)?;
            // The key, its colon, the value and the comma or `}` after it.
            bytes = bytes
                .checked_add(key)?
                .checked_add(2)?
                .checked_add(value.bytes)?;
            depth = depth.max(value.depth);
        }
        Some(Extent {
            bytes: bytes.max(2),
            depth: depth.checked_add(1)?,
        })
    }
}

fn string(node: &Node) -> Option<Extent> {
    let characters = usize::try_from(node.max_length?).ok()?;
    Some(Extent::scalar(
        characters.checked_mul(CHARACTER_BYTES)?.checked_add(2)?,
    ))
}

/// A literal's own extent (a `const` or an `enum` member).
fn literal(value: &Value) -> Option<Extent> {
    let bytes = crate::canonical::canonical_len_within(value, usize::MAX)?;
    Some(Extent {
        bytes,
        depth: crate::util::nesting::depth_up_to(value, usize::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::canonical_json;
    use crate::schema::compile::compile;
    use serde_json::json;

    fn of(schema: Value) -> Option<Extent> {
        compile(&schema).ok().and_then(|compiled| compiled.extent())
    }

    #[test]
    fn a_closed_object_of_bounded_fields_has_an_extent() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "name": {"type": "string", "maxLength": 3},
                "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}
            },
            "additionalProperties": false
        });
        // {"n":<32>,"name":<20>,"tags":[false,false]}
        let expected = 2 + (3 + 1 + 32) + 1 + (6 + 1 + 20) + 1 + (6 + 1 + 13);
        assert_eq!(
            of(schema),
            Some(Extent {
                bytes: expected,
                depth: 2
            })
        );
    }

    #[test]
    fn open_objects_unbounded_strings_and_lists_have_none() {
        assert_eq!(of(json!({"type": "object"})), None);
        assert_eq!(of(json!({"type": "string"})), None);
        assert_eq!(
            of(json!({"type": "array", "items": {"type": "null"}})),
            None
        );
        assert_eq!(of(json!({})), None);
        assert_eq!(
            of(json!({"type": ["string", "null"], "maxLength": 4})),
            Some(Extent::scalar(26))
        );
    }

    #[test]
    fn recursion_bounds_nothing_but_a_const_or_enum_bounds_anything() {
        let tree = json!({
            "$defs": {"node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                "additionalProperties": false
            }},
            "$ref": "#/$defs/node"
        });
        assert_eq!(of(tree), None);
        assert_eq!(
            of(json!({"enum": ["a", [1, {"b": null}]]})),
            Some(Extent {
                bytes: 14,
                depth: 2
            })
        );
        assert_eq!(
            of(json!({"anyOf": [{"const": "abc"}, {"type": "boolean"}]})),
            Some(Extent::scalar(5))
        );
        assert_eq!(
            of(json!({"anyOf": [{"const": "abc"}, {"type": "string"}]})),
            None
        );
    }

    /// `levels` definitions, each a closed object whose two properties
    /// both reference the next; the last one's are booleans.
    fn chain(levels: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for level in 0..levels {
            let next = if level + 1 == levels {
                json!({"type": "boolean"})
            } else {
                json!({"$ref": format!("#/$defs/d{}", level + 1)})
            };
            defs.insert(
                format!("d{level}"),
                json!({
                    "type": "object",
                    "properties": {"a": next.clone(), "b": next},
                    "additionalProperties": false
                }),
            );
        }
        json!({"$defs": defs, "$ref": "#/$defs/d0"})
    }

    #[test]
    fn a_definition_referenced_from_many_places_is_worked_out_once() {
        // 2^40 paths to the last definition, 41 nodes to work out.
        assert_eq!(of(chain(40)).map(|extent| extent.depth), Some(40));
        // `{"a":X,"b":X}` is 11 + 2·X bytes, from X = 5 (`false`): 21, 53, 117.
        assert_eq!(
            of(chain(3)),
            Some(Extent {
                bytes: 117,
                depth: 3
            })
        );
    }

    #[test]
    fn every_valid_value_fits_its_extent() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "number"},
                "s": {"type": "string", "maxLength": 4},
                "list": {"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 3}
            },
            "additionalProperties": false
        });
        let compiled = compile(&schema).unwrap();
        let extent = compiled.extent().unwrap();
        for value in [
            json!({}),
            json!({"n": -0.0000012345678901234567_f64, "s": "\u{1}\u{2}\u{3}\u{4}", "list": ["\u{1}\"", "ab", "\u{10ffff}\u{10ffff}"]}),
            json!({"n": -1.7976931348623157e308_f64, "s": "\"\"\"\"", "list": []}),
            json!({"n": i64::MIN, "s": "\u{7f}\u{80}\u{ffff}\u{10000}"}),
            json!({"n": u64::MAX}),
        ] {
            assert!(compiled.is_valid(&value), "{value}");
            assert!(
                canonical_json(&value).len() <= extent.bytes,
                "{value}: {} > {}",
                canonical_json(&value).len(),
                extent.bytes
            );
        }
    }
}
