//! The durable audit log against real processes and a real file system: a
//! writer killed with `SIGKILL` mid-stream keeps every event it
//! acknowledged; rotation keeps the log under its bound; agent text cannot
//! split or forge a record; a file-size quota (a child process under
//! `ulimit -f`) makes writes fail, the loss is counted and later recorded
//! as a gap, and `audit_required` refuses the capabilities it guards until
//! the log writes again; a registry's calls and a person's approval are
//! read back as typed events.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stdout
)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use agent_surface::audit::{
    AuditEvent, AuditKind, AuditLog, AuditQuery, AuditRecord, AuditSink as _, Durability,
};
use agent_surface::error::ErrorCode;
use agent_surface::policy::audit_required;
use agent_surface::prelude::*;
use serde_json::{Map, Value, json};

/// A fresh directory under the target directory, emptied.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("audit-log")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn event(n: u64) -> AuditEvent {
    let mut event = AuditEvent::new(AuditKind::InvocationSettled, 1_700_000_000_000 + n);
    event.invocation_id = Some(Arc::from(format!("inv-{n}")));
    event.capability_id = Some(Arc::from("view:test.panel.poke"));
    event.consumer_id = Some(Arc::from("agent-1"));
    event.status = Some("ok");
    event
}

fn events(read: &agent_surface::audit::AuditRead) -> Vec<&agent_surface::audit::RecordedEvent> {
    read.records
        .iter()
        .filter_map(|record| match record {
            AuditRecord::Event(event) => Some(&**event),
            _ => None,
        })
        .collect()
}

fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().metadata().unwrap().len())
        .sum()
}

/// Runs this test binary's `test` alone in a child process, with `env`.
fn child(test: &str, env: (&str, &Path)) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(env.0, env.1);
    command
}

const WRITER_DIR: &str = "AUDIT_LOG_WRITER_DIR";

/// The child of `acknowledged_events_survive_a_killed_writer`: records
/// events as fast as it can, printing each number once `record` returned.
#[test]
fn writer_child() {
    let Some(dir) = std::env::var_os(WRITER_DIR) else {
        return;
    };
    let log = AuditLog::builder(PathBuf::from(dir))
        .segment_bytes(64 << 10)
        .open()
        .unwrap();
    let mut out = std::io::stdout().lock();
    for n in 1.. {
        log.record(&event(n));
        writeln!(out, "ack {n}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn acknowledged_events_survive_a_killed_writer() {
    let dir = scratch("killed");
    let mut writer = child("writer_child", (WRITER_DIR, &dir))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(writer.stdout.take().unwrap()).lines();
    let mut acknowledged = 0u64;
    // Killed mid-stream, while it writes: well past a segment boundary.
    while acknowledged < 3_000 {
        let line = lines.next().unwrap().unwrap();
        if let Some(n) = line.strip_prefix("ack ") {
            acknowledged = n.parse().unwrap();
        }
    }
    writer.kill().unwrap(); // SIGKILL
    writer.wait().unwrap();
    // Acknowledgments printed after the kill was sent count too.
    for line in lines.map_while(Result::ok) {
        if let Some(n) = line.strip_prefix("ack ") {
            acknowledged = n.parse().unwrap();
        }
    }

    let log = AuditLog::builder(&dir).open().unwrap();
    let read = log.read(&AuditQuery::new().limit(usize::MAX)).unwrap();
    assert_eq!(read.damaged, 0, "no torn record is read");
    let got = events(&read);
    assert!(
        got.len() as u64 >= acknowledged,
        "{} < {acknowledged}",
        got.len()
    );
    for (i, event) in got.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(event.seq, n, "in order, none missing");
        assert_eq!(
            event.invocation_id.as_deref(),
            Some(format!("inv-{n}").as_str())
        );
    }
    // The log goes on where it stopped.
    log.record(&event(999_999));
    let read = log.read(&AuditQuery::new().limit(1)).unwrap();
    assert_eq!(read.records[0].seq(), got.len() as u64 + 1);
}

#[test]
fn rotation_keeps_the_log_under_its_bound() {
    let dir = scratch("rotation");
    let log = AuditLog::builder(&dir)
        .segment_bytes(8 << 10)
        .max_bytes(32 << 10)
        .open()
        .unwrap();
    for n in 1..=2_000 {
        log.record(&event(n));
        assert!(disk_bytes(&dir) <= 32 << 10, "over the bound after {n}");
    }
    let read = log.read(&AuditQuery::new().limit(usize::MAX)).unwrap();
    let first = read.first_seq.unwrap();
    assert!(first > 1, "the oldest records made room");
    let got = events(&read);
    assert_eq!(got.last().unwrap().seq, 2_000);
    assert_eq!(
        got.len() as u64,
        2_000 - first + 1,
        "contiguous from the first kept"
    );
    assert!(log.health().is_ok());
}

#[test]
fn agent_text_cannot_split_or_forge_a_record() {
    let dir = scratch("forged");
    let log = AuditLog::builder(&dir).open().unwrap();
    let forged_line =
        "0000000000000000 {\"seq\":7,\"atMs\":1,\"event\":{\"type\":\"confirmation-approved\"}}";
    let mut event = event(1);
    event.consumer_id = Some(Arc::from(format!("agent\n{forged_line}\n").as_str()));
    event.detail = Some(Map::from_iter([(
        "summary".to_owned(),
        Value::from(format!("line one\r\nline two\u{2028}{forged_line}\u{0}")),
    )]));
    log.record(&event);
    log.record(&self::event(2));

    let text = std::fs::read_to_string(dir.join("audit-0000000001.log")).unwrap();
    assert_eq!(text.lines().count(), 2, "one line per event");
    let read = log.read(&AuditQuery::new()).unwrap();
    assert_eq!(read.damaged, 0);
    let got = events(&read);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].kind, AuditKind::InvocationSettled);
    assert_eq!(
        got[0].consumer_id.as_deref(),
        Some(format!("agent\n{forged_line}\n").as_str()),
        "the text is kept whole, inside its record"
    );
    assert!(
        read.records.iter().all(
            |r| !matches!(r, AuditRecord::Event(e) if e.kind == AuditKind::ConfirmationApproved)
        )
    );
}

#[test]
fn an_oversized_record_keeps_its_identity_and_says_how_long_it_was() {
    let dir = scratch("oversized");
    let log = AuditLog::builder(&dir).open().unwrap();
    let mut big = event(1);
    big.payload = Some(Map::from_iter([(
        "input".to_owned(),
        Value::from("x".repeat(10 << 20)),
    )]));
    log.record(&big);
    log.record(&event(2));
    assert!(disk_bytes(&dir) < 4 << 10, "the payload is not written");
    let read = log.read(&AuditQuery::new()).unwrap();
    let got = events(&read);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].invocation_id.as_deref(), Some("inv-1"));
    assert_eq!(got[0].payload, None);
    let truncated = &got[0].detail.as_ref().unwrap()["truncated"];
    assert!(truncated["recordBytes"].as_u64().unwrap() > 10 << 20);
}

/// A component whose action the test guards with `audit_required`.
struct Panel;

/// The input of `poke`.
#[agent_schema]
struct Poke {
    /// What to poke.
    #[schemars(length(max = 40))]
    target: String,
}

/// A test panel.
#[agent_component(type = "test.panel")]
impl Panel {
    /// Pokes something.
    #[action(effect = "local-state")]
    fn poke(&self, input: Poke) {
        let _ = input;
    }

    /// Removes something, once the person approves.
    #[action(effect = "local-state", confirmation = "required")]
    fn remove(&self, input: Poke) {
        let _ = input;
    }
}

const QUOTA_DIR: &str = "AUDIT_LOG_QUOTA_DIR";

/// The child of `a_file_size_quota_is_counted_refused_and_recorded_as_a_gap`:
/// runs under `ulimit -S -f 16` (16 KiB per file) with `SIGXFSZ` ignored.
#[tokio::test]
async fn quota_child() {
    let Some(dir) = std::env::var_os(QUOTA_DIR) else {
        return;
    };
    let log = AuditLog::builder(PathBuf::from(dir))
        .segment_bytes(1 << 20)
        .open()
        .unwrap();
    let registry = Registry::builder()
        .audit_sink(Arc::new(log.clone()))
        .policy(audit_required(&log))
        .build();
    let _panel = registry.mount(Arc::new(Panel)).unwrap();
    let poke = || Invocation::new("view:test.panel.poke").input(json!({"target": "lamp"}));
    assert!(
        registry
            .invoke(poke(), InvokeOptions::default())
            .await
            .is_ok()
    );

    // Writes until the quota stops them.
    let mut n = 0;
    while log.health().is_ok() {
        n += 1;
        assert!(n < 10_000, "the quota never stopped a write");
        log.record(&event(n));
    }
    let lost_at_failure = log.lost();
    assert!(lost_at_failure >= 1);
    // Nothing runs unrecorded.
    let refused = registry.invoke(poke(), InvokeOptions::default()).await;
    let error = refused.error().expect("refused while the log cannot write");
    assert_eq!(error.code(), ErrorCode::CapabilityNotAvailable);
    assert!(
        log.lost() > lost_at_failure,
        "the refusal's own events are counted too"
    );

    // Space again (the soft limit raised): asking for its health writes
    // the gap at once; no event is needed for it to recover.
    raise_file_size_limit();
    let lost = log.lost();
    assert!(log.health().is_ok(), "it recovers as soon as it can write");
    log.record(&event(1_000_000));
    assert!(
        registry
            .invoke(poke(), InvokeOptions::default())
            .await
            .is_ok()
    );
    let read = log.read(&AuditQuery::new().limit(usize::MAX)).unwrap();
    let gaps: Vec<u64> = read
        .records
        .iter()
        .filter_map(|record| match record {
            AuditRecord::Gap { lost, .. } => Some(*lost),
            _ => None,
        })
        .collect();
    assert_eq!(gaps, vec![lost], "one gap record, with every lost event");
    let seqs: Vec<u64> = read.records.iter().map(AuditRecord::seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "no hole in the sequence"
    );
    println!("quota child: ok");
}

/// Raises this process's soft file-size limit to its hard limit.
fn raise_file_size_limit() {
    // `prlimit` (util-linux) on this process: no unsafe `setrlimit` here.
    let pid = std::process::id().to_string();
    let status = Command::new("prlimit")
        .args(["--pid", &pid, "--fsize=unlimited:"])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit raises the soft limit");
}

#[test]
fn a_file_size_quota_is_counted_refused_and_recorded_as_a_gap() {
    let dir = scratch("quota");
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -S -f 16; exec \"$0\" \"$@\"")
        .arg(&exe)
        .args([
            "--exact",
            "quota_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(QUOTA_DIR, &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("quota child: ok"),
        "the child under a quota:\n{stdout}\n{stderr}"
    );
}

#[tokio::test]
async fn a_registrys_calls_and_a_persons_approval_are_read_back() {
    let dir = scratch("registry");
    let log = AuditLog::builder(&dir)
        .durability(Durability::Disk)
        .open()
        .unwrap();
    let registry = Registry::builder()
        .audit_sink(Arc::new(log.clone()))
        .build();
    let _panel = registry.mount(Arc::new(Panel)).unwrap();
    let consumer = Consumer::new(agent_surface::context::ConsumerKind::Other, "agent-7");
    let options = || InvokeOptions::consumer(consumer.clone());
    let remove = Invocation::new("view:test.panel.remove").input(json!({"target": "lamp"}));
    let asked = registry.invoke(remove.clone(), options()).await;
    assert_eq!(
        asked.error().unwrap().code(),
        ErrorCode::ConfirmationRequired
    );
    let confirmations = registry.confirmations();
    let pending = confirmations.pending();
    let approver = confirmations
        .approver(agent_surface::confirmation::HOST_CHANNEL, "dana")
        .unwrap();
    confirmations
        .resolve(&pending[0].shown(), true, &approver)
        .unwrap();
    let id = pending[0].confirmation_id.to_string();
    assert!(
        registry
            .invoke(remove.confirmation(id), options())
            .await
            .is_ok()
    );
    // A refusal's reason is recorded with it.
    let refused = registry
        .invoke(
            Invocation::new("view:test.panel.remove")
                .input(json!({"target": "lamp"}))
                .confirmation("cnf_not_issued"),
            options(),
        )
        .await;
    let reason = refused.error().unwrap().detail("reason").cloned();
    assert!(reason.is_some(), "{refused:?}");
    drop(log);

    // Read back as another process would (a reader takes no lock).
    let read = |query: &AuditQuery| agent_surface::audit::read_dir(&dir, query);
    let approvals = read(&AuditQuery::new().kind(AuditKind::ConfirmationApproved)).unwrap();
    let approval = events(&approvals)[0].clone();
    let detail = approval.detail.unwrap();
    assert_eq!(detail.get("approver"), Some(&json!("dana")), "{detail:?}");
    assert!(detail.contains_key("channel"), "{detail:?}");
    let settled = read(
        &AuditQuery::new()
            .kind(AuditKind::InvocationSettled)
            .capability("view:test.panel.remove")
            .consumer(consumer.key().to_string())
            .status("ok"),
    )
    .unwrap();
    assert_eq!(events(&settled).len(), 1);
    let refusals = read(
        &AuditQuery::new()
            .kind(AuditKind::InvocationSettled)
            .status("error"),
    )
    .unwrap();
    let last = events(&refusals).last().unwrap().detail.clone().unwrap();
    assert_eq!(last.get("reason"), reason.as_ref(), "{last:?}");
    let mounted = read(&AuditQuery::new().kind(AuditKind::Registration)).unwrap();
    assert_eq!(events(&mounted).len(), 1);
    drop((confirmations, _panel, registry));
}

#[test]
fn a_log_whose_directory_is_deleted_writes_to_a_new_segment() {
    let dir = scratch("deleted");
    let log = AuditLog::builder(&dir).open().unwrap();
    log.record(&event(1));
    std::fs::remove_dir_all(&dir).unwrap();
    for n in 2..=10 {
        log.record(&event(n));
    }
    assert!(log.health().is_ok());
    assert_eq!(log.lost(), 0);
    let read = log.read(&AuditQuery::new()).unwrap();
    let got = events(&read);
    assert_eq!(got.len(), 9, "every event after the deletion is on disk");
    assert_eq!(got[0].invocation_id.as_deref(), Some("inv-2"));
}

#[test]
fn a_second_writer_on_the_same_directory_is_refused() {
    let dir = scratch("two-writers");
    let first = AuditLog::builder(&dir).open().unwrap();
    let second = AuditLog::builder(&dir).open().unwrap_err();
    assert_eq!(second.kind(), std::io::ErrorKind::WouldBlock);
    assert!(second.to_string().contains("read_dir"), "{second}");
    first.record(&event(1));
    // Readers need no lock.
    let read = agent_surface::audit::read_dir(&dir, &AuditQuery::new()).unwrap();
    assert_eq!(read.records.len(), 1);
    drop(first);
    assert!(AuditLog::builder(&dir).open().is_ok(), "free once closed");
}

#[test]
fn a_record_nested_too_deep_or_with_huge_ids_is_cut_to_fit_and_still_read() {
    let dir = scratch("deep");
    let log = AuditLog::builder(&dir)
        .segment_bytes(8 << 10)
        .max_bytes(64 << 10)
        .max_record_bytes(2 << 10)
        .open()
        .unwrap();
    let mut deep = Value::from(1);
    for _ in 0..126 {
        deep = json!([deep]);
    }
    let mut nested = event(1);
    nested.payload = Some(Map::from_iter([("input".to_owned(), deep)]));
    log.record(&nested);
    let mut huge = event(2);
    huge.consumer_id = Some(Arc::from("c".repeat(1 << 20).as_str()));
    huge.capability_id = Some(Arc::from("x".repeat(1 << 20).as_str()));
    log.record(&huge);
    log.record(&event(3));
    let read = log.read(&AuditQuery::new()).unwrap();
    assert_eq!(read.damaged, 0);
    let got = events(&read);
    assert_eq!(got.len(), 3, "no record is hidden from the read-back");
    assert!(got[0].detail.as_ref().unwrap().contains_key("truncated"));
    assert!(got[1].consumer_id.as_ref().unwrap().len() <= 256);
    assert!(disk_bytes(&dir) < 16 << 10);
}

#[test]
fn a_stray_entry_named_like_a_segment_does_not_stop_the_log() {
    let dir = scratch("undeletable");
    std::fs::create_dir_all(dir.join("audit-0000000000.log")).unwrap();
    let log = AuditLog::builder(&dir)
        .segment_bytes(4 << 10)
        .max_bytes(8 << 10)
        .open()
        .unwrap();
    for n in 1..=200 {
        log.record(&event(n));
    }
    assert!(log.health().is_ok());
    assert_eq!(log.lost(), 0);
    let read = log.read(&AuditQuery::new()).unwrap();
    assert_eq!(events(&read).last().unwrap().seq, 200);
}

#[test]
fn opening_cuts_only_a_torn_tail_and_keeps_a_damaged_whole_line() {
    let dir = scratch("recovery");
    {
        let log = AuditLog::builder(&dir).open().unwrap();
        for n in 1..=3 {
            log.record(&event(n));
        }
    }
    let segment = dir.join("audit-0000000001.log");
    let mut bytes = std::fs::read(&segment).unwrap();
    // Damage the last whole line (a byte inside its JSON), then tear a
    // line after it.
    let len = bytes.len();
    bytes[len - 5] ^= 0x20;
    bytes.extend_from_slice(b"0123456789abcdef {\"seq\":4,\"atMs\"");
    std::fs::write(&segment, &bytes).unwrap();
    let log = AuditLog::builder(&dir).open().unwrap();
    log.record(&event(4));
    let read = log.read(&AuditQuery::new()).unwrap();
    assert_eq!(read.damaged, 1, "the damaged line is counted, not dropped");
    let seqs: Vec<u64> = read.records.iter().map(AuditRecord::seq).collect();
    assert_eq!(
        seqs,
        vec![1, 2, 3],
        "the torn tail is gone; numbering goes on after it"
    );
}

#[test]
fn the_lock_holds_when_the_directory_or_the_lock_file_is_removed() {
    let dir = scratch("lock-removed");
    let first = AuditLog::builder(&dir).open().unwrap();
    first.record(&event(1));
    // The directory deleted: the next write recreates it, lock included.
    std::fs::remove_dir_all(&dir).unwrap();
    first.record(&event(2));
    assert!(AuditLog::builder(&dir).open().is_err(), "still one writer");

    // The lock file alone removed: a second writer gets in, and the first
    // stops writing (counted, and said), so no sequence is written twice.
    std::fs::remove_file(dir.join(agent_surface::audit::LOCK_FILE)).unwrap();
    let second = AuditLog::builder(&dir).open().unwrap();
    first.record(&event(3));
    assert!(first.health().is_err());
    assert_eq!(first.lost(), 1);
    second.record(&event(4));
    let read = second.read(&AuditQuery::new()).unwrap();
    // Event 1 went with the deleted directory; 2 (the first writer's) and
    // 4 (the second's) follow each other, numbered once each.
    let got: Vec<(u64, Option<&str>)> = events(&read)
        .iter()
        .map(|e| (e.seq, e.invocation_id.as_deref()))
        .collect();
    assert_eq!(got, vec![(2, Some("inv-2")), (3, Some("inv-4"))]);
}

#[test]
fn a_link_named_like_the_next_segment_is_passed_over() {
    let dir = scratch("link");
    let elsewhere = scratch("link-target").join("elsewhere");
    std::fs::write(&elsewhere, b"").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.join("audit-0000000002.log")).unwrap();
    let log = AuditLog::builder(&dir)
        .segment_bytes(4 << 10)
        .open()
        .unwrap();
    for n in 1..=100 {
        log.record(&event(n));
    }
    assert!(log.health().is_ok());
    assert_eq!(
        std::fs::read(&elsewhere).unwrap().len(),
        0,
        "nothing written through"
    );
    let read = log.read(&AuditQuery::new()).unwrap();
    assert_eq!(events(&read).len(), 100);
}
