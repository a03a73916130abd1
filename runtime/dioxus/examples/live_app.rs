//! The crate docs' example: a live inbox whose selection decides what an
//! agent may do, and the dialog where the person answers the agent.

use std::sync::{Arc, Mutex};

use agent_surface::confirmation::HOST_CHANNEL;
use agent_surface::prelude::*;
use agent_surface_dioxus::{
    use_agent_component, use_agent_surface_provider, use_pending_confirmations, use_registry,
    use_surface_revision,
};
use dioxus::prelude::*;

/// The state the page and the agent share.
#[derive(Default)]
struct Inbox {
    selected: Mutex<Vec<String>>,
}

impl Inbox {
    fn selected(&self) -> Vec<String> {
        self.selected.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// The inbox as the agent sees it.
struct InboxFace(Arc<Inbox>);

/// The message list.
#[agent_component(type = "mail.inbox")]
impl InboxFace {
    /// The selected message ids.
    #[observation]
    fn selection(&self) -> Vec<String> {
        self.0.selected()
    }

    /// Archive the selected messages.
    #[action(
        effect = "local-state",
        confirmation = "required",
        when = has_selection,
        unavailable_reason = "Select a message first"
    )]
    fn archive(&self) {
        if let Ok(mut selected) = self.0.selected.lock() {
            selected.clear();
        }
    }

    fn has_selection(&self) -> bool {
        !self.0.selected().is_empty()
    }
}

fn app() -> Element {
    // One registry for the tree; serve it with `McpServer::builder(&registry)`.
    use_agent_surface_provider(Registry::default);
    rsx! {
        InboxView {}
        ConfirmDialog {}
    }
}

#[component]
fn InboxView() -> Element {
    let inbox = use_hook(|| Arc::new(Inbox::default()));
    let face = Arc::clone(&inbox);
    // Mounted on the first render, unmounted with the scope. After every
    // render `archive`'s `when` is re-evaluated: selecting a message offers
    // it to every connected agent, with no agent call.
    use_agent_component(move || Arc::new(InboxFace(face)));
    let _ = use_surface_revision()(); // re-render when an agent acted
    let mut clicks = use_signal(|| 0); // re-render when the person acted
    let _ = clicks();
    let selected = inbox.selected().len();
    rsx! {
        button {
            onclick: move |_| {
                if let Ok(mut selected) = inbox.selected.lock() {
                    selected.push("m1".to_owned());
                }
                clicks += 1;
            },
            "Select m1"
        }
        p { "{selected} selected" }
    }
}

#[component]
fn ConfirmDialog() -> Element {
    let pending = use_pending_confirmations();
    let registry = use_registry();
    // The person answers through the registry's own host channel here; a
    // real app declares its dialog as a channel (`.approval_channel("dialog")`).
    let Some(approver) =
        registry.and_then(|r| r.confirmations().approver(HOST_CHANNEL, "person").ok())
    else {
        return rsx! {};
    };
    let Some(presented) = pending.presented() else {
        return rsx! {};
    };
    let request = presented.request;
    // The buttons answer exactly the request this render showed.
    let shown = request.shown();
    let deny_shown = shown.clone();
    let deny_approver = approver.clone();
    rsx! {
        dialog { open: true,
            p { "{request.summary}" }
            pre { "{request.display_input()}" } // the exact input, escaped
            if presented.ended.is_some() {
                p { "This request is no longer waiting." }
                button { onclick: move |_| pending.dismiss(), "Dismiss" }
            } else {
                button { onclick: move |_| { let _ = pending.approve(&shown, &approver); }, "Approve" }
                button { onclick: move |_| { let _ = pending.deny(&deny_shown, &deny_approver); }, "Deny" }
            }
        }
    }
}

fn main() {
    // Any renderer: dioxus-liveview (as the devices console does), desktop,
    // or, as here, a headless VirtualDom.
    let mut dom = VirtualDom::new(app);
    dom.rebuild_in_place();
}
