//! A finding: one classified change between two artifacts (its class —
//! widening, narrowing, neutral — its subject and what changed, in words).

use serde_json::{Value, json};

use crate::args::FailOn;

/// The class of a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// The agent can reach more, or with fewer gates.
    Widening,
    /// The agent can reach less, or with more gates.
    Narrowing,
    /// Neither: wording, schemas, metadata, moves.
    Neutral,
}

impl Class {
    /// The class as a word.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Class::Widening => "widening",
            Class::Narrowing => "narrowing",
            Class::Neutral => "neutral",
        }
    }

    /// Whether `--policy` selects this class to fail.
    pub(crate) fn fails(self, fail_on: FailOn) -> bool {
        match fail_on {
            FailOn::All => true,
            FailOn::Widening => self == Class::Widening,
            FailOn::Narrowing => self == Class::Narrowing,
            FailOn::Neutral => self == Class::Neutral,
            FailOn::None => false,
        }
    }
}

/// One classified change.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Finding {
    /// Its class.
    pub(crate) class: Class,
    /// What changed: a capability id or a declaration key.
    pub(crate) subject: String,
    /// How, in words.
    pub(crate) change: String,
}

impl Finding {
    pub(crate) fn new(class: Class, subject: &str, change: String) -> Finding {
        Finding {
            class,
            subject: subject.to_owned(),
            change,
        }
    }

    /// The finding as JSON.
    pub(crate) fn to_json(&self, fail_on: Option<FailOn>) -> Value {
        let mut value = json!({
            "class": self.class.word(),
            "subject": self.subject,
            "change": self.change,
        });
        if let (Some(fail_on), Some(object)) = (fail_on, value.as_object_mut()) {
            object.insert("fails".into(), self.class.fails(fail_on).into());
        }
        value
    }
}
