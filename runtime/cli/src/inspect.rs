//! `cargo agent-surface inspect`: the inventory as a table — CAPABILITY,
//! KIND, EFFECT, REACH, CONFIRM, POLICIES — under a headline with counts,
//! how much is gated and the committed snapshot's integrity; `--base` adds
//! the drift since a git ref.

use agent_surface::canonical::canonical_json;
use serde_json::{Value, json};

use crate::args::{Format, Verbosity};
use crate::artifact;
use crate::finding::Finding;
use crate::style::{self, Style};
use crate::surface::{self, Row};

/// What `inspect` reports.
pub(crate) struct Inspection<'a> {
    /// The package name.
    pub(crate) package: &'a str,
    /// The freshly built artifact.
    pub(crate) fresh: &'a Value,
    /// The artifact file as shown (relative to the package).
    pub(crate) artifact_name: &'a str,
    /// `matches`, `stale` or `missing`.
    pub(crate) integrity: &'static str,
    /// `--base` and the drift from its artifact to the fresh one.
    pub(crate) drift: Option<(&'a str, Vec<Finding>)>,
}

struct Counts {
    declarations: usize,
    observations: usize,
    actions: usize,
    procedures: usize,
    gated: usize,
    reach: [usize; 3],
}

fn counts(fresh: &Value, rows: &[Row<'_>]) -> Counts {
    let count = |kind: &str| rows.iter().filter(|r| r.kind == kind).count();
    let callable: Vec<&Row<'_>> = rows.iter().filter(|r| r.kind != "observation").collect();
    let reach = |level: &str| {
        rows.iter()
            .filter(|r| surface::reach(&r.effect) == level)
            .count()
    };
    Counts {
        declarations: artifact::keyed(fresh).len(),
        observations: count("observation"),
        actions: count("action"),
        procedures: count("procedure"),
        gated: callable.iter().filter(|r| r.gated()).count(),
        reach: [reach("high"), reach("medium"), reach("low")],
    }
}

fn plural(n: usize, word: &str) -> String {
    match (n, word.strip_suffix('y')) {
        (1, _) => format!("{n} {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}

fn headline(report: &Inspection<'_>, c: &Counts, style: &Style) -> String {
    let manifest = surface::text(report.fresh, "manifestHash");
    let short: String = manifest.chars().take(12).collect();
    format!(
        "{}: {}, {} ({}, {}, {}); {} of {} actions and procedures gated (confirmation or \
         policy); reach: {} {}, {} {}, {} {}; snapshot {} {} (manifest {short})\n",
        report.package,
        plural(c.declarations, "declaration"),
        plural(c.observations + c.actions + c.procedures, "capability"),
        plural(c.observations, "observation"),
        plural(c.actions, "action"),
        plural(c.procedures, "procedure"),
        c.gated,
        c.actions + c.procedures,
        c.reach[0],
        style.word("high"),
        c.reach[1],
        style.word("medium"),
        c.reach[2],
        style.word("low"),
        report.artifact_name,
        style.word(report.integrity),
    )
}

fn cells(row: &Row<'_>) -> Vec<String> {
    let policies = if row.policies.is_empty() {
        "-".to_owned()
    } else {
        row.policies.join(", ")
    };
    vec![
        row.id.clone(),
        row.kind.to_owned(),
        row.effect.clone(),
        surface::reach(&row.effect).to_owned(),
        row.confirmation.clone(),
        policies,
    ]
}

const HEADER: [&str; 6] = [
    "CAPABILITY",
    "KIND",
    "EFFECT",
    "REACH",
    "CONFIRM",
    "POLICIES",
];

fn detail(report: &Inspection<'_>, rows: &[Row<'_>], style: &Style, md: bool) -> String {
    let mut out = String::new();
    for (key, declaration) in artifact::keyed(report.fresh) {
        let description = surface::text(declaration, "description");
        if md {
            out.push_str(&format!("\n### {key}\n\n{description}\n\n"));
        } else {
            out.push_str(&format!("\n{key} — {description}\n"));
        }
        let own: Vec<&Row<'_>> = rows.iter().filter(|r| r.declaration == key).collect();
        let table_rows: Vec<Vec<String>> = own.iter().map(|r| cells(r)).collect();
        if md {
            let mut with_text = Vec::new();
            for (row, mut line) in own.iter().zip(table_rows) {
                line.push(row.description.clone());
                with_text.push(line);
            }
            let mut header = HEADER.to_vec();
            header.push("DESCRIPTION");
            out.push_str(&style::markdown(&header, &with_text));
            continue;
        }
        let table = style::table(&HEADER, &table_rows, style, &[3]);
        let mut lines = table.lines();
        if let Some(header) = lines.next() {
            out.push_str(&format!("  {header}\n"));
        }
        for (line, row) in lines.zip(&own) {
            out.push_str(&format!("  {line}\n      {}\n", row.description));
        }
    }
    out
}

fn drift_text(base: &str, findings: &[Finding], style: &Style, md: bool) -> String {
    let count = |class: &str| findings.iter().filter(|f| f.class.word() == class).count();
    let mut out = format!(
        "\nDrift since {base}: {} widening, {} narrowing, {} neutral\n",
        count("widening"),
        count("narrowing"),
        count("neutral")
    );
    let rows: Vec<Vec<String>> = findings
        .iter()
        .map(|f| {
            vec![
                f.class.word().to_owned(),
                f.subject.clone(),
                f.change.clone(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        let header = ["CLASS", "SUBJECT", "CHANGE"];
        if md {
            out.push('\n');
            out.push_str(&style::markdown(&header, &rows));
        } else {
            out.push_str(&style::table(&header, &rows, style, &[0]));
        }
    }
    out
}

fn json(report: &Inspection<'_>, rows: &[Row<'_>], c: &Counts) -> String {
    let capabilities: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "capability": r.id,
                "declaration": r.declaration,
                "kind": r.kind,
                "effect": r.effect,
                "reach": surface::reach(&r.effect),
                "confirmation": r.confirmation,
                "policies": r.policies,
                "description": r.description,
            })
        })
        .collect();
    let drift = report.drift.as_ref().map(|(base, findings)| {
        json!({
            "base": base,
            "findings": findings.iter().map(|f| f.to_json(None)).collect::<Vec<_>>(),
        })
    });
    let value = json!({
        "package": report.package,
        "manifestHash": surface::text(report.fresh, "manifestHash"),
        "counts": {
            "declarations": c.declarations,
            "observations": c.observations,
            "actions": c.actions,
            "procedures": c.procedures,
            "gated": c.gated,
            "reach": { "high": c.reach[0], "medium": c.reach[1], "low": c.reach[2] },
        },
        "snapshot": { "artifact": report.artifact_name, "integrity": report.integrity },
        "capabilities": capabilities,
        "drift": drift,
    });
    canonical_json(&value) + "\n"
}

/// The report in the chosen format and verbosity.
pub(crate) fn render(
    report: &Inspection<'_>,
    format: Format,
    verbosity: Verbosity,
    style: &Style,
) -> String {
    let rows = surface::rows(report.fresh);
    let c = counts(report.fresh, &rows);
    if format == Format::Json {
        return json(report, &rows, &c);
    }
    let md = format == Format::Md;
    let style = if md { Style::detect(true) } else { *style };
    let mut out = String::new();
    if format == Format::Github {
        out.push_str(&format!(
            "::notice title=agent-surface::{}",
            headline(report, &c, &Style::detect(true))
        ));
    }
    out.push_str(&headline(report, &c, &style));
    match verbosity {
        Verbosity::Min => {}
        Verbosity::Normal => {
            let table_rows: Vec<Vec<String>> = rows.iter().map(cells).collect();
            out.push('\n');
            if md {
                out.push_str(&style::markdown(&HEADER, &table_rows));
            } else {
                out.push_str(&style::table(&HEADER, &table_rows, &style, &[3]));
            }
        }
        Verbosity::Detail => out.push_str(&detail(report, &rows, &style, md)),
    }
    if let Some((base, findings)) = &report.drift {
        out.push_str(&drift_text(base, findings, &style, md));
    }
    out
}
