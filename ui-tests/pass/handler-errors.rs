//! Handler errors: any `std::error::Error`, `Box<dyn Error + Send + Sync>`,
//! `anyhow::Error` and `String` convert into `ActionError`.

use agent_surface::prelude::*;

#[agent_schema]
pub struct Rename {
    /// The new name.
    #[agent_schema(unbounded)] pub name: String,
}

pub struct Errors;

/// A component whose handlers fail in every common way.
#[agent_component(type = "errors.all")]
impl Errors {
    /// A boxed error.
    #[action(effect = "local-state")]
    fn boxed(&self, input: Rename) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        if input.name.is_empty() {
            return Err("empty name".into());
        }
        Ok(input.name)
    }

    /// A boxed error, no output.
    #[action(effect = "local-state")]
    async fn boxed_unit(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync + 'static>> {
        Ok(())
    }

    /// An anyhow error.
    #[action(effect = "local-state")]
    fn with_anyhow(&self, input: Rename) -> anyhow::Result<u32> {
        let n: u32 = input.name.parse()?;
        Ok(n)
    }

    /// An anyhow error from an observation.
    #[observation]
    async fn counted(&self) -> Result<u32, anyhow::Error> {
        Ok(1)
    }

    /// A plain message.
    #[action(effect = "local-state")]
    fn with_string(&self) -> Result<bool, String> {
        Err("not today".to_owned())
    }
}

fn main() {
    let contract = Errors::contract().checked().expect("valid contract");
    assert_eq!(contract.actions().count(), 4);
    assert!(contract.capability("withAnyhow").unwrap().output_schema().is_some());
    assert!(contract.capability("boxedUnit").unwrap().output_schema().is_none());
}
