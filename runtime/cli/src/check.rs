//! `cargo agent-surface check`: (a) integrity — the freshly built catalog
//! against the committed artifact; contributors — every dependency that
//! links contracts into the catalog is approved by name and digest; (b)
//! drift — the committed artifact against the one at `--base`, each change
//! classified, the classes selected by `--policy` failing. Every row is
//! printed whatever fails.

use agent_surface::canonical::canonical_json;
use serde_json::{Value, json};

use crate::args::{FailOn, Format};
use crate::contributors::Contributor;
use crate::finding::Finding;
use crate::style::{self, Style};

/// What `check` found.
pub(crate) struct Checked<'a> {
    /// The package name.
    pub(crate) package: &'a str,
    /// The artifact file as shown (relative to the package).
    pub(crate) artifact_name: &'a str,
    /// The artifact file relative to the current directory, for annotations.
    pub(crate) annotation_file: &'a str,
    /// `ok`, `stale` or `missing`.
    pub(crate) integrity: &'static str,
    /// Committed → fresh changes when stale.
    pub(crate) stale: Vec<Finding>,
    /// Contributing dependencies.
    pub(crate) contributors: Vec<Contributor>,
    /// `--base`, and base → committed changes.
    pub(crate) drift: Option<(&'a str, Vec<Finding>)>,
    /// `--policy`.
    pub(crate) fail_on: FailOn,
    /// What the gate could not see, in words.
    pub(crate) unseen: Vec<String>,
}

impl Checked<'_> {
    /// Whether the check fails (exit status 1).
    pub(crate) fn failed(&self) -> bool {
        self.integrity != "ok"
            || self.contributors.iter().any(Contributor::fails)
            || self
                .drift
                .as_ref()
                .is_some_and(|(_, findings)| findings.iter().any(|f| f.class.fails(self.fail_on)))
    }
}

fn policy_word(fail_on: FailOn) -> &'static str {
    match fail_on {
        FailOn::All => "all",
        FailOn::Widening => "widening",
        FailOn::Narrowing => "narrowing",
        FailOn::Neutral => "neutral",
        FailOn::None => "none",
    }
}

fn json(report: &Checked<'_>) -> String {
    let drift = report.drift.as_ref().map(|(base, findings)| {
        json!({
            "base": base,
            "policy": policy_word(report.fail_on),
            "findings": findings.iter().map(|f| f.to_json(Some(report.fail_on))).collect::<Vec<_>>(),
        })
    });
    let value = json!({
        "package": report.package,
        "artifact": report.artifact_name,
        "integrity": {
            "status": report.integrity,
            "findings": report.stale.iter().map(|f| f.to_json(None)).collect::<Vec<_>>(),
        },
        "contributors": report.contributors.iter().map(Contributor::to_json).collect::<Vec<_>>(),
        "drift": drift,
        "unseen": report.unseen,
        "failed": report.failed(),
    });
    canonical_json(&value) + "\n"
}

fn findings_table(
    findings: &[Finding],
    fail_on: Option<FailOn>,
    style: &Style,
    md: bool,
) -> String {
    let rows: Vec<Vec<String>> = findings
        .iter()
        .map(|f| {
            let verdict = match fail_on {
                Some(fail_on) if f.class.fails(fail_on) => "FAIL",
                Some(_) => "ok",
                None => "-",
            };
            vec![
                verdict.to_owned(),
                f.class.word().to_owned(),
                f.subject.clone(),
                f.change.clone(),
            ]
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let header = ["VERDICT", "CLASS", "SUBJECT", "CHANGE"];
    if md {
        format!("\n{}\n", style::markdown(&header, &rows))
    } else {
        style::table(&header, &rows, style, &[0, 1])
            .lines()
            .map(|line| format!("  {line}\n"))
            .collect()
    }
}

fn text(report: &Checked<'_>, style: &Style, md: bool) -> String {
    let heading = |title: &str| {
        if md {
            format!("\n### {title}\n\n")
        } else {
            format!("{title}: ")
        }
    };
    let mut out = if md {
        format!("## agent-surface check: {}\n", report.package)
    } else {
        format!("agent-surface check: {}\n", report.package)
    };
    out.push_str(&heading("integrity"));
    out.push_str(&match report.integrity {
        "ok" => format!(
            "{} — {} matches the build\n",
            style.word("ok"),
            report.artifact_name
        ),
        "missing" => format!(
            "{} — no {}; run `cargo agent-surface snapshot` and commit it\n",
            style.word("missing"),
            report.artifact_name
        ),
        _ => format!(
            "{} — {} differs from the build; run `cargo agent-surface snapshot` and commit it \
             (committed → build):\n",
            style.word("stale"),
            report.artifact_name
        ),
    });
    if !report.stale.is_empty() {
        out.push_str(&findings_table(&report.stale, None, style, md));
    }
    out.push_str(&heading("contributors"));
    if report.contributors.is_empty() {
        out.push_str("none (only the package's own crates declare capabilities)\n");
    } else {
        out.push('\n');
    }
    let mut missing = Vec::new();
    for contributor in &report.contributors {
        out.push_str(&format!(
            "  {} {} {}\n",
            style.word(contributor.status),
            contributor.name,
            contributor.digest
        ));
        if contributor.fails() {
            missing.push(contributor.entry());
        }
    }
    if !missing.is_empty() {
        let fence = if md { "```toml\n" } else { "" };
        out.push_str(&format!(
            "  approve each contributing dependency after review; in Cargo.toml:\n{fence}\
             [package.metadata.agent-surface]\napproved-contributors = [\n"
        ));
        for entry in &missing {
            out.push_str(&format!("    {entry},\n"));
        }
        out.push_str(if md { "]\n```\n" } else { "]\n" });
    }
    if let Some((base, findings)) = &report.drift {
        let count = |class: &str| findings.iter().filter(|f| f.class.word() == class).count();
        out.push_str(&heading("drift"));
        out.push_str(&format!(
            "since {base}: {} widening, {} narrowing, {} neutral (failing: --policy {})\n",
            count("widening"),
            count("narrowing"),
            count("neutral"),
            policy_word(report.fail_on)
        ));
        out.push_str(&findings_table(findings, Some(report.fail_on), style, md));
    }
    if !report.unseen.is_empty() {
        out.push_str(&heading("not seen by this build"));
        out.push_str(&format!("{} item(s)\n", report.unseen.len()));
        for line in &report.unseen {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let verdict = if report.failed() { "failed" } else { "ok" };
    out.push_str(&heading("result"));
    out.push_str(&format!("{}\n", style.word(verdict)));
    out
}

/// Escapes a GitHub workflow-command message.
fn escape(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn annotations(report: &Checked<'_>) -> String {
    let file = report.annotation_file;
    let mut out = String::new();
    let mut line = |level: &str, title: &str, message: String| {
        out.push_str(&format!(
            "::{level} file={file},title={title}::{}\n",
            escape(&message)
        ));
    };
    match report.integrity {
        "ok" => {}
        state => line(
            "error",
            "agent-surface integrity",
            format!("{file} is {state}; run `cargo agent-surface snapshot` and commit it"),
        ),
    }
    for contributor in report.contributors.iter().filter(|c| c.fails()) {
        line(
            "error",
            "agent-surface contributor",
            format!(
                "{} dependency {} contributes capabilities; after review add to \
                 [package.metadata.agent-surface] approved-contributors: {}",
                contributor.status,
                contributor.name,
                contributor.entry()
            ),
        );
    }
    if let Some((_, findings)) = &report.drift {
        for finding in findings {
            let level = if finding.class.fails(report.fail_on) {
                "error"
            } else if finding.class.word() == "widening" {
                "warning"
            } else {
                "notice"
            };
            line(
                level,
                &format!("agent-surface {}", finding.class.word()),
                format!("{}: {}", finding.subject, finding.change),
            );
        }
    }
    for unseen in &report.unseen {
        line("warning", "agent-surface not seen", unseen.clone());
    }
    out
}

/// The report in the chosen format.
pub(crate) fn render(report: &Checked<'_>, format: Format, style: &Style) -> String {
    match format {
        Format::Json => json(report),
        Format::Md => text(report, &Style::detect(true), true),
        Format::Github => annotations(report) + &text(report, &Style::detect(true), false),
        Format::Human => text(report, style, false),
    }
}

/// Whether two artifacts are the same content.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    canonical_json(a) == canonical_json(b)
}
