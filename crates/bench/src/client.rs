//! A minimal HTTP/1.1 load-generator client: one keep-alive connection, one
//! request at a time (no pipelining), `TCP_NODELAY` on.
//!
//! Written by hand rather than with reqwest so the load generator costs as
//! little CPU as possible: on a small machine it shares its core(s) with the
//! fake upstream, and a heavy client would cap what the proxies can be driven
//! to. It understands exactly what the three targets send back:
//! `content-length` bodies, `transfer-encoding: chunked` bodies (streams), and
//! bodies delimited by the connection closing.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Largest response head or buffered chunk accepted.
const MAX_BUFFER: usize = 16 << 20;

/// One connection to a target; reconnects lazily after the server closed it.
pub struct Conn {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// Unread bytes are `buf[pos..len]`.
    pos: usize,
    len: usize,
    /// When the last read returned.
    last_read: Instant,
    /// Connections opened so far (1 when keep-alive held throughout).
    pub opened: u64,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Conn {
        Conn {
            addr,
            stream: None,
            buf: vec![0; 64 * 1024],
            pos: 0,
            len: 0,
            last_read: Instant::now(),
            opened: 0,
        }
    }

    async fn open(&mut self) -> io::Result<()> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        self.stream = Some(stream);
        self.opened += 1;
        self.pos = 0;
        self.len = 0;
        Ok(())
    }

    /// Opens the connection now (so a timed loop does not pay for it).
    pub async fn connect(&mut self) -> io::Result<()> {
        if self.stream.is_none() {
            self.open().await?;
        }
        Ok(())
    }

    /// Reads more bytes; `Ok(0)` at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.pos == self.len {
            self.pos = 0;
            self.len = 0;
        } else if self.len == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            } else if self.buf.len() < MAX_BUFFER {
                let bigger = self.buf.len() * 2;
                self.buf.resize(bigger, 0);
            } else {
                return Err(invalid("response piece larger than the client buffer"));
            }
        }
        let Some(stream) = self.stream.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "not connected"));
        };
        let n = stream.read(&mut self.buf[self.len..]).await?;
        self.len += n;
        self.last_read = Instant::now();
        Ok(n)
    }

    async fn fill_some(&mut self) -> io::Result<()> {
        if self.fill().await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed mid-response",
            ));
        }
        Ok(())
    }

    /// Until `n` unread bytes are buffered.
    async fn want(&mut self, n: usize) -> io::Result<()> {
        while self.len - self.pos < n {
            self.fill_some().await?;
        }
        Ok(())
    }

    /// Until a CRLF is buffered; returns its index in `buf`.
    async fn line_end(&mut self) -> io::Result<usize> {
        loop {
            if let Some(i) = find(&self.buf[self.pos..self.len], b"\r\n") {
                return Ok(self.pos + i);
            }
            self.fill_some().await?;
        }
    }

    /// Sends one request (the complete bytes) and reads the whole response.
    /// `on_body` gets each body piece with the time the read that completed
    /// it returned. Returns the status code.
    pub async fn exchange<F: FnMut(&[u8], Instant)>(
        &mut self,
        request: &[u8],
        on_body: F,
    ) -> io::Result<u16> {
        self.connect().await?;
        // Anything unread belongs to no request: drop it.
        self.pos = 0;
        self.len = 0;
        let result = self.exchange_open(request, on_body).await;
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    async fn exchange_open<F: FnMut(&[u8], Instant)>(
        &mut self,
        request: &[u8],
        mut on_body: F,
    ) -> io::Result<u16> {
        let Some(stream) = self.stream.as_mut() else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "not connected"));
        };
        stream.write_all(request).await?;

        let head_end = loop {
            if let Some(i) = find(&self.buf[self.pos..self.len], b"\r\n\r\n") {
                break self.pos + i + 4;
            }
            if self.len - self.pos > 64 * 1024 {
                return Err(invalid("response head too large"));
            }
            self.fill_some().await?;
        };
        let head = Head::parse(&self.buf[self.pos..head_end])?;
        self.pos = head_end;

        if head.chunked {
            loop {
                let eol = self.line_end().await?;
                let line = &self.buf[self.pos..eol];
                let hex = line.split(|b| *b == b';').next().unwrap_or(line);
                let size = std::str::from_utf8(hex)
                    .ok()
                    .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
                    .ok_or_else(|| invalid("bad chunk size line"))?;
                self.pos = eol + 2;
                if size == 0 {
                    // Trailers, up to an empty line.
                    loop {
                        let eol = self.line_end().await?;
                        let empty = eol == self.pos;
                        self.pos = eol + 2;
                        if empty {
                            break;
                        }
                    }
                    break;
                }
                self.want(size + 2).await?;
                on_body(&self.buf[self.pos..self.pos + size], self.last_read);
                if &self.buf[self.pos + size..self.pos + size + 2] != b"\r\n" {
                    return Err(invalid("chunk not followed by CRLF"));
                }
                self.pos += size + 2;
            }
        } else if let Some(n) = head.content_length {
            self.want(n).await?;
            on_body(&self.buf[self.pos..self.pos + n], self.last_read);
            self.pos += n;
        } else if !(head.status == 204 || head.status == 304 || (100..200).contains(&head.status)) {
            // Delimited by the server closing the connection.
            loop {
                if self.len > self.pos {
                    on_body(&self.buf[self.pos..self.len], self.last_read);
                    self.pos = self.len;
                }
                if self.fill().await? == 0 {
                    break;
                }
            }
            self.stream = None;
            return Ok(head.status);
        }
        if head.close {
            self.stream = None;
        }
        Ok(head.status)
    }
}

/// What the client needs from a response head.
struct Head {
    status: u16,
    content_length: Option<usize>,
    chunked: bool,
    close: bool,
}

impl Head {
    fn parse(head: &[u8]) -> io::Result<Head> {
        let text = std::str::from_utf8(head).map_err(|_| invalid("response head is not UTF-8"))?;
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let mut parts = status_line.split(' ');
        let version = parts.next().unwrap_or("");
        if !version.starts_with("HTTP/1.") {
            return Err(invalid(format!("not an HTTP/1 response: {status_line:?}")));
        }
        let status = parts
            .next()
            .and_then(|s| s.parse::<u16>().ok())
            .ok_or_else(|| invalid(format!("bad status line: {status_line:?}")))?;
        let mut out =
            Head { status, content_length: None, chunked: false, close: version == "HTTP/1.0" };
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                out.content_length =
                    Some(value.parse().map_err(|_| invalid("bad content-length"))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                out.chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                let v = value.to_ascii_lowercase();
                if v.contains("close") {
                    out.close = true;
                } else if v.contains("keep-alive") {
                    out.close = false;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::net::TcpListener;

    /// Serves `replies` in order on one accepted connection, one per request
    /// head received.
    async fn serve(replies: Vec<Vec<Vec<u8>>>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut seen = Vec::new();
            for reply in replies {
                while find(&seen, b"\r\n\r\n").is_none() {
                    let n = s.read(&mut buf).await.unwrap();
                    seen.extend_from_slice(&buf[..n]);
                }
                seen.clear();
                for piece in reply {
                    s.write_all(&piece).await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
            }
        });
        addr
    }

    #[tokio::test]
    async fn content_length_then_chunked_then_close_on_one_connection() {
        let addr = serve(vec![
            vec![b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel".to_vec(), b"lo".to_vec()],
            vec![
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n".to_vec(),
                b"4;x=y\r\ndefg\r\n0\r\n".to_vec(),
                b"\r\n".to_vec(),
            ],
            vec![b"HTTP/1.1 201 Created\r\nconnection: close\r\n\r\nbye".to_vec()],
        ])
        .await;
        let req = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
        let mut conn = Conn::new(addr);
        let mut body = Vec::new();
        assert_eq!(conn.exchange(req, |b, _| body.extend_from_slice(b)).await.unwrap(), 200);
        assert_eq!(body, b"hello");
        let mut pieces = Vec::new();
        assert_eq!(conn.exchange(req, |b, _| pieces.push(b.to_vec())).await.unwrap(), 200);
        assert_eq!(pieces, vec![b"abc".to_vec(), b"defg".to_vec()]);
        body.clear();
        assert_eq!(conn.exchange(req, |b, _| body.extend_from_slice(b)).await.unwrap(), 201);
        assert_eq!(body, b"bye");
        assert!(conn.stream.is_none());
        assert_eq!(conn.opened, 1);
    }
}
