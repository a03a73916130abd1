//! Text helpers shared by the macros and the runtime.

/// Builds an agent-facing description from doc-comment lines.
///
/// Each item is the text of one doc attribute: a `///` line, or a whole
/// `/** … */` block (whose leading ` * ` on each line is dropped). Lines are
/// trimmed; consecutive lines join with a space (a paragraph), a blank line
/// starts a new paragraph (`"\n\n"`), and a markdown list item (`- `, `* `,
/// `+ `, `1. `) starts a line of its own. Leading and trailing blank lines
/// are dropped.
///
/// ```
/// use agent_surface_rules::description_from_doc_lines;
///
/// let doc = [" Replace, extend or reduce", " the row selection.", "", " Ids must be visible."];
/// assert_eq!(
///     description_from_doc_lines(doc),
///     "Replace, extend or reduce the row selection.\n\nIds must be visible."
/// );
/// let block = ["*\n * Select rows.\n *\n * - by id\n * - by range\n "];
/// assert_eq!(description_from_doc_lines(block), "Select rows.\n\n- by id\n- by range");
/// ```
pub fn description_from_doc_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    let mut pending_break = false;
    for line in lines.into_iter().flat_map(doc_lines) {
        let line = line.trim();
        if line.is_empty() {
            pending_break = !out.is_empty();
            continue;
        }
        if pending_break {
            out.push_str("\n\n");
            pending_break = false;
        } else if !out.is_empty() {
            out.push(if is_list_item(line) { '\n' } else { ' ' });
        }
        out.push_str(line);
    }
    out
}

/// The lines of one doc attribute; a `/** … */` block loses the leading
/// `*` (and the space after it) of each line.
fn doc_lines(text: &str) -> impl Iterator<Item = &str> {
    let block = text.contains('\n')
        && text
            .split('\n')
            .skip(1)
            .filter(|line| !line.trim().is_empty())
            .all(|line| line.trim_start().starts_with('*'));
    text.split('\n').map(move |line| {
        let trimmed = line.trim_start();
        match trimmed.strip_prefix('*') {
            Some(rest) if block => rest.strip_prefix(' ').unwrap_or(rest),
            _ if block && trimmed.is_empty() => "",
            _ => line,
        }
    })
}

/// Whether a trimmed line starts a markdown list item.
fn is_list_item(line: &str) -> bool {
    if ["- ", "* ", "+ "]
        .iter()
        .any(|bullet| line.starts_with(bullet))
    {
        return true;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0
        && line
            .get(digits..)
            .is_some_and(|rest| rest.starts_with(". ") || rest.starts_with(") "))
}

/// Checks an agent-facing description against its limit: not blank, and at
/// most `limit` characters (Unicode scalar values) once trimmed. The message
/// names `what`, the count and the limit.
///
/// ```
/// use agent_surface_rules::check_description;
///
/// assert!(check_description("the description", "Selects rows.", 300).is_ok());
/// let long = "x".repeat(301);
/// assert_eq!(
///     check_description("the description", &long, 300).unwrap_err(),
///     "the description is 301 characters long; the limit is 300. Shorten it"
/// );
/// ```
pub fn check_description(what: &str, text: &str, limit: usize) -> Result<(), String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(format!(
            "{what} is empty; agents choose capabilities by their descriptions, so say what it does"
        ));
    }
    let len = crate::char_len(text);
    if len > limit {
        return Err(format!(
            "{what} is {len} characters long; the limit is {limit}. Shorten it"
        ));
    }
    Ok(())
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
    if number.is_empty() {
        return Err(format!(
            "`{text}` is not a duration; write an integer followed by `ms`, `s` or `m`, such as \"5s\""
        ));
    }
    // Digits only by now: a number too large for 64 bits is longer than a
    // day, like any other over the bound.
    let value: u64 = number.parse().unwrap_or(u64::MAX);
    match value.checked_mul(scale) {
        Some(0) => Err("a timeout of zero would fail every call; use at least \"1ms\"".to_owned()),
        Some(ms) if ms <= 24 * 3_600_000 => Ok(ms),
        _ => Err(format!(
            "`{text}` is longer than a day; timeouts are at most \"1440m\""
        )),
    }
}
