//! The durable audit log: every event the registry audits appended to files
//! on disk, in order, one checked line per event, bounded on disk, and read
//! back as typed records ([`AuditLog::read`]).
//!
//! # On disk
//!
//! A directory of segments, `audit-0000000001.log`, `audit-0000000002.log`,
//! …, each a sequence of lines `<check> <record>\n`: the record is one JSON
//! object (`{"seq":…,"atMs":…,"event":{…}}`) and the check is the FNV-1a 64
//! of its bytes in 16 hex digits. JSON escapes every control character, so
//! text an agent sent (a newline, a forged `{"seq":…}`) stays inside its
//! string: it can neither end a record nor start one. A record longer than
//! [`max_record_bytes`](AuditLogBuilder::max_record_bytes) keeps its
//! identity, timing and status and says how long its payload and detail
//! were instead of carrying them.
//!
//! # What survives
//!
//! [`AuditSink::record`] returns after the line was handed to the operating
//! system in one `write`: with [`Durability::Process`] (the default) an
//! event recorded survives the process being killed (`kill -9`, a panic, an
//! abort), not a power loss; with [`Durability::Disk`] each line is also
//! flushed to the disk (`fdatasync`) before `record` returns, at the cost
//! of a disk flush per event. A line torn by a crash or a full disk is cut
//! off when the log is next opened; a whole line that fails its check is
//! kept and counted by readers ([`AuditRead::damaged`]), never returned as
//! a record. A record nested deeper than a reader can parse is cut like an
//! oversized one.
//!
//! # Bounded
//!
//! A segment is closed at [`segment_bytes`](AuditLogBuilder::segment_bytes)
//! and the oldest segments are deleted while the log would exceed
//! [`max_bytes`](AuditLogBuilder::max_bytes): the log keeps the newest
//! records, and [`AuditRead::first_seq`] says where what is kept begins.
//!
//! # One writer
//!
//! Opening a log takes a lock on [`LOCK_FILE`] in its directory for as
//! long as the log is open: a second `AuditLog` on the same directory (in
//! this process or another) is refused, since two writers would interleave
//! their sequences and delete each other's segments. Other processes read
//! with [`read_dir`](super::read_dir), which takes no lock.
//!
//! # When the disk fails
//!
//! A sink never fails the pipeline (the specification's rule): when a write
//! fails (the disk is full, a quota is reached, the directory cannot be
//! recreated), the event is counted as lost, the failure is logged with `tracing`, and
//! [`AuditLog::health`] reports it until a write succeeds again; the first
//! record written then is a gap record saying how many events were lost
//! ([`AuditRecord::Gap`]), so nothing is lost silently; `health` itself
//! tries that write again, so the log recovers as soon as the disk does. A
//! segment removed or replaced under the log (its directory deleted) is
//! noticed before the next write, which goes to a new segment. A failed
//! flush with [`Durability::Disk`] leaves the record written (not lost)
//! and `health` failing until a flush succeeds. A host for which an
//! unrecorded call must not run guards those capabilities with the
//! [`audit_required`](crate::policy::audit_required) policy, which refuses
//! them (`CAPABILITY_NOT_AVAILABLE`, retry after a delay) while the log
//! cannot write — from the first write that failed: the call whose own
//! record was the first to fail has already run.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};

use super::read::{self, AuditQuery, AuditRead};
use super::{AuditEvent, AuditSink};
use crate::canonical::Fnv1a64;

/// How far a recorded event survives a failure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Handed to the operating system before `record` returns: survives the
    /// process being killed, not a power loss.
    #[default]
    Process,
    /// Also flushed to the disk before `record` returns: survives a power
    /// loss; each event costs a disk flush.
    Disk,
}

/// The default size at which a segment is closed: 8 MiB.
pub const DEFAULT_SEGMENT_BYTES: u64 = 8 << 20;
/// The default bound of the whole log on disk: 256 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;
/// The lock file that keeps a second writer out of a log's directory.
pub const LOCK_FILE: &str = "audit.lock";

/// How deep a record's payload and detail may nest and still be read back
/// (the reader's JSON parser stops at 128 levels, three of which are the
/// record, the event and the payload).
const MAX_NESTING: usize = 100;

/// The longest id, name or status a cut record keeps, in bytes.
const MAX_CUT_FIELD: usize = 256;

/// The default bound of one record: 64 KiB.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 << 10;

/// Options of an [`AuditLog`]; [`open`](AuditLogBuilder::open) opens it.
#[derive(Clone, Debug)]
#[must_use]
pub struct AuditLogBuilder {
    dir: PathBuf,
    segment_bytes: u64,
    max_bytes: u64,
    max_record_bytes: usize,
    durability: Durability,
}

impl AuditLogBuilder {
    /// Closes a segment once it holds `bytes` (at least 4 KiB).
    pub fn segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes.max(4 << 10);
        self
    }

    /// Keeps the whole log under `bytes` on disk, deleting the oldest
    /// segments (at least two segments' worth).
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The longest record (at least 1 KiB): a longer one keeps its
    /// identity, timing and status, and the sizes of its payload and detail.
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.max_record_bytes = bytes.max(1 << 10);
        self
    }

    /// How far a recorded event survives a failure.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Opens the log in its directory (created if missing), cutting off a
    /// line a crash left torn, and continuing its sequence.
    ///
    /// # Errors
    /// The directory cannot be created or read, or the last segment cannot
    /// be opened for appending.
    pub fn open(self) -> io::Result<AuditLog> {
        fs::create_dir_all(&self.dir)?;
        // One writer per directory: a second would interleave sequence
        // numbers and delete the segments the first writes to.
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_FILE))?;
        if lock.try_lock().is_err() {
            return Err(taken(&self.dir));
        }
        let max_bytes = self.max_bytes.max(self.segment_bytes.saturating_mul(2));
        // A record fits in a segment with room to spare.
        let max_record_bytes = self
            .max_record_bytes
            .min(usize::try_from(self.segment_bytes / 2).unwrap_or(usize::MAX));
        let segments = read::segments(&self.dir)?;
        let total: u64 = segments.iter().map(|(_, _, len)| len).sum();
        let (index, path) = match segments.last() {
            Some((index, path, _)) => (*index, path.clone()),
            None => (1, segment_path(&self.dir, 1)),
        };
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)?;
        let recovered = recover(&mut file)?;
        let total = total.saturating_sub(recovered.cut);
        // The sequence continues from the last record kept, in this
        // segment or (when it is empty) the ones before it.
        let mut last_seq = recovered.last_seq;
        if last_seq.is_none() {
            for (_, earlier, _) in segments.iter().rev().skip(1) {
                if let Ok(mut earlier) = File::open(earlier)
                    && let Ok(found) = last_record_seq(&mut earlier)
                    && found.is_some()
                {
                    last_seq = found;
                    break;
                }
            }
        }
        let writer = Writer {
            file,
            index,
            segment_len: recovered.len,
            total,
            next_seq: last_seq.map_or(1, |seq| seq.saturating_add(1)),
            lost: 0,
            last_at_ms: 0,
            lock,
        };
        Ok(AuditLog {
            shared: Arc::new(Shared {
                dir: self.dir,
                segment_bytes: self.segment_bytes,
                max_bytes,
                max_record_bytes,
                durability: self.durability,
                writer: Mutex::new(writer),
                last_retry: Mutex::new(None),
                failing: AtomicBool::new(false),
                lost_total: AtomicU64::new(0),
            }),
        })
    }
}

/// A durable audit log: an [`AuditSink`] writing every event to disk.
/// Cheap to clone; every clone writes to the same log.
///
/// ```no_run
/// use std::sync::Arc;
/// use agent_surface::audit::AuditLog;
/// use agent_surface::prelude::*;
///
/// # fn main() -> std::io::Result<()> {
/// let log = AuditLog::builder("var/audit").open()?;
/// let registry = Registry::builder().audit_sink(Arc::new(log.clone())).build();
/// // … later, or in another process:
/// let approvals = log.read(&agent_surface::audit::AuditQuery::new().kind(
///     agent_surface::audit::AuditKind::ConfirmationApproved,
/// ))?;
/// # let _ = (registry, approvals);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct AuditLog {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    dir: PathBuf,
    segment_bytes: u64,
    max_bytes: u64,
    max_record_bytes: usize,
    durability: Durability,
    writer: Mutex<Writer>,
    /// Whether the last write failed.
    failing: AtomicBool,
    /// Events lost since the log was opened.
    lost_total: AtomicU64,
    /// When `health` last retried a failing log (at most every
    /// [`RETRY_EVERY`]: a caller asking in a loop does not drive disk I/O).
    last_retry: Mutex<Option<std::time::Instant>>,
}

/// How often `health` retries a failing log.
const RETRY_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(Debug)]
struct Writer {
    file: File,
    /// The current segment's index.
    index: u64,
    /// The current segment's length: where the next line begins.
    segment_len: u64,
    /// Bytes of every segment.
    total: u64,
    next_seq: u64,
    /// Events lost since the last successful write (a gap record says so).
    lost: u64,
    /// When the last event was recorded (a gap written on a retry says so).
    last_at_ms: u64,
    /// The lock file, held locked while the log is open.
    lock: File,
}

/// Why the log cannot record now.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditLogFailure {
    /// Events lost since the log was opened.
    pub lost: u64,
}

impl std::fmt::Display for AuditLogFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the audit log cannot write ({} events lost since it was opened)",
            self.lost
        )
    }
}

impl std::error::Error for AuditLogFailure {}

impl AuditLog {
    /// A log in `dir`, with the defaults: segments of 8 MiB, 256 MiB in all,
    /// records up to 64 KiB, [`Durability::Process`].
    pub fn builder(dir: impl Into<PathBuf>) -> AuditLogBuilder {
        AuditLogBuilder {
            dir: dir.into(),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            max_bytes: DEFAULT_MAX_BYTES,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            durability: Durability::Process,
        }
    }

    /// The directory of its segments.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// `Ok` while the last write succeeded; the failure while writes fail.
    ///
    /// # Errors
    /// The last write failed: events are being lost (and counted).
    pub fn health(&self) -> Result<(), AuditLogFailure> {
        if self.shared.failing.load(Ordering::Acquire) {
            // What it owes (the gap record, a flush) may go through now.
            self.retry();
        }
        if self.shared.failing.load(Ordering::Acquire) {
            Err(AuditLogFailure { lost: self.lost() })
        } else {
            Ok(())
        }
    }

    /// [`health`](Self::health) for a policy asked on every guarded call:
    /// a failing log is retried at most every [`RETRY_EVERY`], so an agent
    /// calling in a loop does not drive disk I/O.
    pub(crate) fn health_checked_sparingly(&self) -> bool {
        if self.shared.failing.load(Ordering::Acquire) && self.retry_due() {
            self.retry();
        }
        !self.shared.failing.load(Ordering::Acquire)
    }

    /// Whether a retry is due (at most one every [`RETRY_EVERY`]).
    fn retry_due(&self) -> bool {
        let mut last = self
            .shared
            .last_retry
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = std::time::Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < RETRY_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }

    /// Events lost since the log was opened (writes that failed).
    pub fn lost(&self) -> u64 {
        self.shared.lost_total.load(Ordering::Acquire)
    }

    /// The records `query` selects, oldest first, from every segment kept
    /// (as [`read_dir`](super::read_dir) reads them).
    ///
    /// # Errors
    /// A segment cannot be read.
    pub fn read(&self, query: &AuditQuery) -> io::Result<AuditRead> {
        read::read_dir(&self.shared.dir, query)
    }

    /// Writes one record line (`text`, checked here). The bookkeeping
    /// moves as soon as the line is written; a failed flush to the disk
    /// after that is [`Failure::NotDurable`], not a lost event.
    fn append(&self, writer: &mut Writer, text: &str) -> Result<(), Failure> {
        let line = checked_line(text);
        let len = u64::try_from(line.len()).unwrap_or(u64::MAX);
        self.still_there(writer).map_err(Failure::NotWritten)?;
        if writer.segment_len > 0
            && writer.segment_len.saturating_add(len) > self.shared.segment_bytes
        {
            self.rotate(writer).map_err(Failure::NotWritten)?;
        }
        while writer.total.saturating_add(len) > self.shared.max_bytes {
            if !self.delete_oldest(writer) {
                break;
            }
        }
        if let Err(error) = writer.file.write_all(line.as_bytes()) {
            // A partial line would merge with the next: cut it off.
            let _ = writer.file.set_len(writer.segment_len);
            return Err(Failure::NotWritten(error));
        }
        writer.segment_len = writer.segment_len.saturating_add(len);
        writer.total = writer.total.saturating_add(len);
        if self.shared.durability == Durability::Disk {
            writer.file.sync_data().map_err(Failure::NotDurable)?;
        }
        Ok(())
    }

    /// Reopens the current segment when its file was removed or replaced
    /// (the directory deleted, a segment moved away): writes to a file
    /// nobody can read would be lost without a sign.
    fn still_there(&self, writer: &mut Writer) -> io::Result<()> {
        let dir = &self.shared.dir;
        // The lock first: a directory deleted and recreated, or a lock
        // file removed, would let a second writer in.
        let lock_path = dir.join(LOCK_FILE);
        if !same_file(&writer.lock, &lock_path) {
            fs::create_dir_all(dir)?;
            let lock = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)?;
            if lock.try_lock().is_err() {
                return Err(taken(dir));
            }
            writer.lock = lock;
        }
        let path = segment_path(dir, writer.index);
        if same_file(&writer.file, &path) {
            return Ok(());
        }
        tracing::warn!(
            path = %path.display(),
            "the audit log's segment was removed or replaced; writing to a new one"
        );
        let file = new_segment(&path)?;
        writer.segment_len = 0;
        writer.total = read::segments(dir)?.iter().map(|(_, _, len)| len).sum();
        writer.file = file;
        Ok(())
    }

    /// Closes the current segment (flushed to the disk) and opens the next.
    fn rotate(&self, writer: &mut Writer) -> io::Result<()> {
        writer.file.sync_data()?;
        // The next free number: a name already taken (a link or a file
        // someone left there) is passed over, never written through.
        let mut index = writer.index;
        let mut opened = None;
        for _ in 0..16 {
            index = index
                .checked_add(1)
                .ok_or_else(|| io::Error::other("no segment number is left after the last one"))?;
            match new_segment(&segment_path(&self.shared.dir, index)) {
                Ok(file) => {
                    opened = Some(file);
                    break;
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(error),
            }
        }
        let file = opened.ok_or_else(|| io::Error::other("every next segment name is taken"))?;
        if self.shared.durability == Durability::Disk
            && let Ok(dir) = File::open(&self.shared.dir)
        {
            let _ = dir.sync_all();
        }
        writer.file = file;
        writer.index = index;
        writer.segment_len = 0;
        Ok(())
    }

    /// Deletes the oldest segment other than the current one; `false` when
    /// none could be (the bound is then exceeded, and said, rather than the
    /// event lost).
    fn delete_oldest(&self, writer: &mut Writer) -> bool {
        let Ok(segments) = read::segments(&self.shared.dir) else {
            return false;
        };
        for (index, path, len) in segments {
            if index >= writer.index {
                break;
            }
            match fs::remove_file(&path) {
                Ok(()) => {
                    writer.total = writer.total.saturating_sub(len);
                    return true;
                }
                Err(error) => tracing::warn!(
                    path = %path.display(),
                    %error,
                    "an old audit segment cannot be deleted; the log may exceed its bound"
                ),
            }
        }
        false
    }

    /// The text of `event`'s record: whole, or cut to its identity when
    /// longer than the bound or nested deeper than a reader can parse.
    fn record_text(&self, seq: u64, event: &AuditEvent) -> String {
        // Nesting first: a record too deep to read back is not serialized
        // whole at all.
        let deep = [&event.payload, &event.detail]
            .into_iter()
            .flatten()
            .any(|map| !nesting_within(map, MAX_NESTING));
        let whole_len = if deep {
            None
        } else {
            let text = line_text(seq, event.at_ms, Some(event), None);
            if text.len() + CHECK_LEN <= self.shared.max_record_bytes {
                return text;
            }
            Some(text.len())
        };
        let cut_text = line_text(seq, event.at_ms, Some(&cut(event, whole_len)), None);
        if cut_text.len() + CHECK_LEN <= self.shared.max_record_bytes {
            return cut_text;
        }
        // Ids of escaped text can still be too long: what happened, when,
        // and how it ended stay.
        let mut bare = cut(event, whole_len);
        bare.capability_id = None;
        bare.registration_id = None;
        bare.invocation_id = None;
        bare.consumer_id = None;
        line_text(seq, event.at_ms, Some(&bare), None)
    }

    /// While failing: tries again to write what it owes (the gap record,
    /// or the flush), so the log recovers without waiting for an event.
    fn retry(&self) {
        let shared = &self.shared;
        let mut writer = shared.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if !shared.failing.load(Ordering::Acquire) {
            return;
        }
        let now = writer.last_at_ms;
        let recovered = if writer.lost > 0 {
            self.write_gap(&mut writer, now)
        } else {
            writer.file.sync_data().is_ok()
        };
        if recovered {
            shared.failing.store(false, Ordering::Release);
        }
    }

    /// Writes the gap record of the events lost; whether it was written.
    fn write_gap(&self, writer: &mut Writer, at_ms: u64) -> bool {
        let text = line_text(writer.next_seq, at_ms, None, Some(writer.lost));
        match self.append(writer, &text) {
            Ok(()) | Err(Failure::NotDurable(_)) => {
                writer.next_seq = writer.next_seq.saturating_add(1);
                writer.lost = 0;
                true
            }
            Err(Failure::NotWritten(_)) => false,
        }
    }
}

/// How an append failed.
enum Failure {
    /// Nothing was written: the event is lost (and counted).
    NotWritten(io::Error),
    /// Written, but the flush to the disk failed.
    NotDurable(io::Error),
}

/// The error of a log another writer holds.
fn taken(dir: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!(
            "another writer (in this process or another) has the audit log in {} open; one \
             writer per directory (readers use agent_surface::audit::read_dir)",
            dir.display()
        ),
    )
}

/// Whether `file` is still the file at `path`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Whether `file` is still the file at `path` (here: whether the path
/// still names a file).
#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.is_file()
}

/// The check, a space, and the newline around a record.
const CHECK_LEN: usize = 16 + 1 + 1;

/// One record's JSON: an event's, or a gap's.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    seq: u64,
    at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<&'a AuditEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<Gap>,
}

#[derive(serde::Serialize)]
struct Gap {
    lost: u64,
}

fn line_text(seq: u64, at_ms: u64, event: Option<&AuditEvent>, lost: Option<u64>) -> String {
    let line = Line {
        seq,
        at_ms,
        event,
        gap: lost.map(|lost| Gap { lost }),
    };
    serde_json::to_string(&line).unwrap_or_else(|_| {
        // An event's fields are strings, numbers and JSON values: this is
        // not reached; the record still says when and which.
        format!("{{\"seq\":{seq},\"atMs\":{at_ms},\"gap\":{{\"lost\":0}}}}")
    })
}

/// Whether `map` nests at most `max` levels (walked without recursion).
fn nesting_within(map: &Map<String, Value>, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = map.values().map(|v| (v, 1)).collect();
    while let Some((value, depth)) = stack.pop() {
        if depth > max {
            return false;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(fields) => stack.extend(fields.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    true
}

/// At most [`MAX_CUT_FIELD`] bytes of `text`, on a character boundary.
fn capped(text: &Arc<str>) -> Arc<str> {
    if text.len() <= MAX_CUT_FIELD {
        return Arc::clone(text);
    }
    let mut end = MAX_CUT_FIELD;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Arc::from(text.get(..end).unwrap_or_default())
}

/// `event` without its payload and detail, its ids capped, saying why:
/// how long the whole record was, or (`None`) that it nested too deep.
fn cut(event: &AuditEvent, whole_len: Option<usize>) -> AuditEvent {
    let mut kept = event.clone();
    kept.payload = None;
    for field in [
        &mut kept.capability_id,
        &mut kept.registration_id,
        &mut kept.invocation_id,
        &mut kept.consumer_id,
    ] {
        *field = field.as_ref().map(capped);
    }
    kept.detail = Some(Map::from_iter([(
        "truncated".to_owned(),
        match whole_len {
            Some(bytes) => json!({ "recordBytes": bytes }),
            None => json!({ "nestedDeeperThan": MAX_NESTING }),
        },
    )]));
    kept
}

/// `<check> <record>\n`.
fn checked_line(text: &str) -> String {
    let check = Fnv1a64::hash(text.as_bytes());
    format!("{check:016x} {text}\n")
}

/// A new segment file: never an existing file or a link someone left at
/// its name (whose target the log would otherwise write to).
fn new_segment(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create_new(true)
        .read(true)
        .append(true)
        .open(path)
}

fn segment_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("audit-{index:010}.log"))
}

/// What recovery kept of the last segment.
struct Recovered {
    /// Its length after the cut.
    len: u64,
    /// Bytes cut off.
    cut: u64,
    last_seq: Option<u64>,
}

/// Cuts a final line a crash or a full disk left without its newline; a
/// whole line that fails its check stays (readers count it damaged).
fn recover(file: &mut File) -> io::Result<Recovered> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    let whole = bytes
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |last| last + 1);
    let last_seq = bytes
        .get(..whole)
        .unwrap_or_default()
        .split(|byte| *byte == b'\n')
        .filter_map(read::checked_record)
        .filter_map(read::seq_of)
        .next_back();
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let keep = u64::try_from(whole).unwrap_or(u64::MAX);
    if keep < len {
        file.set_len(keep)?;
    }
    Ok(Recovered {
        len: keep,
        cut: len - keep,
        last_seq,
    })
}

/// The sequence number of the last good record of a segment.
fn last_record_seq(file: &mut File) -> io::Result<Option<u64>> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes
        .split(|byte| *byte == b'\n')
        .filter_map(read::checked_record)
        .filter_map(read::seq_of)
        .next_back())
}

impl AuditSink for AuditLog {
    fn record(&self, event: &AuditEvent) {
        let shared = &self.shared;
        let mut writer = shared.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer.last_at_ms = event.at_ms;
        if writer.lost > 0 && !self.write_gap(&mut writer, event.at_ms) {
            // Still failing: this event is lost too.
            writer.lost = writer.lost.saturating_add(1);
            shared.lost_total.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let text = self.record_text(writer.next_seq, event);
        match self.append(&mut writer, &text) {
            Ok(()) => {
                writer.next_seq = writer.next_seq.saturating_add(1);
                shared.failing.store(false, Ordering::Release);
            }
            Err(Failure::NotDurable(error)) => {
                writer.next_seq = writer.next_seq.saturating_add(1);
                if !shared.failing.swap(true, Ordering::AcqRel) {
                    tracing::error!(
                        dir = %shared.dir.display(),
                        %error,
                        "the audit log cannot flush to the disk; records may not survive a power loss"
                    );
                }
            }
            Err(Failure::NotWritten(error)) => {
                writer.lost = writer.lost.saturating_add(1);
                shared.lost_total.fetch_add(1, Ordering::AcqRel);
                if !shared.failing.swap(true, Ordering::AcqRel) {
                    tracing::error!(
                        dir = %shared.dir.display(),
                        %error,
                        "the audit log cannot write; events are counted as lost until it can"
                    );
                }
            }
        }
    }
}
