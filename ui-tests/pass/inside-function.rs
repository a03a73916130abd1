//! A component declared inside a function body, and raw identifiers.

use agent_surface::prelude::*;

fn main() {
    struct Local;

    /// A component local to a function.
    #[agent_component(type = "local.thing")]
    impl Local {
        /// The kind.
        #[observation]
        fn r#type(&self) -> String {
            "local".to_owned()
        }

        /// Multi-line docs are joined
        /// into one paragraph.
        ///
        /// And a second one.
        #[action(effect = "local-state")]
        fn do_it_now(&self) {}
    }

    let contract = Local::contract().checked().expect("valid contract");
    assert!(contract.capability("type").is_some());
    let action = contract.capability("doItNow").unwrap();
    assert_eq!(
        &**action.description(),
        "Multi-line docs are joined into one paragraph.\n\nAnd a second one."
    );
}
