//! A connection's socket holding its place in the listener's
//! [connection table](super::connections): the place lasts as long as the
//! socket — through an upgrade to a websocket too, so upgrades count
//! against the cap — and every write that has to wait for the client to
//! read is reported, so a client that stops reading gives way.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::connections::Place;

/// The socket and its place.
pub(super) struct PlacedIo {
    stream: TcpStream,
    place: Place,
}

impl PlacedIo {
    /// `stream` holding `place` (and a handle on the socket, so the place
    /// can shut it down when it gives way).
    pub(super) fn new(stream: TcpStream, place: Place) -> io::Result<PlacedIo> {
        let std = stream.into_std()?;
        place.state().hold_socket(std.try_clone()?);
        Ok(PlacedIo {
            stream: TcpStream::from_std(std)?,
            place,
        })
    }

    /// Reports how a write went.
    fn track(&self, poll: &Poll<io::Result<usize>>) {
        match poll {
            Poll::Pending => self.place.state().write_blocked(),
            Poll::Ready(Ok(written)) if *written > 0 => self.place.state().wrote(),
            Poll::Ready(_) => {}
        }
    }
}

impl AsyncRead for PlacedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for PlacedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.track(&poll);
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.track(&poll);
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
