//! `cargo agent-surface audit`: the durable audit record an application
//! keeps (`agent_surface::audit::AuditLog`), printed and filtered — who
//! asked, who approved through which channel, what ran — without the
//! application running. Reads only: a log another process is appending to
//! is read up to its last whole record.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use agent_surface::audit::{AuditKind, AuditQuery, AuditRecord, RecordedEvent, read_dir};
use agent_surface::clock::rfc3339;
use serde_json::{Value, json};

use crate::Fatal;

/// What `audit` reads and prints.
#[derive(Clone, Debug)]
pub(crate) struct AuditOptions {
    /// The log's directory.
    pub(crate) dir: PathBuf,
    /// Only records at or after this many milliseconds since the epoch.
    pub(crate) since_ms: Option<u64>,
    pub(crate) consumer: Option<String>,
    pub(crate) capability: Option<String>,
    pub(crate) kinds: Vec<AuditKind>,
    pub(crate) status: Option<String>,
    pub(crate) limit: usize,
    /// One JSON object per line instead of words.
    pub(crate) json: bool,
}

/// The kinds by their names in the record (`confirmation-approved`).
pub(crate) fn kind(name: &str) -> Option<AuditKind> {
    serde_json::from_value(Value::from(name)).ok()
}

/// `--since`: `30m`, `24h`, `7d`, or milliseconds since the epoch.
pub(crate) fn since_ms(text: &str, now_ms: u64) -> Option<u64> {
    let unit = |suffix: char, ms: u64| {
        text.strip_suffix(suffix)
            .and_then(|n| n.parse::<u64>().ok())
            .map(|n| now_ms.saturating_sub(n.saturating_mul(ms)))
    };
    unit('m', 60_000)
        .or_else(|| unit('h', 3_600_000))
        .or_else(|| unit('d', 86_400_000))
        .or_else(|| text.parse::<u64>().ok())
}

/// Now, in milliseconds since the epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn text<'a>(event: &'a RecordedEvent, key: &str) -> Option<&'a str> {
    event.detail.as_ref()?.get(key).and_then(Value::as_str)
}

/// Agent text printed on a terminal: control, bidi, zero-width and filler
/// characters shown as escapes, never obeyed.
fn shown(text: &str) -> String {
    agent_surface::adapter::text::escape(text).into_owned()
}

/// JSON for a terminal or a pipe: every character outside printable ASCII
/// written as `\uXXXX` (still the same JSON), so no agent text reaches the
/// terminal raw.
fn ascii_json(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (' '..='~').contains(&c) {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// One record in words.
fn line(record: &AuditRecord) -> String {
    match record {
        AuditRecord::Gap { seq, at_ms, lost } => format!(
            "{}  #{seq}  {lost} events lost while the log could not write",
            rfc3339(*at_ms)
        ),
        AuditRecord::Event(event) => {
            let mut parts = vec![
                rfc3339(event.at_ms),
                format!("#{}", event.seq),
                serde_json::to_value(event.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            ];
            if let Some(capability) = &event.capability_id {
                parts.push(shown(capability));
            }
            if let Some(consumer) = &event.consumer_id {
                parts.push(format!("by {}", shown(consumer)));
            }
            match (&event.status, event.code) {
                (_, Some(code)) => parts.push(format!("error {}", code.as_str())),
                (Some(status), None) => parts.push(shown(status)),
                (None, None) => {}
            }
            if let Some(approver) = text(event, "approver") {
                let channel = text(event, "channel").unwrap_or("?");
                parts.push(format!(
                    "answered by {} through {}",
                    shown(approver),
                    shown(channel)
                ));
            }
            if let Some(proof) = text(event, "personVerified") {
                parts.push(format!("proven with {}", shown(proof)));
            }
            if let Some(reason) = text(event, "reason") {
                parts.push(format!("({})", shown(reason)));
            }
            if let Some(title) = text(event, "title") {
                parts.push(format!("\"{}\"", shown(title)));
            }
            parts.join("  ")
        }
        _ => "a record of a kind this version does not know".to_owned(),
    }
}

fn as_json(record: &AuditRecord) -> Value {
    match record {
        AuditRecord::Gap { seq, at_ms, lost } => {
            json!({"seq": seq, "at": rfc3339(*at_ms), "gap": {"lost": lost}})
        }
        AuditRecord::Event(event) => json!({
            "seq": event.seq,
            "at": rfc3339(event.at_ms),
            "type": event.kind,
            "capabilityId": event.capability_id,
            "registrationId": event.registration_id,
            "invocationId": event.invocation_id,
            "consumerId": event.consumer_id,
            "status": event.status,
            "code": event.code,
            "durationMs": event.duration_ms,
            "detail": event.detail,
        }),
        _ => json!({ "seq": record.seq(), "at": rfc3339(record.at_ms()) }),
    }
}

/// Prints the records `options` selects; exit status 0.
pub(crate) fn run(options: &AuditOptions) -> Result<u8, Fatal> {
    if !options.dir.is_dir() {
        return Err(Fatal(format!(
            "{} is not an audit log directory",
            options.dir.display()
        )));
    }
    let mut query = AuditQuery::new().limit(options.limit);
    if let Some(since) = options.since_ms {
        query = query.since_ms(since);
    }
    if let Some(consumer) = &options.consumer {
        query = query.consumer(consumer.clone());
    }
    if let Some(capability) = &options.capability {
        query = query.capability(capability.clone());
    }
    for kind in &options.kinds {
        query = query.kind(*kind);
    }
    if let Some(status) = &options.status {
        query = query.status(status.clone());
    }
    let read = read_dir(&options.dir, &query).map_err(|err| {
        Fatal(format!(
            "cannot read the audit log in {}: {err}",
            options.dir.display()
        ))
    })?;
    let mut out = String::new();
    for record in &read.records {
        if options.json {
            out.push_str(&ascii_json(&as_json(record)));
        } else {
            out.push_str(&line(record));
        }
        out.push('\n');
    }
    if !options.json {
        let kept = read
            .first_seq
            .map(|first| format!("; the log keeps records from #{first}"))
            .unwrap_or_default();
        out.push_str(&format!("{} records{kept}\n", read.records.len()));
        if read.damaged > 0 {
            out.push_str(&format!(
                "{} damaged lines were skipped (their check failed)\n",
                read.damaged
            ));
        }
    }
    crate::print(&out);
    Ok(0)
}
