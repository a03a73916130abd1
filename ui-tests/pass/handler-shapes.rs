//! Every handler shape compiles and yields a valid contract.

use agent_surface::prelude::*;

#[agent_schema]
pub struct Rename {
    /// The new name.
    #[agent_schema(unbounded)] pub name: String,
}

#[agent_schema]
pub struct Renamed {
    /// The previous name.
    pub previous: String,
}

pub struct Shapes;

/// A component exercising every handler shape.
#[agent_component(type = "shapes.all")]
impl Shapes {
    /// Sync, no context.
    #[observation]
    fn sync_plain(&self) -> u32 {
        1
    }

    /// Sync, with the read context.
    #[observation]
    fn sync_with_context(&self, ctx: &ReadContext) -> String {
        ctx.capability_id().to_string()
    }

    /// Async, no context.
    #[observation]
    async fn async_plain(&self) -> Vec<String> {
        Vec::new()
    }

    /// Async, with the context, fallible.
    #[observation]
    async fn async_fallible(&self, _ctx: &ReadContext) -> Result<bool, ActionError> {
        Ok(true)
    }

    /// No input, no context, no output.
    #[action(effect = "local-state")]
    fn unit(&self) {}

    /// Input only.
    #[action(effect = "local-state")]
    fn input_only(&self, input: Rename) {
        let _ = input.name;
    }

    /// Input and action context, returning a value.
    #[action(effect = "local-state")]
    fn input_and_context(&self, input: Rename, ctx: &ActionContext) -> Renamed {
        let _ = ctx.invocation_id();
        Renamed { previous: input.name }
    }

    /// Context before input.
    #[action(effect = "local-state")]
    fn context_first(&self, ctx: &ReadContext, input: Rename) -> Result<Renamed, ActionError> {
        let _ = ctx.consumer();
        Ok(Renamed { previous: input.name })
    }

    /// Context only.
    #[action(effect = "navigation")]
    fn context_only(&self, ctx: &ActionContext) -> Result<(), ActionError> {
        if ctx.is_cancelled() {
            return Err(ActionError::cancelled());
        }
        Ok(())
    }

    /// Async with input and context.
    #[action(effect = "local-state")]
    async fn async_full(&self, input: Rename, ctx: &ActionContext) -> Result<Renamed, ActionError> {
        ctx.cancellation().cancelled().await;
        Ok(Renamed { previous: input.name })
    }

    /// Async, any std error converts.
    #[action(effect = "local-state")]
    async fn async_io(&self, input: Rename) -> Result<(), std::io::Error> {
        let _ = input;
        Ok(())
    }

    /// Async, no input.
    #[action(effect = "local-state")]
    async fn async_unit(&self) {}

    /// A precondition failure converts too.
    #[action(effect = "local-state")]
    fn precondition_error(&self, input: Rename) -> Result<u8, PreconditionFailure> {
        if input.name.is_empty() {
            return Err(PreconditionFailure::new("Give a name"));
        }
        Ok(1)
    }

    /// Destructured input.
    #[action(effect = "local-state")]
    fn destructured(&self, Rename { name }: Rename) -> String {
        name
    }
}

fn main() {
    let contract = Shapes::contract().checked().expect("valid contract");
    assert_eq!(contract.observations().count(), 4);
    assert_eq!(contract.actions().count(), 10);
    let full = contract.capability("asyncFull").unwrap();
    assert!(full.output_schema().is_some());
    assert!(contract.capability("asyncIo").unwrap().output_schema().is_none());
    assert!(contract.capability("unit").unwrap().input_schema().is_some());
}
