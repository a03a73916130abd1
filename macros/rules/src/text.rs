//! Text helpers shared by the macros and the runtime.

/// Builds an agent-facing description from doc-comment lines.
///
/// Lines are trimmed; consecutive lines join with a space (a paragraph), and a
/// blank line starts a new paragraph (`"\n\n"`). Leading and trailing blank
/// lines are dropped.
///
/// ```
/// use agent_surface_rules::description_from_doc_lines;
///
/// let doc = [" Replace, extend or reduce", " the row selection.", "", " Ids must be visible."];
/// assert_eq!(
///     description_from_doc_lines(doc),
///     "Replace, extend or reduce the row selection.\n\nIds must be visible."
/// );
/// ```
pub fn description_from_doc_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let mut pending_break = false;
    for line in lines.into_iter().flat_map(|text| text.split('\n')) {
        let line = line.trim();
        if line.is_empty() {
            pending_break = !out.is_empty();
            continue;
        }
        if pending_break {
            out.push_str("\n\n");
            pending_break = false;
        } else if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(line);
    }
    out
}

/// Parses a duration written as `<integer><unit>` with unit `ms`, `s` or `m`
/// (for example `"250ms"`, `"5s"`, `"2m"`) into milliseconds.
///
/// ```
/// use agent_surface_rules::parse_duration_ms;
///
/// assert_eq!(parse_duration_ms("5s"), Ok(5_000));
/// assert!(parse_duration_ms("5 seconds").is_err());
/// ```
pub fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        _ => {
            return Err(format!(
                "`{text}` is not a duration; write an integer followed by `ms`, `s` or `m`, such as \"5s\""
            ));
        }
    };
    let value: u64 = number.parse().map_err(|_| {
        format!("`{text}` is not a duration; write an integer followed by `ms`, `s` or `m`, such as \"5s\"")
    })?;
    match value.checked_mul(scale) {
        Some(0) => Err("a timeout of zero would fail every call; use at least \"1ms\"".to_owned()),
        Some(ms) if ms <= 24 * 3_600_000 => Ok(ms),
        _ => Err(format!(
            "`{text}` is longer than a day; timeouts are at most \"1440m\""
        )),
    }
}
