//! Dependencies that contribute capabilities: their macro contracts are
//! linked into the package's catalog, so each needs explicit approval by
//! crate name and digest in the package's Cargo.toml:
//!
//! ```toml
//! [package.metadata.agent-surface]
//! approved-contributors = [
//!     { crate = "fleet_widgets", digest = "sha256:…" },
//! ]
//! ```
//!
//! An unapproved contributor, or one whose declarations changed since the
//! digest was approved, fails `check`; the entry to add is printed, digest
//! included. No flag skips this.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::Fatal;

/// The approval state of one contributing crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Contributor {
    /// The crate name.
    pub(crate) name: String,
    /// The digest of its declarations now.
    pub(crate) digest: String,
    /// `approved`, `unapproved` or `changed` (approved with another digest).
    pub(crate) status: &'static str,
}

impl Contributor {
    /// Whether it fails the check.
    pub(crate) fn fails(&self) -> bool {
        self.status != "approved"
    }

    /// The line to add to `approved-contributors`.
    pub(crate) fn entry(&self) -> String {
        format!(
            "{{ crate = \"{}\", digest = \"{}\" }}",
            self.name, self.digest
        )
    }

    /// As JSON.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "crate": self.name,
            "digest": self.digest,
            "status": self.status,
            "entry": self.entry(),
        })
    }
}

/// The approvals of `[package.metadata.agent-surface]`: crate → digests.
fn approvals(settings: &Value) -> Result<BTreeMap<String, Vec<String>>, Fatal> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Some(list) = settings.get("approved-contributors") else {
        return Ok(out);
    };
    let bad = || {
        Fatal(
            "[package.metadata.agent-surface] approved-contributors must be a list of \
             { crate = \"name\", digest = \"sha256:…\" }"
                .to_owned(),
        )
    };
    for item in list.as_array().ok_or_else(bad)? {
        let name = item.get("crate").and_then(Value::as_str).ok_or_else(bad)?;
        let digest = item.get("digest").and_then(Value::as_str).ok_or_else(bad)?;
        out.entry(name.to_owned())
            .or_default()
            .push(digest.to_owned());
    }
    Ok(out)
}

/// Each contributing crate of the fresh catalog with its approval state.
pub(crate) fn review(
    contributing: &BTreeMap<String, String>,
    settings: &Value,
) -> Result<Vec<Contributor>, Fatal> {
    let approved = approvals(settings)?;
    Ok(contributing
        .iter()
        .map(|(name, digest)| {
            let status = match approved.get(name) {
                Some(digests) if digests.contains(digest) => "approved",
                Some(_) => "changed",
                None => "unapproved",
            };
            Contributor {
                name: name.clone(),
                digest: digest.clone(),
                status,
            }
        })
        .collect())
}
