//! Recursive inputs: a tree of `Self`, and a recursive generic tree, taken
//! by an action and read back.

use agent_surface::prelude::*;

/// A folder: its name and its subfolders.
#[agent_schema]
pub struct Folder {
    /// The folder's name.
    #[schemars(length(max = 64))]
    pub name: String,
    /// Its subfolders.
    #[schemars(length(max = 16))]
    pub children: Vec<Self>,
}

/// A tree of values.
#[agent_schema]
pub struct Tree<T> {
    /// The value here.
    pub value: T,
    /// The subtrees.
    #[schemars(length(max = 16))]
    pub children: Vec<Tree<T>>,
}

pub struct Files;

/// Files.
#[agent_component(type = "files.browser")]
impl Files {
    /// Create folders.
    #[action(effect = "local-state")]
    fn create(&self, input: Folder) -> usize {
        input.children.len()
    }

    /// Plant a tree of numbers.
    #[action(effect = "local-state")]
    fn plant(&self, input: Tree<u32>) -> u32 {
        input.value
    }
}

fn main() {}
