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
//! off when the log is next opened; a damaged line in the middle is
//! counted ([`AuditRead::damaged`]), never returned as a record.
//!
//! # Bounded
//!
//! A segment is closed at [`segment_bytes`](AuditLogBuilder::segment_bytes)
//! and the oldest segments are deleted while the log would exceed
//! [`max_bytes`](AuditLogBuilder::max_bytes): the log keeps the newest
//! records, and [`AuditRead::first_seq`] says where what is kept begins.
//!
//! # When the disk fails
//!
//! A sink never fails the pipeline (the specification's rule): when a write
//! fails (the disk is full, a quota is reached, the directory went away),
//! the event is counted as lost, the failure is logged with `tracing`, and
//! [`AuditLog::health`] reports it until a write succeeds again; the first
//! record written then is a gap record saying how many events were lost
//! ([`AuditRecord::Gap`]), so nothing is lost silently. A host for which an
//! unrecorded call must not run guards those capabilities with the
//! [`audit_required`](crate::policy::audit_required) policy, which refuses
//! them (`CAPABILITY_NOT_AVAILABLE`, retry after a delay) while the log
//! cannot write.

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
        let max_bytes = self.max_bytes.max(self.segment_bytes.saturating_mul(2));
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
        };
        Ok(AuditLog {
            shared: Arc::new(Shared {
                dir: self.dir,
                segment_bytes: self.segment_bytes,
                max_bytes,
                max_record_bytes: self.max_record_bytes,
                durability: self.durability,
                writer: Mutex::new(writer),
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
}

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
            Err(AuditLogFailure { lost: self.lost() })
        } else {
            Ok(())
        }
    }

    /// Events lost since the log was opened (writes that failed).
    pub fn lost(&self) -> u64 {
        self.shared.lost_total.load(Ordering::Acquire)
    }

    /// The records `query` selects, oldest first, from every segment kept.
    ///
    /// # Errors
    /// A segment cannot be read.
    pub fn read(&self, query: &AuditQuery) -> io::Result<AuditRead> {
        read::read_dir(&self.shared.dir, query)
    }

    /// Writes one record line; `Err` when the write failed (the segment is
    /// cut back to its last whole line).
    fn append(&self, writer: &mut Writer, record: &Value) -> io::Result<()> {
        let line = checked_line(record);
        let len = u64::try_from(line.len()).unwrap_or(u64::MAX);
        if writer.segment_len > 0
            && writer.segment_len.saturating_add(len) > self.shared.segment_bytes
        {
            self.rotate(writer)?;
        }
        while writer.total.saturating_add(len) > self.shared.max_bytes {
            if !self.delete_oldest(writer)? {
                break;
            }
        }
        if let Err(error) = writer.file.write_all(line.as_bytes()) {
            // A partial line would merge with the next: cut it off.
            let _ = writer.file.set_len(writer.segment_len);
            return Err(error);
        }
        if self.shared.durability == Durability::Disk {
            writer.file.sync_data()?;
        }
        writer.segment_len = writer.segment_len.saturating_add(len);
        writer.total = writer.total.saturating_add(len);
        Ok(())
    }

    /// Closes the current segment (flushed to the disk) and opens the next.
    fn rotate(&self, writer: &mut Writer) -> io::Result<()> {
        writer.file.sync_data()?;
        let index = writer.index.saturating_add(1);
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(segment_path(&self.shared.dir, index))?;
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
    /// there is none.
    fn delete_oldest(&self, writer: &mut Writer) -> io::Result<bool> {
        let segments = read::segments(&self.shared.dir)?;
        let Some((index, path, len)) = segments.into_iter().next() else {
            return Ok(false);
        };
        if index >= writer.index {
            return Ok(false);
        }
        fs::remove_file(path)?;
        writer.total = writer.total.saturating_sub(len);
        Ok(true)
    }

    /// The record of `event` as written: whole, or cut to its identity
    /// when longer than the bound.
    fn record_of(&self, seq: u64, event: &AuditEvent) -> Value {
        let whole = json!({ "seq": seq, "atMs": event.at_ms, "event": event });
        let Ok(text) = serde_json::to_string(&whole) else {
            return cut(seq, event, 0);
        };
        if text.len() + CHECK_LEN <= self.shared.max_record_bytes {
            return whole;
        }
        cut(seq, event, text.len())
    }
}

/// The check, a space, and the newline around a record.
const CHECK_LEN: usize = 16 + 1 + 1;

/// `event` without its payload and detail, saying how long the whole
/// record was.
fn cut(seq: u64, event: &AuditEvent, whole_len: usize) -> Value {
    let mut kept = event.clone();
    kept.payload = None;
    kept.detail = Some(Map::from_iter([(
        "truncated".to_owned(),
        json!({ "recordBytes": whole_len }),
    )]));
    json!({ "seq": seq, "atMs": event.at_ms, "event": kept })
}

/// `<check> <record>\n`.
fn checked_line(record: &Value) -> String {
    let text = record.to_string();
    let check = Fnv1a64::hash(text.as_bytes());
    format!("{check:016x} {text}\n")
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

/// Cuts the segment after its last whole, checked line.
fn recover(file: &mut File) -> io::Result<Recovered> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    let mut good = 0usize;
    let mut last_seq = None;
    let mut start = 0usize;
    while let Some(offset) = bytes.get(start..).and_then(memchr_newline) {
        let end = start + offset;
        let line = bytes.get(start..end).unwrap_or_default();
        // A damaged line in the middle stays (the reader counts it); only
        // the tail after the last good line is cut.
        if let Some(seq) = read::checked_record(line).and_then(read::seq_of) {
            last_seq = Some(seq);
            good = end + 1;
        }
        start = end + 1;
    }
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let keep = u64::try_from(good).unwrap_or(u64::MAX);
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

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|byte| *byte == b'\n')
}

impl AuditSink for AuditLog {
    fn record(&self, event: &AuditEvent) {
        let shared = &self.shared;
        let mut writer = shared.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if writer.lost > 0 {
            let gap = json!({
                "seq": writer.next_seq,
                "atMs": event.at_ms,
                "gap": { "lost": writer.lost },
            });
            if self.append(&mut writer, &gap).is_ok() {
                writer.next_seq += 1;
                writer.lost = 0;
            }
        }
        let record = if writer.lost == 0 {
            Some(self.record_of(writer.next_seq, event))
        } else {
            None
        };
        let written = match record {
            Some(record) => self.append(&mut writer, &record),
            None => Err(io::Error::other("the gap record could not be written")),
        };
        match written {
            Ok(()) => {
                writer.next_seq += 1;
                shared.failing.store(false, Ordering::Release);
            }
            Err(error) => {
                writer.lost += 1;
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
