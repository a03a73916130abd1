//! Output styling: colour only ever repeats a word that is printed anyway,
//! and only on a terminal without `NO_COLOR`; tables are padded plain text.

use std::io::IsTerminal;

/// Whether to colour.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    color: bool,
}

impl Style {
    /// Colour on a terminal stdout, unless `NO_COLOR` is set (to anything
    /// non-empty) or `plain` asks otherwise.
    pub(crate) fn detect(plain: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !plain && !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// A word in the tone its meaning has (`high`/`widening`/`FAIL` red,
    /// `medium`/`neutral` yellow, `low`/`narrowing`/`ok` green); unchanged
    /// without colour.
    pub(crate) fn word(&self, word: &str) -> String {
        if !self.color {
            return word.to_owned();
        }
        let code = match word.trim() {
            "high" | "widening" | "FAIL" | "stale" | "missing" | "unapproved" | "changed"
            | "failed" => "31",
            "medium" | "neutral" => "33",
            "low" | "narrowing" | "ok" | "matches" | "approved" => "32",
            _ => return word.to_owned(),
        };
        format!("\x1b[{code}m{word}\x1b[0m")
    }
}

/// Pads cells into aligned columns; the last column is not padded. Styling
/// is applied after padding so escape codes never shift columns.
pub(crate) fn table(
    header: &[&str],
    rows: &[Vec<String>],
    style: &Style,
    styled: &[usize],
) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let render = |cells: Vec<String>, colour: bool, out: &mut String| {
        let last = cells.len().saturating_sub(1);
        let mut line = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            let padded = if i == last {
                cell.clone()
            } else {
                format!("{cell:<width$}  ")
            };
            if colour && styled.contains(&i) {
                line.push_str(&style.word(&padded));
            } else {
                line.push_str(&padded);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    render(
        header.iter().map(|h| (*h).to_owned()).collect(),
        false,
        &mut out,
    );
    for row in rows {
        render(row.clone(), true, &mut out);
    }
    out
}

/// A Markdown table; `|` in cells is escaped.
pub(crate) fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |text: &str| text.replace('|', "\\|");
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!(
        "|{}\n",
        header.iter().map(|_| "---|").collect::<String>()
    ));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}
