//! Helper attributes imported one by one are used, not reported unused,
//! even under `-D warnings`; with only `agent_component` imported, or the
//! prelude, or under `cfg_attr`, they resolve as well.
#![deny(warnings)]

use agent_surface::{action, agent_component, observation};

pub struct Panel;

/// A panel.
#[agent_component(type = "demo.panel")]
impl Panel {
    /// Is it open.
    #[observation]
    fn is_open(&self) -> bool {
        true
    }

    /// Closes it.
    #[action(effect = "local-state")]
    fn close(&self) {}
}

mod only_the_component {
    use agent_surface::agent_component;

    pub struct Other;

    /// Another panel.
    #[agent_component(type = "demo.other")]
    impl Other {
        /// Closes it.
        #[action(effect = "local-state")]
        fn close(&self) {}

        /// Whether it shows.
        #[cfg_attr(all(), observation)]
        fn shown(&self) -> bool {
            true
        }
    }
}

fn main() {
    use agent_surface::Component;
    let panel = Panel::contract().checked().expect("valid contract");
    assert_eq!(panel.capabilities().len(), 2);
    let other = only_the_component::Other::contract().checked().expect("valid contract");
    assert_eq!(other.capabilities().len(), 2);
}
