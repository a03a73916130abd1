//! The newline-delimited JSON-RPC transport of a byte stream (stdio, a
//! pipe, a socket): every request the client sends is answered, and
//! nothing the client sends or fails to read grows memory without bound.
//!
//! A line rmcp cannot read is read no further than its top level, for its
//! id (see `unreadable.rs`, which the HTTP gate shares), and answered with
//! the error that names what is wrong:
//! - `-32602` under its id: a request whose JSON `serde_json` cannot read
//!   (a string with a lone UTF-16 surrogate, which JavaScript writes
//!   freely; a number such as `1e400`; nesting past 128), or a sound
//!   request (`"jsonrpc": "2.0"`, a method name) whose params its method
//!   does not take;
//! - `-32601` under its id: a method no MCP server takes, whatever its
//!   params;
//! - `-32600` under its id: a JSON object with an id that is no JSON-RPC
//!   2.0 request and no response (another version, no method, both a
//!   method and an answer, an integer id beyond 64 bits, a member named
//!   twice — under `null` when its ids disagree);
//! - `-32600` under `null`: a request whose id cannot be carried back (a
//!   fractional number, `null`, one over 1 KiB), an object with neither
//!   an id nor a method name, JSON that is no object, a batch;
//! - `-32700` under `null`: anything that is no JSON.
//!
//! Keys are read as JSON reads them (`"\u0069d"` is `id`), and an id in
//! float form with an integral value (`1.0`) as rmcp reads it, that
//! integer. A line over [`MAX_LINE_BYTES`] is discarded as it arrives and
//! refused (`-32600`). A notification gets nothing, and before the session
//! opens is dropped (rmcp's handshake would end the session on it).
//! Whatever else rmcp reads goes to it unchanged.
//!
//! A request is refused (and never reaches rmcp) when its id is longer
//! than [`MAX_ECHOED_ID_BYTES`] (`-32600`, id `null`), when a request of
//! the client's under the same id is still in flight (`-32600` under that
//! id: rmcp would answer only one of the two), or when [`MAX_IN_FLIGHT`]
//! of its requests are (`-32000` with a `RATE_LIMITED` payload). An id is
//! in flight from its request until its response is written or the client
//! cancels it. rmcp knows each request under an id of this transport's
//! own (`own_ids.rs`; the client's rides in its extensions), so a
//! cancelled request's handler that runs on can never answer a new
//! request under the same client id: its late answer is nobody's and is
//! not written, and the id is free at once. The bound counts every
//! request rmcp still holds, cancelled or not; nothing is pushed out to
//! make room.
//!
//! Responses wait to be written for a client that reads them: past
//! [`MAX_UNSENT_BYTES`] unwritten no line is read, and this side's own
//! replies queue to [`REPLIES_QUEUED`]. Closing writes what is owed
//! (within [`CLOSE_FLUSH`]) before the stream is shut.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{GetExtensions as _, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

use super::own_ids::{Outgoing, OwnIds};
use super::unreadable::{MAX_ECHOED_ID_BYTES, Unreadable, unreadable};

/// The longest line read: 4 MiB, far above the registry's input bound
/// (256 KiB by default) and its envelope.
pub(super) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The server's side of a newline-delimited JSON-RPC stream.
///
/// Receiving is cancel safe (rmcp races it against its other events): the
/// part of a line read so far and a reply owed are kept here, never in the
/// future, and the errors this side answers on its own are written by a
/// task of their own, so a cancelled receive never leaves half a line.
pub(super) struct Lines<R, W> {
    reader: R,
    writer: Arc<Mutex<W>>,
    /// The line being read.
    partial: Vec<u8>,
    /// Whether the line being read went over the bound (its bytes are
    /// dropped as they arrive).
    over: bool,
    /// This side's own replies, to the task that writes them in order: at
    /// most [`REPLIES_QUEUED`] wait, and a client that does not read them
    /// is not read either (nothing piles up). Closed by `close`.
    replies: Option<mpsc::Sender<String>>,
    /// The task writing them: `close` waits for it, so a reply to the last
    /// lines before the client's end of input still goes out.
    writing: Option<tokio::task::JoinHandle<()>>,
    /// The reply owed for the last line read, until the queue takes it.
    owed: Option<String>,
    /// What rmcp's responses still hold unwritten.
    unsent: Arc<Unsent>,
    /// Whether rmcp's handshake is over: it answered `initialize` with a
    /// result, or it took a request with the 2026-07-28 inline metadata
    /// into its session (it asks for the next message without having
    /// refused that request). Before it, rmcp's handshake ends the session
    /// on any notification or response, so those are dropped here: they
    /// answer nothing yet.
    opened: bool,
    /// The requests that would open the session, until rmcp answers them
    /// (a result opens it; an error, such as a version it does not speak,
    /// leaves it in its handshake).
    opening: Vec<i64>,
    /// The client's requests in flight (not answered, not cancelled),
    /// each under the id rmcp knows it by: at most [`MAX_IN_FLIGHT`], each
    /// id of at most [`MAX_ECHOED_ID_BYTES`].
    ids: OwnIds<()>,
    /// The requests rmcp holds (see [`Held`]), answered or not: at most
    /// [`MAX_IN_FLIGHT`]; past it a request waits its turn as busy.
    held: Arc<std::sync::atomic::AtomicUsize>,
}

/// Rides in a request's extensions, which rmcp moves into the handler's
/// request context: dropped when the handler ends (or when the request is
/// dropped unhandled), it gives its place back.
#[derive(Clone)]
struct Held {
    _place: Arc<Place>,
}

struct Place(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// The most requests a client has in flight at once (every one of them
/// held by a handler, some waiting for the person): past it a request is
/// refused as busy.
pub(super) const MAX_IN_FLIGHT: usize = 128;

/// How long a request refused as busy is told to wait.
const BUSY_RETRY_MS: u64 = 1_000;

/// Replies of this side's own waiting to be written.
const REPLIES_QUEUED: usize = 16;

/// How long closing waits for this side's replies to be written.
const CLOSE_FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

/// The bytes of responses not yet written past which no line is read: a
/// client that sends and never reads holds at most this much (each
/// response counted with [`RESPONSE_OVERHEAD`] more for its task).
const MAX_UNSENT_BYTES: usize = 1024 * 1024;
/// What a response waiting to be written costs besides its bytes.
const RESPONSE_OVERHEAD: usize = 256;

/// The responses rmcp handed over and the stream has not taken yet.
#[derive(Default)]
struct Unsent {
    bytes: std::sync::atomic::AtomicUsize,
    drained: tokio::sync::Notify,
}

impl Unsent {
    fn add(&self, bytes: usize) {
        self.bytes
            .fetch_add(bytes, std::sync::atomic::Ordering::AcqRel);
    }

    fn remove(&self, bytes: usize) {
        self.bytes
            .fetch_sub(bytes, std::sync::atomic::Ordering::AcqRel);
        self.drained.notify_waiters();
    }

    /// Waits while more than [`MAX_UNSENT_BYTES`] wait. Cancel safe.
    async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            if self.bytes.load(std::sync::atomic::Ordering::Acquire) <= MAX_UNSENT_BYTES {
                return;
            }
            drained.await;
        }
    }
}

impl<R, W> Lines<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(super) fn new(reader: R, writer: W) -> Lines<R, W> {
        let writer = Arc::new(Mutex::new(writer));
        let (replies, mut queue) = mpsc::channel::<String>(REPLIES_QUEUED);
        let writing = Arc::clone(&writer);
        // Ends when the queue closes (`close`, or the transport dropped) or
        // the stream fails.
        let task = tokio::spawn(async move {
            while let Some(line) = queue.recv().await {
                if Self::write_line(&writing, line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        Lines {
            reader,
            writer,
            partial: Vec::new(),
            over: false,
            replies: Some(replies),
            writing: Some(task),
            owed: None,
            unsent: Arc::new(Unsent::default()),
            opened: false,
            opening: Vec::new(),
            ids: OwnIds::new(),
            held: Arc::default(),
        }
    }

    /// Hands the owed reply to the writing task, waiting while its queue is
    /// full. Cancel safe: the reply stays owed until a place is reserved.
    async fn pay(&mut self) {
        let Some(replies) = self.replies.as_ref().filter(|_| self.owed.is_some()) else {
            return;
        };
        match replies.reserve().await {
            Ok(place) => {
                if let Some(reply) = self.owed.take() {
                    place.send(reply);
                }
            }
            // The writing task is gone (the stream failed): nobody to tell.
            Err(_) => self.owed = None,
        }
    }

    /// The next line, without its `\n` (and `\r`): `Ok(None)` at the end
    /// of the stream, `Err(())` for a line over the bound (discarded).
    /// Cancel safe: the only await is `fill_buf`, and what was consumed
    /// before it is in `self`.
    async fn line(&mut self) -> io::Result<Option<Result<Vec<u8>, ()>>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                let pending = !self.partial.is_empty() || self.over;
                return Ok(pending.then(|| self.take_line()));
            }
            let (chunk, ends) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (available.get(..at).unwrap_or_default(), Some(at + 1)),
                None => (available, None),
            };
            // One byte more for the `\r` of a `\r\n` ending (checked once
            // the line is whole).
            if !self.over && self.partial.len() + chunk.len() <= MAX_LINE_BYTES + 1 {
                self.partial.extend_from_slice(chunk);
            } else {
                self.over = true;
                self.partial = Vec::new();
            }
            let used = ends.unwrap_or(available.len());
            self.reader.consume(used);
            if ends.is_some() {
                return Ok(Some(self.take_line()));
            }
        }
    }

    /// The line read, the reader ready for the next.
    fn take_line(&mut self) -> Result<Vec<u8>, ()> {
        let mut line = std::mem::take(&mut self.partial);
        if std::mem::take(&mut self.over) {
            return Err(());
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > MAX_LINE_BYTES {
            return Err(());
        }
        Ok(line)
    }

    /// Owes the JSON-RPC error `code` with `message` under `id`:
    /// [`pay`](Self::pay) hands it on before the next line is read.
    fn reply(&mut self, id: Value, code: i32, message: &str) {
        let reply =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        self.owed = Some(reply.to_string());
    }

    /// A place for the request under `id`, or `None` with the refusal of
    /// the request owed (see the module docs). The guard gives the place
    /// back once rmcp drops the request.
    fn admit(&mut self, id: &RequestId) -> Option<Held> {
        if let rmcp::model::NumberOrString::String(text) = id
            && text.len() > MAX_ECHOED_ID_BYTES
        {
            let message =
                format!("invalid request: the id is longer than {MAX_ECHOED_ID_BYTES} bytes");
            self.reply(Value::Null, -32600, &message);
            return None;
        }
        let echoed = || serde_json::to_value(id).unwrap_or(Value::Null);
        if self.ids.contains(id) {
            self.reply(
                echoed(),
                -32600,
                "invalid request: a request with this id is still in flight; give every request an id of its own",
            );
            return None;
        }
        let held = self.held.load(std::sync::atomic::Ordering::Acquire);
        if self.ids.len().max(held) >= MAX_IN_FLIGHT {
            let payload = crate::error::ErrorPayload::rate_limited(
                crate::error::RateLimitReason::QueueFull,
                Some(BUSY_RETRY_MS),
            );
            let error = json!({
                "code": -32000,
                "message": format!("server busy: {MAX_IN_FLIGHT} requests are in flight; wait for one to end or cancel one"),
                "data": payload,
            });
            let reply = json!({"jsonrpc": "2.0", "id": echoed(), "error": error});
            self.owed = Some(reply.to_string());
            return None;
        }
        self.held.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let place = Place(Arc::clone(&self.held));
        Some(Held {
            _place: Arc::new(place),
        })
    }

    /// Writes `message` as one line.
    async fn write_line(writer: &Mutex<W>, message: &[u8]) -> io::Result<()> {
        let mut writer = writer.lock().await;
        writer.write_all(message).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await
    }

    /// Answers a line rmcp cannot read (see the module docs).
    fn answer_unreadable(&mut self, line: &[u8]) {
        match unreadable(line) {
            Unreadable::Request { id, fault } => self.reply(id, fault.code(), fault.message()),
            Unreadable::Notification => {}
            Unreadable::Batch => self.reply(Value::Null, -32600, "batches are not supported"),
            Unreadable::NotJson => {
                self.reply(Value::Null, -32700, "parse error: the line is not JSON")
            }
        }
    }
}

/// Whether rmcp's handshake ends with `request`: an `initialize`, or a
/// request other than `ping` and `server/discover` that carries the
/// 2026-07-28 inline metadata whole (the session then runs without a
/// handshake).
fn opens_the_session(request: &rmcp::model::ClientRequest) -> bool {
    use rmcp::model::{ClientRequest, GetMeta as _, ProtocolVersion};
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => other
            .get_meta()
            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
            .is_empty(),
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let mut item = item;
        let orphan = match self.ids.outgoing(&mut item) {
            Outgoing::Answer { own, held: () } => {
                if let Some(at) = self.opening.iter().position(|opening| *opening == own) {
                    self.opening.swap_remove(at);
                    if matches!(item, JsonRpcMessage::Response(_)) {
                        self.opened = true;
                        self.opening.clear();
                    }
                }
                false
            }
            // A late answer to a request the client cancelled, or a
            // cancelled stream's notification: not written.
            Outgoing::Nobodys => true,
            Outgoing::Other => false,
        };
        let writer = Arc::clone(&self.writer);
        let unsent = Arc::clone(&self.unsent);
        // Serialized now, so its size is counted while it waits (rmcp
        // runs each send as a task of its own).
        let line = if orphan {
            Ok(Vec::new())
        } else {
            serde_json::to_vec(&item)
        };
        let cost = line.as_ref().map_or(0, Vec::len) + RESPONSE_OVERHEAD;
        unsent.add(cost);
        async move {
            let written = match line {
                Ok(_) if orphan => Ok(()),
                Ok(line) => Self::write_line(&writer, &line).await,
                Err(error) => Err(error.into()),
            };
            unsent.remove(cost);
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // rmcp's handshake answers what it refuses before it asks for the
        // next message (which takes the request out of `opening`): a
        // request still there was taken into the session.
        if !self.opened && !self.opening.is_empty() {
            self.opened = true;
            self.opening.clear();
        }
        loop {
            self.pay().await;
            // A client that does not read what it asked for is not read.
            self.unsent.room().await;
            let line = match self.line().await {
                Ok(Some(line)) => line,
                // The end of the stream, or a stream that failed: closed.
                Ok(None) | Err(_) => return None,
            };
            let Ok(line) = line else {
                let message = format!("the request is longer than {MAX_LINE_BYTES} bytes");
                self.reply(Value::Null, -32600, &message);
                continue;
            };
            // A byte-order mark is no part of the message; a line with
            // nothing else is no message.
            let body = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let message = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(body) {
                Ok(message) => message,
                Err(_) => {
                    self.answer_unreadable(body);
                    continue;
                }
            };
            match message {
                JsonRpcMessage::Request(mut request) => {
                    let Some(held) = self.admit(&request.id) else {
                        continue;
                    };
                    request.request.extensions_mut().insert(held);
                    let own = self.ids.take(&mut request, ());
                    if !self.opened && opens_the_session(&request.request) {
                        self.opening.push(own);
                    }
                    return Some(JsonRpcMessage::Request(request));
                }
                message if self.opened => {
                    let mut message = message;
                    if self.ids.incoming(&mut message) {
                        return Some(message);
                    }
                }
                // A notification or a response before the session opens.
                _ => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // Every reply owed goes out before the stream is shut — within
        // a bound: a client that stopped reading does not hold the close.
        let flushed = async {
            self.pay().await;
            self.replies = None;
            if let Some(writing) = self.writing.take() {
                let _ = writing.await;
            }
        };
        let _ = tokio::time::timeout(CLOSE_FLUSH, flushed).await;
        self.replies = None;
        if let Some(writing) = self.writing.take() {
            writing.abort();
        }
        let shut = async { self.writer.lock().await.shutdown().await };
        tokio::time::timeout(CLOSE_FLUSH, shut)
            .await
            .unwrap_or(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ClientNotification, ServerJsonRpcMessage};
    use tokio::io::{BufReader, DuplexStream, ReadHalf, WriteHalf};

    /// The transport under test: the server's halves of a duplex stream.
    type Served = Lines<BufReader<ReadHalf<DuplexStream>>, WriteHalf<DuplexStream>>;

    /// A transport over an in-memory stream of `buffer` bytes each way,
    /// and the client's two halves.
    fn connected(buffer: usize) -> (Served, ReadHalf<DuplexStream>, WriteHalf<DuplexStream>) {
        let (client, server) = tokio::io::duplex(buffer);
        let (read, write) = tokio::io::split(server);
        let (client_read, client_write) = tokio::io::split(client);
        (
            Lines::new(BufReader::new(read), write),
            client_read,
            client_write,
        )
    }

    #[tokio::test]
    async fn a_receive_cancelled_mid_line_loses_nothing_and_an_over_long_line_is_refused() {
        use tokio::io::AsyncReadExt;
        let (mut lines, mut client_read, mut client_write) = connected(64 * 1024);
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let (head, tail) = ping.split_at(17);
        client_write.write_all(head).await.unwrap();
        let cancelled =
            tokio::time::timeout(std::time::Duration::from_millis(20), lines.receive()).await;
        assert!(cancelled.is_err(), "half a line is no message");
        client_write.write_all(tail).await.unwrap();
        client_write.write_all(b"\n").await.unwrap();
        let message = lines.receive().await.expect("the whole line");
        assert!(serde_json::to_string(&message).unwrap().contains("ping"));
        // Over the bound: refused, the session reads on.
        let writer = tokio::spawn(async move {
            let long = vec![b' '; MAX_LINE_BYTES + 10];
            client_write.write_all(&long).await.unwrap();
            client_write.write_all(b"\n").await.unwrap();
            // Another id: 1 is still in flight.
            client_write
                .write_all(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
                .await
                .unwrap();
            client_write.write_all(b"\n").await.unwrap();
            client_write
        });
        let message = lines.receive().await.expect("the line after it");
        assert!(serde_json::to_string(&message).unwrap().contains("ping"));
        let _client_write = writer.await.unwrap();
        let mut reply = vec![0u8; 256];
        let n = client_read.read(&mut reply).await.unwrap();
        let reply: Value = serde_json::from_slice(reply.get(..n).unwrap().trim_ascii()).unwrap();
        assert_eq!(reply["error"]["code"], json!(-32600), "{reply}");
    }

    #[tokio::test]
    async fn replies_owed_at_the_end_of_input_still_go_out() {
        use tokio::io::AsyncReadExt;
        let (mut lines, mut client_read, mut client_write) = connected(64 * 1024);
        client_write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":303,\"method\":\"ping\",\"params\":{\"x\":\"\\ud800\"}}\n{oops")
            .await
            .unwrap();
        client_write.shutdown().await.unwrap();
        assert!(lines.receive().await.is_none(), "the end of input");
        lines.close().await.unwrap();
        let mut out = String::new();
        client_read.read_to_string(&mut out).await.unwrap();
        let replies: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(replies.len(), 2, "{out}");
        assert_eq!(replies[0]["id"], json!(303));
        assert_eq!(replies[0]["error"]["code"], json!(-32602));
        assert_eq!(replies[1]["id"], Value::Null);
        assert_eq!(replies[1]["error"]["code"], json!(-32700));
    }

    #[tokio::test]
    async fn notifications_and_responses_before_the_session_opens_are_dropped() {
        use rmcp::model::{EmptyResult, NumberOrString, ServerResult};
        let (mut lines, _client_read, mut client_write) = connected(64 * 1024);
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
        // An inline request in a version rmcp refuses opens nothing.
        let inline = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"1"}}}}"#;
        let input = [
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            inline,
            init,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ]
        .join("\n");
        client_write
            .write_all(format!("{input}\n").as_bytes())
            .await
            .unwrap();
        client_write.shutdown().await.unwrap();
        let mut kinds = Vec::new();
        while let Some(message) = lines.receive().await {
            kinds.push(match message {
                JsonRpcMessage::Request(request) => {
                    let method = request.request.method().to_owned();
                    // rmcp's answers: a result for the ping and for
                    // `initialize`, an error for the refused version.
                    let answer = if request.id == NumberOrString::Number(2) {
                        ServerJsonRpcMessage::error(
                            rmcp::model::ErrorData::invalid_request("unsupported version", None),
                            Some(request.id),
                        )
                    } else {
                        ServerJsonRpcMessage::response(
                            ServerResult::EmptyResult(EmptyResult {}),
                            request.id,
                        )
                    };
                    lines.send(answer).await.unwrap();
                    method
                }
                JsonRpcMessage::Notification(note) => format!(
                    "note {}",
                    serde_json::to_value(&note.notification).unwrap()["method"]
                        .as_str()
                        .unwrap_or_default()
                ),
                _ => "other".to_owned(),
            });
        }
        assert_eq!(
            kinds,
            [
                "ping",
                "tools/list",
                "initialize",
                "note notifications/initialized"
            ],
            "only the requests before it, then everything after the session opens"
        );
    }

    /// Reads the replies this side wrote itself, `n` of them.
    async fn replies(client_read: &mut ReadHalf<DuplexStream>, n: usize) -> Vec<Value> {
        use tokio::io::AsyncBufReadExt as _;
        let mut lines = BufReader::new(client_read).lines();
        let mut out = Vec::new();
        while out.len() < n {
            let line = lines.next_line().await.unwrap().unwrap();
            out.push(serde_json::from_str(&line).unwrap());
        }
        out
    }

    /// The client's id of a request as the transport hands it to rmcp.
    fn client_id(request: &rmcp::service::RxJsonRpcMessage<RoleServer>) -> RequestId {
        let JsonRpcMessage::Request(request) = request else {
            panic!("a request: {request:?}");
        };
        request
            .request
            .extensions()
            .get::<crate::mcp::own_ids::ClientId>()
            .expect("the client's id")
            .0
            .clone()
    }

    /// The session opened: `initialize` received and answered.
    async fn opened(
        lines: &mut Served,
        client_read: &mut ReadHalf<DuplexStream>,
        client_write: &mut WriteHalf<DuplexStream>,
    ) {
        let mut input = String::new();
        input.push_str(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#);
        input.push('\n');
        client_write.write_all(input.as_bytes()).await.unwrap();
        let Some(JsonRpcMessage::Request(initialize)) = lines.receive().await else {
            panic!("initialize");
        };
        let answer = ServerJsonRpcMessage::response(
            rmcp::model::ServerResult::EmptyResult(rmcp::model::EmptyResult {}),
            initialize.id,
        );
        lines.send(answer).await.unwrap();
        let replies = replies(client_read, 1).await;
        assert_eq!(replies[0]["id"], json!(0), "{replies:?}");
    }

    fn ping(id: &str) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
    }

    fn cancel(id: &str) -> String {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id}}}}}\n"
        )
    }

    #[tokio::test]
    async fn a_cancelled_id_is_free_at_once_and_its_late_answer_is_nobodys() {
        use rmcp::model::{EmptyResult, NumberOrString, ServerResult};
        let (mut lines, mut client_read, mut client_write) = connected(1024 * 1024);
        opened(&mut lines, &mut client_read, &mut client_write).await;
        // Request 7 runs; the client cancels it and sends 7 again at once.
        let input = format!("{}{}{}", ping("7"), cancel("7"), ping("7"));
        client_write.write_all(input.as_bytes()).await.unwrap();
        let first = lines.receive().await.expect("a request");
        assert_eq!(client_id(&first), NumberOrString::Number(7));
        let JsonRpcMessage::Notification(cancelled) = lines.receive().await.expect("the cancel")
        else {
            panic!("a notification");
        };
        let second = lines.receive().await.expect("a request");
        assert_eq!(client_id(&second), NumberOrString::Number(7));
        let (JsonRpcMessage::Request(first), JsonRpcMessage::Request(second)) = (first, second)
        else {
            panic!("requests");
        };
        // rmcp knows the two under ids of their own, and is told to cancel
        // the first of them.
        assert_ne!(first.id, second.id);
        let ClientNotification::CancelledNotification(cancelled) = cancelled.notification else {
            panic!("a cancellation");
        };
        assert_eq!(cancelled.params.request_id, Some(first.id.clone()));
        // The first's late answer is written for nobody; the second's goes
        // out under 7.
        let answer = |id, text: &str| {
            ServerJsonRpcMessage::error(
                rmcp::model::ErrorData::internal_error(text.to_owned(), None),
                Some(id),
            )
        };
        lines.send(answer(first.id.clone(), "late")).await.unwrap();
        lines
            .send(ServerJsonRpcMessage::response(
                ServerResult::EmptyResult(EmptyResult {}),
                second.id.clone(),
            ))
            .await
            .unwrap();
        let written = replies(&mut client_read, 1).await;
        assert_eq!(written[0]["id"], json!(7), "{written:?}");
        assert!(written[0].get("result").is_some(), "{written:?}");
        // A cancel of an id not in flight names nothing and is dropped.
        client_write
            .write_all(format!("{}{}", cancel("7"), ping("8")).as_bytes())
            .await
            .unwrap();
        let next = lines.receive().await.expect("a request");
        assert_eq!(client_id(&next), NumberOrString::Number(8));
    }

    #[tokio::test]
    async fn a_listen_streams_notifications_name_the_clients_id() {
        use rmcp::model::{GetMeta as _, ServerNotification, ToolListChangedNotification};
        let (mut lines, mut client_read, mut client_write) = connected(1024 * 1024);
        opened(&mut lines, &mut client_read, &mut client_write).await;
        client_write
            .write_all(ping("\"listen-1\"").as_bytes())
            .await
            .unwrap();
        let Some(JsonRpcMessage::Request(listen)) = lines.receive().await else {
            panic!("a request");
        };
        let mut notification =
            ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default());
        notification
            .get_meta_mut()
            .set_subscription_id(listen.id.clone());
        lines
            .send(ServerJsonRpcMessage::notification(notification))
            .await
            .unwrap();
        let written = replies(&mut client_read, 1).await;
        assert_eq!(
            written[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!("listen-1"),
            "{written:?}"
        );
    }

    /// A 2026-07-28 request with the inline metadata whole.
    fn inline(id: &str, method: &str) -> String {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{{\"_meta\":{{\
             \"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
             \"io.modelcontextprotocol/clientCapabilities\":{{}},\
             \"io.modelcontextprotocol/clientInfo\":{{\"name\":\"x\",\"version\":\"1\"}}}}}}}}\n"
        )
    }

    #[tokio::test]
    async fn a_cancel_right_after_the_first_inline_request_is_not_lost() {
        let (mut lines, _client_read, mut client_write) = connected(1024 * 1024);
        // rmcp takes the first request into its session and asks for the
        // next message without answering it: the session is open.
        let input = format!("{}{}", inline("\"t\"", "tools/list"), cancel("\"t\""));
        client_write.write_all(input.as_bytes()).await.unwrap();
        let Some(JsonRpcMessage::Request(first)) = lines.receive().await else {
            panic!("a request");
        };
        let Some(JsonRpcMessage::Notification(cancelled)) = lines.receive().await else {
            panic!("the cancel passes");
        };
        let ClientNotification::CancelledNotification(cancelled) = cancelled.notification else {
            panic!("a cancellation");
        };
        assert_eq!(cancelled.params.request_id, Some(first.id));
    }

    #[tokio::test]
    async fn a_cancelled_streams_notifications_are_nobodys() {
        use rmcp::model::{GetMeta as _, ServerNotification, ToolListChangedNotification};
        let (mut lines, mut client_read, mut client_write) = connected(1024 * 1024);
        opened(&mut lines, &mut client_read, &mut client_write).await;
        let input = format!("{}{}{}", ping("\"L\""), cancel("\"L\""), ping("9"));
        client_write.write_all(input.as_bytes()).await.unwrap();
        let Some(JsonRpcMessage::Request(listen)) = lines.receive().await else {
            panic!("a request");
        };
        assert!(matches!(
            lines.receive().await,
            Some(JsonRpcMessage::Notification(_))
        ));
        let Some(JsonRpcMessage::Request(next)) = lines.receive().await else {
            panic!("a request");
        };
        // The cancelled stream's handler, winding down, still notifies.
        let mut late =
            ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default());
        late.get_meta_mut().set_subscription_id(listen.id.clone());
        lines
            .send(ServerJsonRpcMessage::notification(late))
            .await
            .unwrap();
        lines
            .send(ServerJsonRpcMessage::response(
                rmcp::model::ServerResult::EmptyResult(rmcp::model::EmptyResult {}),
                next.id,
            ))
            .await
            .unwrap();
        let written = replies(&mut client_read, 1).await;
        assert_eq!(written[0]["id"], json!(9), "only the answer: {written:?}");
    }

    #[tokio::test]
    async fn requests_rmcp_still_holds_keep_their_places() {
        use rmcp::model::NumberOrString;
        let (mut lines, mut client_read, mut client_write) = connected(1024 * 1024);
        opened(&mut lines, &mut client_read, &mut client_write).await;
        // Every place taken by a request whose handler runs on after the
        // client cancelled it.
        let mut held = Vec::new();
        for n in 1..=MAX_IN_FLIGHT {
            let id = n.to_string();
            let line = format!("{}{}", ping(&id), cancel(&id));
            client_write.write_all(line.as_bytes()).await.unwrap();
            held.push(lines.receive().await.expect("a request"));
            assert!(matches!(
                lines.receive().await,
                Some(JsonRpcMessage::Notification(_))
            ));
        }
        assert!(lines.ids.len() == 0);
        // A new request waits its turn as busy, whatever its id.
        client_write
            .write_all(
                format!("{}{}", ping(&(MAX_IN_FLIGHT + 1).to_string()), ping("1")).as_bytes(),
            )
            .await
            .unwrap();
        // Receiving writes the refusals, then waits for a line that does
        // not come.
        let refused = tokio::select! {
            refused = replies(&mut client_read, 2) => refused,
            _ = lines.receive() => panic!("nothing passes"),
        };
        for (refusal, id) in refused.iter().zip([json!(MAX_IN_FLIGHT + 1), json!(1)]) {
            assert_eq!(refusal["id"], id, "{refused:?}");
            assert_eq!(refusal["error"]["code"], json!(-32000));
        }
        // One handler ends: a place is free.
        held.remove(0);
        client_write.write_all(ping("1").as_bytes()).await.unwrap();
        let next = lines.receive().await.expect("a request");
        assert_eq!(client_id(&next), NumberOrString::Number(1));
    }

    #[tokio::test]
    async fn an_id_in_flight_is_refused_and_in_flight_is_bounded() {
        use rmcp::model::NumberOrString;
        let (mut lines, mut client_read, mut client_write) = connected(1024 * 1024);
        opened(&mut lines, &mut client_read, &mut client_write).await;
        let mut input = String::new();
        input.push_str(&ping("1"));
        input.push_str(&ping("\"a\""));
        // Reused while in flight: refused, each under its id.
        input.push_str(&ping("1"));
        input.push_str(&ping("\"a\""));
        // "1" is another id than 1.
        input.push_str(&ping("\"1\""));
        client_write.write_all(input.as_bytes()).await.unwrap();
        let mut received = Vec::new();
        for _ in 0..3 {
            received.push(client_id(&lines.receive().await.expect("a request")));
        }
        assert_eq!(
            received,
            [
                NumberOrString::Number(1),
                NumberOrString::String("a".into()),
                NumberOrString::String("1".into()),
            ]
        );
        let refused = replies(&mut client_read, 2).await;
        assert_eq!(refused[0]["id"], json!(1), "{refused:?}");
        assert_eq!(refused[0]["error"]["code"], json!(-32600));
        assert_eq!(refused[1]["id"], json!("a"));
        // In flight now: 1, "a", "1". Fill to the bound, then one more.
        let mut input = String::new();
        for n in 4..=MAX_IN_FLIGHT + 1 {
            input.push_str(&ping(&format!("{}", 1000 + n)));
        }
        // An id over its own bound.
        let long = format!("\"{}\"", "x".repeat(MAX_ECHOED_ID_BYTES + 1));
        input.push_str(&ping(&long));
        client_write.write_all(input.as_bytes()).await.unwrap();
        for _ in 4..=MAX_IN_FLIGHT {
            assert!(matches!(
                lines.receive().await,
                Some(JsonRpcMessage::Request(_))
            ));
        }
        assert_eq!(lines.ids.len(), MAX_IN_FLIGHT);
        client_write.shutdown().await.unwrap();
        assert!(lines.receive().await.is_none());
        lines.close().await.unwrap();
        let refused = replies(&mut client_read, 2).await;
        assert_eq!(
            refused[0]["id"],
            json!(1000 + MAX_IN_FLIGHT + 1),
            "{refused:?}"
        );
        assert_eq!(refused[0]["error"]["code"], json!(-32000));
        assert_eq!(refused[0]["error"]["data"]["code"], json!("RATE_LIMITED"));
        assert_eq!(refused[1]["id"], Value::Null);
        assert_eq!(refused[1]["error"]["code"], json!(-32600));
    }

    #[tokio::test]
    async fn responses_nobody_reads_stop_the_reading() {
        let (mut lines, _client_read, mut client_write) = connected(4 * 1024);
        client_write
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\
                  {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
            )
            .await
            .unwrap();
        let Some(JsonRpcMessage::Request(request)) = lines.receive().await else {
            panic!("a request");
        };
        // Responses as large as the bound, handed over and never read.
        let big = ServerJsonRpcMessage::error(
            rmcp::model::ErrorData::internal_error("x".repeat(MAX_UNSENT_BYTES), None),
            Some(request.id.clone()),
        );
        let pending = tokio::spawn(lines.send(big));
        tokio::task::yield_now().await;
        let stalled =
            tokio::time::timeout(std::time::Duration::from_millis(200), lines.receive()).await;
        assert!(stalled.is_err(), "no line is read while the bound is held");
        pending.abort();
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_its_replies_is_not_read_either() {
        use tokio::io::AsyncBufReadExt as _;
        const BAD: usize = 5_000;
        let (mut lines, client_read, mut client_write) = connected(4 * 1024);
        let sending = tokio::spawn(async move {
            for _ in 0..BAD {
                client_write.write_all(b"{not json\n").await.unwrap();
            }
            client_write
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
                .await
                .unwrap();
            client_write
        });
        // Nobody reads the replies: the server stops reading, so the
        // client's writes stop too, with at most a queue of replies held.
        let stalled =
            tokio::time::timeout(std::time::Duration::from_millis(300), lines.receive()).await;
        assert!(
            stalled.is_err(),
            "no message gets through while the replies are not read"
        );
        assert!(
            !sending.is_finished(),
            "the client's writes wait for the server"
        );
        // The client reads: every bad line is answered, then the ping comes.
        let reading = tokio::spawn(async move {
            let mut replies = BufReader::new(client_read).lines();
            let mut answered = 0;
            while answered < BAD {
                let reply = replies.next_line().await.unwrap().unwrap();
                let reply: Value = serde_json::from_str(&reply).unwrap();
                assert_eq!(reply["error"]["code"], json!(-32700));
                answered += 1;
            }
            answered
        });
        let message = lines.receive().await.expect("the ping");
        assert!(serde_json::to_string(&message).unwrap().contains("ping"));
        assert_eq!(reading.await.unwrap(), BAD);
        let _client_write = sending.await.unwrap();
    }
}
