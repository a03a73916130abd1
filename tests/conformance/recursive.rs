//! Recursive inputs (AS-SCHEMA-001: the subset's `$ref`/`$defs`, as
//! schemars writes recursion): a struct holding `Vec<Self>`, and a
//! recursive generic tree, compile, mount, validate and reach the handler
//! whole.

use std::sync::Arc;

use agent_surface::prelude::*;
use serde_json::json;

use crate::fixtures::{call, code, registry};

/// A folder: its name and its subfolders.
#[agent_schema]
pub(crate) struct Folder {
    /// The folder's name.
    #[schemars(length(max = 64))]
    pub(crate) name: String,
    /// Its subfolders.
    #[schemars(length(max = 16))]
    pub(crate) children: Vec<Self>,
}

impl Folder {
    fn count(&self) -> usize {
        1 + self.children.iter().map(Folder::count).sum::<usize>()
    }
}

/// A tree of values.
#[agent_schema]
pub(crate) struct Tree<T> {
    /// The value here.
    pub(crate) value: T,
    /// The subtrees.
    #[schemars(length(max = 16))]
    pub(crate) children: Vec<Tree<T>>,
}

impl Tree<u32> {
    fn sum(&self) -> u32 {
        self.value + self.children.iter().map(Tree::sum).sum::<u32>()
    }
}

pub(crate) struct Files;

/// Files.
#[agent_component(type = "test.files")]
impl Files {
    /// Create folders: how many.
    #[action(effect = "local-state")]
    fn create(&self, input: Folder) -> usize {
        input.count()
    }

    /// Plant a tree of numbers: their sum.
    #[action(effect = "local-state")]
    fn plant(&self, input: Tree<u32>) -> u32 {
        input.sum()
    }
}

#[tokio::test]
async fn as_schema_001_recursive_inputs_of_self_and_of_a_generic_tree_work() {
    let registry = registry();
    let _mounted = registry.mount(Arc::new(Files)).unwrap();
    let created = call(
        &registry,
        Invocation::new("view:test.files.create").input(json!({
            "name": "root",
            "children": [{"name": "a", "children": [{"name": "b", "children": []}]}]
        })),
    )
    .await;
    assert_eq!(created.output(), Some(&json!(3)), "{created:?}");
    let planted = call(
        &registry,
        Invocation::new("view:test.files.plant").input(json!({
            "value": 1,
            "children": [{"value": 2, "children": [{"value": 3, "children": []}]}]
        })),
    )
    .await;
    assert_eq!(planted.output(), Some(&json!(6)), "{planted:?}");
    // The nested level is validated as the root is.
    let refused = call(
        &registry,
        Invocation::new("view:test.files.plant").input(json!({
            "value": 1,
            "children": [{"value": "two", "children": []}]
        })),
    )
    .await;
    assert_eq!(code(&refused), Some(ErrorCode::InvalidInput), "{refused:?}");
}
