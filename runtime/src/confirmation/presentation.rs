//! The human-facing presentation of a confirmation: what the person reads
//! in the host's dialog, in the person's own terms.
//!
//! The host writes it (a [`RegistryBuilder::confirmation_presenter`](crate::registry::RegistryBuilder::confirmation_presenter)
//! turns the request into a title naming the action and its objects — device
//! names, not ids; counts — the label of the button that approves, and the
//! effect in plain words), because only the host knows what ids mean to a
//! person. Without a presenter, or when it returns `None` or panics, the
//! registry presents the capability's description. Every part is escaped
//! like the summary (control, format, bidi and zero-width characters as
//! visible `\u{…}`) and cut to a bound, whoever wrote it: a presenter that
//! interpolates agent input cannot forge what the person reads. The exact
//! input stays in [`PendingConfirmation::input`](super::PendingConfirmation::input)
//! for a detail view.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::util::display_text;
use agent_surface_rules::Effect;

/// Longest title, in characters.
const MAX_TITLE_CHARS: usize = 160;
/// Longest button label, in characters.
const MAX_ACTION_CHARS: usize = 48;
/// Longest effect text, in characters.
const MAX_EFFECT_CHARS: usize = 300;
/// Most items listed.
const MAX_ITEMS: usize = 100;
/// Longest item, in characters.
const MAX_ITEM_CHARS: usize = 160;
/// Longest agent note, in characters.
const MAX_NOTE_CHARS: usize = 300;

/// What a presenter sees of a request.
#[derive(Debug)]
#[non_exhaustive]
pub struct PresentationRequest<'a> {
    /// The capability (`domain:devices.disable`).
    pub capability_id: &'a str,
    /// Its description, as the agent sees it.
    pub description: &'a str,
    /// Its effect.
    pub effect: Effect,
    /// The exact effective input (bound values and the agent's).
    pub input: &'a Value,
    /// Who asks, as a person would name them (the consumer's label), if
    /// known.
    pub requester: Option<&'a str>,
}

/// The request in the person's terms: [`Presentation::new`] and a
/// chainable setter per optional part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Presentation {
    /// Names the action and its objects: "Disable 3 devices: Milan-02,
    /// Milan-03 and Milan-04".
    pub title: String,
    /// The approving button's label: "Disable 3 devices".
    pub action: String,
    /// What approving does, in plain words (empty: say nothing more).
    pub effect: String,
    /// Every object the action touches, one line each in the person's
    /// terms ("Air sensor Navigli — offline, Milan"), shown as a list
    /// (at most 100).
    pub items: Vec<String>,
    /// What the agent said about it in its own words (a free-text field of
    /// the input), shown labelled as the agent's: never the host's voice.
    pub agent_note: Option<String>,
}

impl Presentation {
    /// A presentation: `title`, the approving button's `action` label, and
    /// the `effect` in plain words.
    pub fn new(
        title: impl Into<String>,
        action: impl Into<String>,
        effect: impl Into<String>,
    ) -> Presentation {
        Presentation {
            title: title.into(),
            action: action.into(),
            effect: effect.into(),
            items: Vec::new(),
            agent_note: None,
        }
    }

    /// Lists every object the action touches, one line each.
    #[must_use]
    pub fn items(mut self, items: impl IntoIterator<Item = impl Into<String>>) -> Presentation {
        self.items = items.into_iter().map(Into::into).collect();
        self
    }

    /// What the agent said, in its own words (shown labelled as the
    /// agent's).
    #[must_use]
    pub fn agent_note(mut self, note: impl Into<String>) -> Presentation {
        self.agent_note = Some(note.into());
        self
    }

    /// The default: the description as the title, "Approve" on the button.
    pub(crate) fn fallback(description: &str, effect: Effect) -> Presentation {
        let what = match effect {
            Effect::Destructive => "It cannot be undone from here.",
            Effect::ExternalSideEffect => "It acts outside this application.",
            _ => "",
        };
        Presentation::new(description, "Approve", what)
    }

    /// Escaped and cut to bounds, whoever wrote it; an empty title or
    /// button label falls back to the description's and "Approve".
    pub(crate) fn sanitized(self, description: &str) -> Presentation {
        let clean = |text: &str, max: usize| {
            display_text::truncate(&display_text::escape(text.trim()), max).into_owned()
        };
        let title = match clean(&self.title, MAX_TITLE_CHARS) {
            title if title.is_empty() => clean(description, MAX_TITLE_CHARS),
            title => title,
        };
        let action = match clean(&self.action, MAX_ACTION_CHARS) {
            action if action.is_empty() => "Approve".to_owned(),
            action => action,
        };
        Presentation {
            title,
            action,
            effect: clean(&self.effect, MAX_EFFECT_CHARS),
            items: self
                .items
                .iter()
                .take(MAX_ITEMS)
                .map(|item| clean(item, MAX_ITEM_CHARS))
                .filter(|item| !item.is_empty())
                .collect(),
            agent_note: self
                .agent_note
                .as_deref()
                .map(|note| clean(note, MAX_NOTE_CHARS))
                .filter(|note| !note.is_empty()),
        }
    }
}

/// A host's presenter.
pub(crate) type Presenter =
    Arc<dyn Fn(&PresentationRequest<'_>) -> Option<Presentation> + Send + Sync>;
