//! Definition errors: structural defects of an authored contract, raised
//! at compile time by the macros and again at registration.

use std::fmt;

use serde::Serialize;

/// Kinds of structural defects in an authored contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum DefinitionErrorKind {
    /// An id does not match the grammar.
    InvalidId,
    /// A missing or empty description, non-JSON metadata, a malformed attribute.
    InvalidDefinition,
    /// A schema outside the supported subset.
    UnsupportedSchema,
    /// A capability declares an effect of the other plane.
    PlaneViolation,
    /// Two capabilities of one component share a name.
    DuplicateCapability,
    /// A description, metadata or schema over its limit.
    LimitExceeded,
}

impl DefinitionErrorKind {
    /// The SCREAMING_SNAKE name.
    pub const fn as_str(self) -> &'static str {
        match self {
            DefinitionErrorKind::InvalidId => "INVALID_ID",
            DefinitionErrorKind::InvalidDefinition => "INVALID_DEFINITION",
            DefinitionErrorKind::UnsupportedSchema => "UNSUPPORTED_SCHEMA",
            DefinitionErrorKind::PlaneViolation => "PLANE_VIOLATION",
            DefinitionErrorKind::DuplicateCapability => "DUPLICATE_CAPABILITY",
            DefinitionErrorKind::LimitExceeded => "LIMIT_EXCEEDED",
        }
    }
}

/// A structural defect in an authored contract, for the developer.
///
/// Raised in every environment: structural defects are deterministic bugs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionError {
    kind: DefinitionErrorKind,
    subject: String,
    message: String,
}

impl DefinitionError {
    /// A defect of `kind` in `subject` (a component type, a capability id, a
    /// schema location).
    pub fn new(
        kind: DefinitionErrorKind,
        subject: impl Into<String>,
        message: impl Into<String>,
    ) -> DefinitionError {
        DefinitionError {
            kind,
            subject: subject.into(),
            message: message.into(),
        }
    }

    /// The kind of defect.
    pub fn kind(&self) -> DefinitionErrorKind {
        self.kind
    }

    /// What the defect is in.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// What is wrong and how to fix it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the subject with an outer location.
    #[must_use]
    pub fn within(mut self, outer: &str) -> DefinitionError {
        self.subject = if self.subject.is_empty() {
            outer.to_owned()
        } else {
            format!("{outer} {}", self.subject)
        };
        self
    }
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in {}: {}",
            self.kind.as_str(),
            self.subject,
            self.message
        )
    }
}

impl std::error::Error for DefinitionError {}
