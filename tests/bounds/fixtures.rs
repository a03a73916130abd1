//! A component for the bound tests, and deep values built and dropped
//! without recursion.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_surface::prelude::*;
use agent_surface::registry::Registry;
use serde_json::{Map, Value};

/// Anything the agent sends.
#[agent_schema]
#[derive(Clone, Debug)]
pub(crate) struct Payload {
    /// Any JSON value.
    #[agent_schema(unbounded)]
    pub(crate) payload: Value,
}

/// A component that takes and returns arbitrary JSON.
pub(crate) struct Deep {
    /// How deep `nested` nests its output.
    pub(crate) depth: AtomicUsize,
}

impl Deep {
    pub(crate) fn new(depth: usize) -> Arc<Deep> {
        Arc::new(Deep {
            depth: AtomicUsize::new(depth),
        })
    }
}

/// Deep values.
#[agent_component(type = "test.deep")]
impl Deep {
    /// Returns arrays nested as deep as configured.
    #[observation]
    fn nested(&self) -> Value {
        nested_arrays(self.depth.load(Ordering::SeqCst))
    }

    /// Takes any payload.
    #[action(effect = "local-state")]
    fn store(&self, input: Payload) {
        dispose(input.payload);
    }

    /// Takes any payload once the user approves.
    #[action(effect = "local-state", confirmation = "required")]
    fn guarded(&self, input: Payload) {
        dispose(input.payload);
    }
}

/// A registry for tests.
pub(crate) fn registry() -> Registry {
    Registry::builder().environment(Environment::Test).build()
}

/// `depth` arrays, one inside the other, around `null`.
pub(crate) fn nested_arrays(depth: usize) -> Value {
    let mut value = Value::Null;
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// `depth` objects, one inside the other under the key `k`, around `1`.
pub(crate) fn nested_objects(depth: usize) -> Value {
    let mut value = Value::from(1);
    for _ in 0..depth {
        let mut map = Map::new();
        map.insert("k".to_owned(), value);
        value = Value::Object(map);
    }
    value
}

/// Drops a value without recursion.
pub(crate) fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, child)| child)),
            _ => {}
        }
    }
}
