//! One transaction of each class, over the kernel's sockets (plain `std::net`), timed.
//!
//! Time to first byte (TTFB) is measured from the transaction's *scheduled* start (the open-loop
//! arrival time), not from when a worker got to it: a device that slows the transactions down
//! makes later ones wait for a worker, and that wait is part of what the user sees (no
//! coordinated omission). The first byte is:
//!
//! - HTTP: the first byte of the response (status line) after `GET` (RFC 9112 §4);
//! - FTP: the first byte of the file on the passive-mode data connection after `RETR`
//!   (RFC 959 §4.1.3; `EPSV` on IPv6, RFC 2428 §3);
//! - DNS: the response datagram to one `A` (IPv4) or `AAAA` (IPv6) query (RFC 1035 §4.1).
//!
//! Payload bytes are what the application received: the HTTP body, the FTP file, the DNS
//! message. Every failure names the step and what was seen.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use super::{Class, DNS_NAME, FTP_FILE, HTTP_LARGE, HTTP_SMALL};

/// What one transaction gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub class: Class,
    /// Scheduled start to first response byte (None when it failed before a byte came).
    pub ttfb: Option<Duration>,
    /// Scheduled start to the end of the transaction.
    pub total: Duration,
    pub payload_bytes: u64,
    /// How late a worker started it after its scheduled time.
    pub start_lag: Duration,
    pub error: Option<String>,
}

/// Runs one transaction of `class` against `server`, scheduled at `scheduled`.
pub fn run(
    class: Class,
    server: IpAddr,
    sizes: &super::Sizes,
    scheduled: Instant,
    timeout: Duration,
) -> Outcome {
    let start_lag = scheduled.elapsed();
    let mut ttfb = None;
    let r = match class {
        Class::HttpSmall => http(
            server,
            HTTP_SMALL,
            sizes.http_small,
            scheduled,
            timeout,
            &mut ttfb,
        ),
        Class::HttpLarge => http(
            server,
            HTTP_LARGE,
            sizes.http_large,
            scheduled,
            timeout,
            &mut ttfb,
        ),
        Class::Ftp => ftp(server, sizes.ftp, scheduled, timeout, &mut ttfb),
        Class::Dns => dns(server, scheduled, timeout, &mut ttfb),
    };
    let (payload_bytes, error) = match r {
        Ok(n) => (n, None),
        Err(e) => (0, Some(e.to_string())),
    };
    Outcome {
        class,
        ttfb: if error.is_none() { ttfb } else { None },
        total: scheduled.elapsed(),
        payload_bytes,
        start_lag,
        error,
    }
}

/// Why a transaction failed: the step, and what was seen there.
#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    /// A socket call failed.
    #[error("{step}: {source}")]
    Io {
        step: String,
        #[source]
        source: std::io::Error,
    },
    /// The server answered, but not as the protocol (or the test's expectation) says.
    #[error("{step}: {what}")]
    Protocol { step: String, what: String },
}

/// A socket error at `step`, for `map_err`.
fn io_at(step: impl Into<String>) -> impl FnOnce(std::io::Error) -> TransactionError {
    let step = step.into();
    move |source| TransactionError::Io { step, source }
}

/// An answer that is not what `step` expects.
fn protocol(step: impl Into<String>, what: impl Into<String>) -> TransactionError {
    TransactionError::Protocol {
        step: step.into(),
        what: what.into(),
    }
}

type Result<T> = std::result::Result<T, TransactionError>;

fn connect(addr: SocketAddr, timeout: Duration, what: &str) -> Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, timeout)
        .map_err(io_at(format!("{what}: connect {addr}")))?;
    s.set_read_timeout(Some(timeout))
        .and_then(|_| s.set_write_timeout(Some(timeout)))
        .and_then(|_| s.set_nodelay(true))
        .map_err(io_at(format!("{what}: socket options")))?;
    Ok(s)
}

/// `GET /path`, `Connection: close`; checks status 200 and that the body has `expect` bytes.
fn http(
    server: IpAddr,
    path: &str,
    expect: usize,
    scheduled: Instant,
    timeout: Duration,
    ttfb: &mut Option<Duration>,
) -> Result<u64> {
    let mut s = connect(SocketAddr::new(server, 80), timeout, "http")?;
    let host = match server {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    let req = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())
        .map_err(io_at("http: sending request"))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut head = Vec::new();
    let mut body = 0u64;
    let mut header_end = None;
    loop {
        let n = s.read(&mut buf).map_err(io_at(format!(
            "http GET /{path}: reading after {} bytes",
            head.len() as u64 + body
        )))?;
        if n == 0 {
            break;
        }
        if ttfb.is_none() {
            *ttfb = Some(scheduled.elapsed());
        }
        if header_end.is_some() {
            body += n as u64;
            continue;
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            header_end = Some(i + 4);
            body += (head.len() - (i + 4)) as u64;
            head.truncate(i + 4);
        } else if head.len() > 16 * 1024 {
            return Err(protocol("http", "response header longer than 16 KiB"));
        }
    }
    let Some(_) = header_end else {
        return Err(protocol(
            format!("http GET /{path}"),
            format!("connection closed inside the header ({} bytes)", head.len()),
        ));
    };
    let head = String::from_utf8_lossy(&head);
    let status = head.lines().next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 200") {
        return Err(protocol(
            format!("http GET /{path}"),
            format!("status `{status}`, expected 200"),
        ));
    }
    if body != expect as u64 {
        return Err(protocol(
            format!("http GET /{path}"),
            format!("body {body} bytes, expected {expect}"),
        ));
    }
    Ok(body)
}

/// Reads one (possibly multi-line) FTP reply; returns its code and text (RFC 959 §4.2).
fn ftp_reply(r: &mut BufReader<TcpStream>, step: &str) -> Result<(u16, String)> {
    let mut line = String::new();
    let mut all = String::new();
    let mut code: Option<String> = None;
    loop {
        line.clear();
        let n = r
            .read_line(&mut line)
            .map_err(io_at(format!("ftp {step}: reading reply")))?;
        if n == 0 {
            return Err(protocol(
                format!("ftp {step}"),
                format!("connection closed (so far: `{}`)", all.trim()),
            ));
        }
        all.push_str(&line);
        let l = line.trim_end();
        if l.len() >= 4 && l.as_bytes()[..3].iter().all(u8::is_ascii_digit) {
            let c = &l[..3];
            match &code {
                None if l.as_bytes()[3] == b'-' => code = Some(c.to_string()),
                None => return Ok((c.parse().unwrap_or(0), all)),
                Some(first) if first == c && l.as_bytes()[3] == b' ' => {
                    return Ok((c.parse().unwrap_or(0), all))
                }
                Some(_) => {}
            }
        } else if code.is_none() {
            return Err(protocol(
                format!("ftp {step}"),
                format!("not a reply: `{l}`"),
            ));
        }
    }
}

fn ftp_cmd(
    w: &mut TcpStream,
    r: &mut BufReader<TcpStream>,
    cmd: &str,
    ok: &[u16],
) -> Result<String> {
    w.write_all(format!("{cmd}\r\n").as_bytes())
        .map_err(io_at(format!("ftp {cmd}: sending")))?;
    let (code, text) = ftp_reply(r, cmd)?;
    if !ok.contains(&code) {
        return Err(protocol(
            format!("ftp {cmd}"),
            format!("reply `{}`, expected {ok:?}", text.trim()),
        ));
    }
    Ok(text)
}

/// Anonymous login, binary passive `RETR` of the test file; checks its size.
fn ftp(
    server: IpAddr,
    expect: usize,
    scheduled: Instant,
    timeout: Duration,
    ttfb: &mut Option<Duration>,
) -> Result<u64> {
    let mut w = connect(SocketAddr::new(server, 21), timeout, "ftp control")?;
    let mut r = BufReader::new(
        w.try_clone()
            .map_err(io_at("ftp: cloning control socket"))?,
    );
    let (code, text) = ftp_reply(&mut r, "greeting")?;
    if code != 220 {
        return Err(protocol(
            "ftp greeting",
            format!("`{}`, expected 220", text.trim()),
        ));
    }
    let t = ftp_cmd(&mut w, &mut r, "USER anonymous", &[230, 331])?;
    if t.starts_with("331") {
        ftp_cmd(&mut w, &mut r, "PASS l7@vecswitch", &[230])?;
    }
    ftp_cmd(&mut w, &mut r, "TYPE I", &[200])?;
    // PASV for IPv4 (RFC 959), EPSV for IPv6 (RFC 2428 §3: `229 ... (|||port|)`).
    let data_addr = if server.is_ipv4() {
        let t = ftp_cmd(&mut w, &mut r, "PASV", &[227])?;
        let nums: Vec<u16> = t
            .split(['(', ')'])
            .nth(1)
            .unwrap_or_default()
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect();
        if nums.len() != 6 {
            return Err(protocol(
                "ftp PASV",
                format!("cannot read the address in `{}`", t.trim()),
            ));
        }
        SocketAddr::new(server, nums[4] * 256 + nums[5])
    } else {
        let t = ftp_cmd(&mut w, &mut r, "EPSV", &[229])?;
        let port = t
            .split('|')
            .nth(3)
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| {
                protocol(
                    "ftp EPSV",
                    format!("cannot read the port in `{}`", t.trim()),
                )
            })?;
        SocketAddr::new(server, port)
    };
    let mut data = connect(data_addr, timeout, "ftp data")?;
    ftp_cmd(&mut w, &mut r, &format!("RETR {FTP_FILE}"), &[125, 150])?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = 0u64;
    loop {
        let n = data
            .read(&mut buf)
            .map_err(io_at(format!("ftp RETR: reading data after {got} bytes")))?;
        if n == 0 {
            break;
        }
        if ttfb.is_none() {
            *ttfb = Some(scheduled.elapsed());
        }
        got += n as u64;
    }
    let (code, text) = ftp_reply(&mut r, "RETR completion")?;
    if code != 226 {
        return Err(protocol(
            "ftp RETR completion",
            format!("`{}`, expected 226", text.trim()),
        ));
    }
    let _ = w.write_all(b"QUIT\r\n");
    if got != expect as u64 {
        return Err(protocol(
            "ftp RETR",
            format!("{got} bytes, expected {expect}"),
        ));
    }
    Ok(got)
}

/// One query for [`DNS_NAME`] (`A` on IPv4, `AAAA` on IPv6); checks id, RCODE 0 and one answer.
fn dns(
    server: IpAddr,
    scheduled: Instant,
    timeout: Duration,
    ttfb: &mut Option<Duration>,
) -> Result<u64> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let s = UdpSocket::bind(bind).map_err(io_at("dns: bind"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(io_at("dns: socket options"))?;
    let id = (scheduled.elapsed().as_nanos() as u16) ^ 0x5a5a;
    let qtype: u16 = if server.is_ipv4() { 1 } else { 28 };
    let q = query(id, DNS_NAME, qtype);
    s.send_to(&q, SocketAddr::new(server, 53))
        .map_err(io_at("dns: send"))?;
    let mut buf = [0u8; 1500];
    loop {
        let (n, from) = s
            .recv_from(&mut buf)
            .map_err(io_at(format!("dns: no answer to query {id:#06x}")))?;
        if from.ip() != server || n < 12 || u16::from_be_bytes([buf[0], buf[1]]) != id {
            continue;
        }
        *ttfb = Some(scheduled.elapsed());
        let rcode = buf[3] & 0x0f;
        let answers = u16::from_be_bytes([buf[6], buf[7]]);
        if buf[2] & 0x80 == 0 || rcode != 0 || answers == 0 {
            return Err(protocol(
                format!("dns {DNS_NAME}"),
                format!("rcode {rcode}, {answers} answers (expected rcode 0, >= 1 answer)"),
            ));
        }
        return Ok(n as u64);
    }
}

/// A standard query (RFC 1035 §4.1.1: header, one question, recursion desired).
pub fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(64);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&1u16.to_be_bytes());
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_query_is_rfc1035_wire_format() {
        let q = query(0x1234, "www.l7.test", 1);
        assert_eq!(&q[..12], &[0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&q[12..], b"\x03www\x02l7\x04test\x00\x00\x01\x00\x01");
    }
}
