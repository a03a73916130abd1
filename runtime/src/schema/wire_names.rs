//! The property names a type's values hold on the wire when flattened into
//! another object, read at compile time: `#[agent_schema]` finds two
//! fields that serde would read from one key — a field and a field of a
//! flattened type, two flattened types' fields, an internally tagged
//! enum's tag and a field of a variant's type — across types, where one
//! type's expansion cannot see the other's fields.

/// The names a value of a type holds as an object's properties: its own
/// (with their aliases) and those of the types it flattens. A type whose
/// names are unknown (a map, a hand-written schema) answers
/// [`WireNames::NONE`] and clashes with nothing.
#[doc(hidden)]
#[derive(Debug)]
pub struct WireNames {
    /// The names of its own fields as agents send them, aliases included.
    pub own: &'static [&'static str],
    /// The names of the types it flattens.
    pub flattened: &'static [&'static WireNames],
}

impl WireNames {
    /// No names known.
    pub const NONE: WireNames = WireNames {
        own: &[],
        flattened: &[],
    };

    /// `names`, or none where there are none.
    pub const fn or_none(names: Option<&'static WireNames>) -> &'static WireNames {
        match names {
            Some(names) => names,
            None => &WireNames::NONE,
        }
    }

    /// Whether `name` is one of these names (flattened ones included).
    pub const fn contains(&self, name: &str) -> bool {
        let mut own = self.own;
        while let [first, rest @ ..] = own {
            if same(first, name) {
                return true;
            }
            own = rest;
        }
        let mut flattened = self.flattened;
        while let [first, rest @ ..] = flattened {
            if first.contains(name) {
                return true;
            }
            flattened = rest;
        }
        false
    }

    /// Whether a name is both one of these and one of `other`'s.
    pub const fn overlaps(&self, other: &WireNames) -> bool {
        let mut own = self.own;
        while let [first, rest @ ..] = own {
            if other.contains(first) {
                return true;
            }
            own = rest;
        }
        let mut flattened = self.flattened;
        while let [first, rest @ ..] = flattened {
            if first.overlaps(other) {
                return true;
            }
            flattened = rest;
        }
        false
    }
}

/// Byte equality, in a const fn.
const fn same(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a, b) {
            ([], []) => return true,
            ([x, a_rest @ ..], [y, b_rest @ ..]) if *x == *y => {
                a = a_rest;
                b = b_rest;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WireNames;

    const INNER: WireNames = WireNames {
        own: &["x", "y"],
        flattened: &[],
    };
    const OUTER: WireNames = WireNames {
        own: &["z"],
        flattened: &[&INNER],
    };

    #[test]
    fn names_are_found_through_flattened_types() {
        assert!(OUTER.contains("y"));
        assert!(!OUTER.contains("xy"));
        assert!(OUTER.overlaps(&WireNames {
            own: &["q", "x"],
            flattened: &[]
        }));
        assert!(!OUTER.overlaps(&WireNames::NONE));
        const { assert!(OUTER.overlaps(&INNER), "evaluated at compile time alike") };
    }
}
