//! The newline-delimited JSON-RPC transport of a byte stream (stdio, a
//! pipe, a socket): every line the client sends is answered or is a
//! notification, and no line grows memory past [`MAX_LINE_BYTES`].
//!
//! A line `serde_json` cannot read is still JSON to the client's language:
//! a string with a lone UTF-16 surrogate (`"\ud800"`, which JavaScript
//! writes freely) or a number beyond 64-bit floating point (`1e400`). A
//! request written so gets an error under its own id (`-32602`, the
//! request is not read), a line with no readable id the JSON-RPC parse
//! error (`-32700`, id `null`), and a line longer than the bound the
//! invalid-request error (`-32600`), its bytes discarded as they arrive.
//! Whatever rmcp reads goes to it unchanged.

use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

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
    /// is not read either (nothing piles up).
    replies: mpsc::Sender<String>,
    /// The reply owed for the last line read, until the queue takes it.
    owed: Option<String>,
}

/// Replies of this side's own waiting to be written.
const REPLIES_QUEUED: usize = 16;

impl<R, W> Lines<R, W>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(super) fn new(reader: R, writer: W) -> Lines<R, W> {
        let writer = Arc::new(Mutex::new(writer));
        let (replies, mut queue) = mpsc::channel::<String>(REPLIES_QUEUED);
        let writing = Arc::clone(&writer);
        // Ends when the transport is dropped (the queue closes) or the
        // stream fails.
        tokio::spawn(async move {
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
            replies,
            owed: None,
        }
    }

    /// Hands the owed reply to the writing task, waiting while its queue is
    /// full. Cancel safe: the reply stays owed until a place is reserved.
    async fn pay(&mut self) {
        if self.owed.is_none() {
            return;
        }
        match self.replies.reserve().await {
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
            if !self.over && self.partial.len() + chunk.len() <= MAX_LINE_BYTES {
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
        Ok(line)
    }

    /// Owes `reply`: [`pay`](Self::pay) hands it on before the next line
    /// is read.
    fn reply(&mut self, reply: &Value) {
        self.owed = Some(reply.to_string());
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
        let reply = match unreadable_request_id(line) {
            Unreadable::Request(id) => json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {
                    "code": -32602,
                    "message": "this request cannot be read: a string holds a lone UTF-16 surrogate, or a \
                                number is beyond 64-bit floating point, or a member has the wrong type",
                },
            }),
            Unreadable::Notification => return,
            Unreadable::NotJson => json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32700, "message": "parse error: the line is not JSON"},
            }),
        };
        self.reply(&reply);
    }
}

/// What a line rmcp could not read was.
enum Unreadable {
    /// A request: its id, to answer under.
    Request(Value),
    /// A notification (or a response): nothing to answer.
    Notification,
    /// No JSON at all, or none whose id can be read.
    NotJson,
}

/// Reads what it can of a line rmcp could not: as JSON, or as JSON once
/// each lone surrogate escape reads `\ufffd` and each out-of-range number
/// `0` (only to find the id: the request itself is not run).
fn unreadable_request_id(line: &[u8]) -> Unreadable {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let value = serde_json::from_slice::<Value>(line).ok().or_else(|| {
        let text = std::str::from_utf8(line).ok()?;
        serde_json::from_str::<Value>(&readable(text)).ok()
    });
    let Some(Value::Object(message)) = value else {
        return Unreadable::NotJson;
    };
    match message.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) if message.contains_key("method") => {
            Unreadable::Request(id.clone())
        }
        Some(_) if message.contains_key("method") => Unreadable::NotJson,
        _ => Unreadable::Notification,
    }
}

/// `text` with each lone UTF-16 surrogate escape replaced by `\ufffd` and
/// each number `f64` cannot hold by `0`. Byte by byte: every other byte is
/// copied as it is, so the result is as much UTF-8 as `text` was.
fn readable(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut at = 0;
    let mut in_string = false;
    let unit = |from: usize| -> Option<u32> {
        let digits = bytes.get(from..from + 4)?;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    while let Some(&byte) = bytes.get(at) {
        if in_string {
            match byte {
                b'"' => {
                    in_string = false;
                    out.push(byte);
                    at += 1;
                }
                b'\\' if bytes.get(at + 1) == Some(&b'u') => {
                    let first = unit(at + 2);
                    let paired = matches!(first, Some(0xD800..=0xDBFF))
                        && bytes.get(at + 6..at + 8) == Some(b"\\u".as_slice())
                        && matches!(unit(at + 8), Some(0xDC00..=0xDFFF));
                    let (replacement, taken): (&[u8], usize) = match first {
                        Some(0xD800..=0xDFFF) if !paired => (b"\\ufffd", 6),
                        _ => {
                            let taken = if paired { 12 } else { 6 };
                            let end = (at + taken).min(bytes.len());
                            (bytes.get(at..end).unwrap_or_default(), taken)
                        }
                    };
                    out.extend_from_slice(replacement);
                    at += taken;
                }
                b'\\' => {
                    let end = (at + 2).min(bytes.len());
                    out.extend_from_slice(bytes.get(at..end).unwrap_or_default());
                    at += 2;
                }
                _ => {
                    out.push(byte);
                    at += 1;
                }
            }
        } else if byte == b'"' {
            in_string = true;
            out.push(byte);
            at += 1;
        } else if byte == b'-' || byte.is_ascii_digit() {
            let rest = bytes.get(at..).unwrap_or_default();
            let length = rest
                .iter()
                .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                .unwrap_or(rest.len())
                .max(1);
            let number = rest.get(..length).unwrap_or_default();
            let finite = std::str::from_utf8(number)
                .ok()
                .and_then(|number| number.parse::<f64>().ok())
                .is_some_and(f64::is_finite);
            if finite {
                out.extend_from_slice(number);
            } else {
                out.push(b'0');
            }
            at += length;
        } else {
            out.push(byte);
            at += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
        let writer = Arc::clone(&self.writer);
        async move {
            let line = serde_json::to_vec(&item)?;
            Self::write_line(&writer, &line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.pay().await;
            let line = match self.line().await {
                Ok(Some(line)) => line,
                // The end of the stream, or a stream that failed: closed.
                Ok(None) | Err(_) => return None,
            };
            let Ok(line) = line else {
                let reply = json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {
                        "code": -32600,
                        "message": format!("the request is longer than {MAX_LINE_BYTES} bytes"),
                    },
                });
                self.reply(&reply);
                continue;
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let body = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(body) {
                Ok(message) => return Some(message),
                Err(_) => self.answer_unreadable(body),
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.writer.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_and_huge_numbers_become_readable_and_pairs_stay() {
        assert_eq!(
            readable(r#"{"id":3,"t":"\ud800x","n":1e400,"ok":"\ud83d\ude00","m":-2.5}"#),
            r#"{"id":3,"t":"\ufffdx","n":0,"ok":"\ud83d\ude00","m":-2.5}"#
        );
        assert_eq!(
            readable(r#"{"a":"\udc00\ud800","é":"\"1e999"}"#),
            r#"{"a":"\ufffd\ufffd","é":"\"1e999"}"#
        );
    }

    #[tokio::test]
    async fn a_receive_cancelled_mid_line_loses_nothing_and_an_over_long_line_is_refused() {
        use tokio::io::{AsyncReadExt, BufReader};
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server);
        let (mut client_read, mut client_write) = tokio::io::split(client);
        let mut lines = Lines::new(BufReader::new(read), write);
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
            client_write.write_all(ping).await.unwrap();
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
    async fn a_client_that_does_not_read_its_replies_is_not_read_either() {
        use tokio::io::{AsyncBufReadExt as _, BufReader};
        const BAD: usize = 5_000;
        let (client, server) = tokio::io::duplex(4 * 1024);
        let (read, write) = tokio::io::split(server);
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = Lines::new(BufReader::new(read), write);
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

    #[test]
    fn the_id_of_an_unreadable_request_is_found() {
        let request = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"t":"\ud800"}}}"#;
        assert!(
            matches!(unreadable_request_id(request), Unreadable::Request(Value::Number(n)) if n.as_i64() == Some(7))
        );
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"n":1e400}}"#;
        assert!(matches!(
            unreadable_request_id(notification),
            Unreadable::Notification
        ));
        assert!(matches!(
            unreadable_request_id(b"{not json"),
            Unreadable::NotJson
        ));
    }
}
