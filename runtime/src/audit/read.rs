//! Reading the durable audit log back: typed records ([`AuditRecord`]),
//! selected by a query ([`AuditQuery`]: time, consumer, capability, kind,
//! outcome) from every segment kept, streaming line by line.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::AuditKind;
use crate::canonical::Fnv1a64;
use crate::error::ErrorCode;

/// A line longer than this is not a record of this log (counted damaged).
const MAX_LINE_BYTES: usize = 16 << 20;

/// The default number of records a query returns (the newest).
pub const DEFAULT_QUERY_LIMIT: usize = 10_000;

/// The default bound of what a query's records hold in memory, in bytes
/// (the newest kept).
pub const DEFAULT_QUERY_BYTES: usize = 64 << 20;

/// What a parsed record holds in memory per byte of its line, at most:
/// small JSON values (`[0,0,…]`) cost about this much once parsed.
const PARSED_PER_LINE_BYTE: usize = 16;

/// One audit event as read back from the log.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RecordedEvent {
    /// Its position in the log: every record has the next number.
    #[serde(skip)]
    pub seq: u64,
    /// When, in milliseconds since the Unix epoch.
    #[serde(skip)]
    pub at_ms: u64,
    /// What happened.
    #[serde(rename = "type")]
    pub kind: AuditKind,
    /// The capability.
    pub capability_id: Option<String>,
    /// The registration.
    pub registration_id: Option<String>,
    /// The invocation.
    pub invocation_id: Option<String>,
    /// The consumer (the agent's identity).
    pub consumer_id: Option<String>,
    /// The outcome of a settled call: `ok` or `error`.
    pub status: Option<String>,
    /// The error code of a failed call.
    pub code: Option<ErrorCode>,
    /// Total time.
    pub duration_ms: Option<u64>,
    /// Time waiting for a concurrency slot.
    pub queue_wait_ms: Option<u64>,
    /// Time inside the handler.
    pub execution_ms: Option<u64>,
    /// Input and output, at audit level `full`.
    pub payload: Option<Map<String, Value>>,
    /// Details of the event: for a confirmation, the channel and who
    /// answered; for a record cut to its bound, `truncated`.
    pub detail: Option<Map<String, Value>>,
}

/// One record of the log.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AuditRecord {
    /// An event the registry audited.
    Event(Box<RecordedEvent>),
    /// Events lost while the log could not write (a full disk, a quota):
    /// written at the first write that succeeded again.
    Gap {
        /// Its position in the log.
        seq: u64,
        /// When writing resumed.
        at_ms: u64,
        /// How many events were lost.
        lost: u64,
    },
}

impl AuditRecord {
    /// Its position in the log.
    pub fn seq(&self) -> u64 {
        match self {
            AuditRecord::Event(event) => event.seq,
            AuditRecord::Gap { seq, .. } => *seq,
        }
    }

    /// When it was recorded, in milliseconds since the Unix epoch.
    pub fn at_ms(&self) -> u64 {
        match self {
            AuditRecord::Event(event) => event.at_ms,
            AuditRecord::Gap { at_ms, .. } => *at_ms,
        }
    }
}

/// What a read found.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AuditRead {
    /// The records selected, oldest first (the newest `limit` of them).
    pub records: Vec<AuditRecord>,
    /// Lines whose check failed or that are not records of this log.
    pub damaged: u64,
    /// The first sequence number the log still keeps (older segments were
    /// deleted to bound it on disk); `None` when it is empty.
    pub first_seq: Option<u64>,
}

/// Which records to read. Every condition set must hold.
#[derive(Clone, Debug)]
#[must_use]
pub struct AuditQuery {
    since_ms: Option<u64>,
    until_ms: Option<u64>,
    consumer: Option<String>,
    capability: Option<String>,
    kinds: Vec<AuditKind>,
    status: Option<String>,
    limit: usize,
    max_bytes: usize,
}

impl Default for AuditQuery {
    fn default() -> Self {
        AuditQuery::new()
    }
}

impl AuditQuery {
    /// Every record (the newest [`DEFAULT_QUERY_LIMIT`]).
    pub fn new() -> AuditQuery {
        AuditQuery {
            since_ms: None,
            until_ms: None,
            consumer: None,
            capability: None,
            kinds: Vec::new(),
            status: None,
            limit: DEFAULT_QUERY_LIMIT,
            max_bytes: DEFAULT_QUERY_BYTES,
        }
    }

    /// Recorded at or after `ms` (milliseconds since the Unix epoch).
    pub fn since_ms(mut self, ms: u64) -> Self {
        self.since_ms = Some(ms);
        self
    }

    /// Recorded before `ms`.
    pub fn until_ms(mut self, ms: u64) -> Self {
        self.until_ms = Some(ms);
        self
    }

    /// Of this consumer.
    pub fn consumer(mut self, consumer_id: impl Into<String>) -> Self {
        self.consumer = Some(consumer_id.into());
        self
    }

    /// Of this capability.
    pub fn capability(mut self, capability_id: impl Into<String>) -> Self {
        self.capability = Some(capability_id.into());
        self
    }

    /// Of this kind (several calls: any of them).
    pub fn kind(mut self, kind: AuditKind) -> Self {
        self.kinds.push(kind);
        self
    }

    /// With this outcome (`status`: `ok` or `error`).
    pub fn status(mut self, status: impl Into<String>) -> Self {
        self.status = Some(status.into());
        self
    }

    /// At most the newest `limit` records.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// At most the newest records that hold `bytes` in memory once parsed
    /// (counted as 16 bytes per byte of their lines; the default:
    /// [`DEFAULT_QUERY_BYTES`]).
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Whether gap records are selected: only by a query on time alone.
    fn selects_gaps(&self) -> bool {
        self.consumer.is_none()
            && self.capability.is_none()
            && self.kinds.is_empty()
            && self.status.is_none()
    }

    fn selects(&self, record: &AuditRecord) -> bool {
        let at = record.at_ms();
        if self.since_ms.is_some_and(|since| at < since)
            || self.until_ms.is_some_and(|until| at >= until)
        {
            return false;
        }
        match record {
            AuditRecord::Gap { .. } => self.selects_gaps(),
            AuditRecord::Event(event) => {
                self.consumer
                    .as_deref()
                    .is_none_or(|c| event.consumer_id.as_deref() == Some(c))
                    && self
                        .capability
                        .as_deref()
                        .is_none_or(|c| event.capability_id.as_deref() == Some(c))
                    && (self.kinds.is_empty() || self.kinds.contains(&event.kind))
                    && self
                        .status
                        .as_deref()
                        .is_none_or(|s| event.status.as_deref() == Some(s))
            }
        }
    }
}

/// The segments of a log directory, oldest first: (index, path, length).
pub(super) fn segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf, u64)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(index) = name
            .to_str()
            .and_then(|name| name.strip_prefix("audit-"))
            .and_then(|rest| rest.strip_suffix(".log"))
            .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok())
        else {
            continue;
        };
        // A directory or a link named like a segment is not one.
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if !entry.file_type().is_ok_and(|kind| kind.is_file()) {
            continue;
        }
        found.push((index, entry.path(), metadata.len()));
    }
    found.sort_by_key(|(index, _, _)| *index);
    Ok(found)
}

/// The record a line carries, when its check holds.
pub(super) fn checked_record(line: &[u8]) -> Option<&[u8]> {
    let (check, rest) = (line.get(..16)?, line.get(16..)?);
    let text = rest.strip_prefix(b" ")?;
    let check = std::str::from_utf8(check).ok()?;
    let check = u64::from_str_radix(check, 16).ok()?;
    (Fnv1a64::hash(text) == check).then_some(text)
}

/// The sequence number of a checked record.
pub(super) fn seq_of(record: &[u8]) -> Option<u64> {
    #[derive(Deserialize)]
    struct Seq {
        seq: u64,
    }
    serde_json::from_slice::<Seq>(record).ok().map(|s| s.seq)
}

/// The record a checked line carries.
fn parse(record: &[u8]) -> Option<AuditRecord> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Gap {
        lost: u64,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Line {
        seq: u64,
        at_ms: u64,
        event: Option<RecordedEvent>,
        gap: Option<Gap>,
    }
    let line: Line = serde_json::from_slice(record).ok()?;
    match (line.event, line.gap) {
        (Some(mut event), None) => {
            event.seq = line.seq;
            event.at_ms = line.at_ms;
            Some(AuditRecord::Event(Box::new(event)))
        }
        (None, Some(gap)) => Some(AuditRecord::Gap {
            seq: line.seq,
            at_ms: line.at_ms,
            lost: gap.lost,
        }),
        _ => None,
    }
}

/// Reads the log in `dir` without opening it for writing (another process
/// may be appending: a line not yet whole is not read).
///
/// # Errors
/// The directory or a segment cannot be read.
pub fn read_dir(dir: &Path, query: &AuditQuery) -> io::Result<AuditRead> {
    let mut read = AuditRead::default();
    let mut kept: VecDeque<(AuditRecord, usize)> = VecDeque::new();
    let mut kept_bytes = 0usize;
    let mut line = Vec::new();
    for (_, path, _) in segments(dir)? {
        let file = match File::open(&path) {
            Ok(file) => file,
            // Deleted by rotation since it was listed.
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        let mut reader = BufReader::new(file);
        loop {
            line.clear();
            let n = (&mut reader)
                .take(u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX))
                .read_until(b'\n', &mut line)?;
            if n == 0 {
                break;
            }
            let Some(whole) = line.strip_suffix(b"\n") else {
                if n >= MAX_LINE_BYTES {
                    // Too long to be a record: skipped to its end without
                    // holding it.
                    read.damaged += 1;
                    skip_line(&mut reader)?;
                    continue;
                }
                // The last line, not yet whole: being written.
                break;
            };
            let Some(record) = checked_record(whole).and_then(parse) else {
                read.damaged += 1;
                continue;
            };
            if read.first_seq.is_none() {
                read.first_seq = Some(record.seq());
            }
            if query.limit > 0 && query.selects(&record) {
                let weight = n.saturating_mul(PARSED_PER_LINE_BYTE);
                kept_bytes = kept_bytes.saturating_add(weight);
                kept.push_back((record, weight));
                while kept.len() > query.limit || kept_bytes > query.max_bytes {
                    let Some((_, bytes)) = kept.pop_front() else {
                        break;
                    };
                    kept_bytes = kept_bytes.saturating_sub(bytes);
                }
            }
        }
    }
    read.records = kept.into_iter().map(|(record, _)| record).collect();
    Ok(read)
}

/// Skips to the end of the current line, a buffer at a time.
fn skip_line(reader: &mut BufReader<File>) -> io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let all = buffer.len();
                reader.consume(all);
            }
        }
    }
}
