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

/// A cell with its control characters escaped (`\n`, `\u{1b}`): text from
/// the surface (a policy's name, a description) stays inside its cell and
/// can neither start a line of its own (a forged row, a workflow command)
/// nor emit terminal escapes.
fn cell_text(cell: &str) -> String {
    if !cell.chars().any(char::is_control) {
        return cell.to_owned();
    }
    cell.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().collect()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Pads cells into aligned columns; the last column is not padded. Styling
/// is applied after padding so escape codes never shift columns. Control
/// characters in cells are escaped.
pub(crate) fn table(
    header: &[&str],
    rows: &[Vec<String>],
    style: &Style,
    styled: &[usize],
) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|c| cell_text(c)).collect())
        .collect();
    let rows = rows.as_slice();
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

/// A Markdown table; `|` and control characters in cells are escaped.
pub(crate) fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |text: &str| cell_text(text).replace('|', "\\|");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_with_a_newline_or_escape_cannot_forge_a_line_of_its_own() {
        let forged = "odd\n::error file=x::forged\nresult: ok\u{1b}[0m".to_owned();
        let rows = vec![vec!["view:a.b.c".to_owned(), forged]];
        let plain = table(
            &["CAPABILITY", "POLICIES"],
            &rows,
            &Style::detect(true),
            &[],
        );
        assert_eq!(plain.lines().count(), 2, "{plain}");
        assert!(plain.contains("odd\\n::error file=x::forged\\nresult: ok\\u{1b}[0m"));
        let md = markdown(&["CAPABILITY", "POLICIES"], &rows);
        assert_eq!(md.lines().count(), 3, "{md}");
        assert!(!md.contains('\u{1b}'));
    }
}
