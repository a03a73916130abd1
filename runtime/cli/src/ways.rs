//! Platform ways: the sets of platform conditions under which a crate or a
//! file is reached, each way its own conjunction, kept apart so the gate
//! tells every platform a declaration lives on, never only the first way
//! it found.

/// At most this many platform ways to one crate or file are told apart; a
/// way beyond them is told as [`OTHER_WAYS`]. What it reaches stays
/// conditional either way: it is never taken as built on every platform.
pub(crate) const MAX_WAYS: usize = 8;

/// How ways beyond [`MAX_WAYS`] are told.
pub(crate) const OTHER_WAYS: &str = "other platform conditions";

/// The platform ways to one crate or file: each the conditions that all
/// hold on one way to it (an empty way: on every platform). No way holds
/// another's conditions and more (it would add no platform).
#[derive(Default)]
pub(crate) struct Ways(pub(crate) Vec<Vec<String>>);

impl Ways {
    /// Adds `way` unless a kept way already covers it (its conditions are
    /// a subset); drops the kept ways it covers. Returns the way to walk
    /// on with, `None` when it adds no platform.
    pub(crate) fn add(&mut self, way: Vec<String>) -> Option<Vec<String>> {
        let covers = |wide: &[String], narrow: &[String]| wide.iter().all(|c| narrow.contains(c));
        if self.0.iter().any(|kept| covers(kept, &way)) {
            return None;
        }
        let way = if self.0.len() >= MAX_WAYS {
            vec![OTHER_WAYS.to_owned()]
        } else {
            way
        };
        if self.0.iter().any(|kept| covers(kept, &way)) {
            return None;
        }
        self.0.retain(|kept| !covers(&way, kept));
        self.0.push(way.clone());
        Some(way)
    }

    /// The condition as one conjunction: empty when some way is
    /// unconditional, else the one way, else `any(…)` of every way.
    pub(crate) fn condition(&self) -> Vec<String> {
        match self.0.as_slice() {
            [] => Vec::new(),
            ways if ways.iter().any(Vec::is_empty) => Vec::new(),
            [one] => one.clone(),
            many => {
                let mut each: Vec<String> = many
                    .iter()
                    .map(|way| crate::source_attrs::joined(way))
                    .collect();
                each.sort();
                vec![format!("any({})", each.join(", "))]
            }
        }
    }
}
