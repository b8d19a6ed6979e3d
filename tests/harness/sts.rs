//! A stand-in for AWS STS, for the tests of `aws.sts_role_arn`: sluice assumes the role
//! through it (`AWS_ENDPOINT_URL_STS`), then signs with the credentials it hands out.

/// What the STS stand-in saw: each request's headers (names lowercased), then `("body", ..)`.
pub type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// A stand-in for AWS STS on a free port: answers every `AssumeRole` with the temporary
/// credentials `key` and `secret`, as STS's API reference shows the answer, and keeps each
/// request's headers and body.
pub fn fake_sts(key: &str, secret: &str) -> (u16, Seen) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    let (key, secret) = (key.to_owned(), secret.to_owned());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            let head_end = loop {
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
                match conn.read(&mut chunk) {
                    Ok(0) | Err(_) => break 0,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            };
            if head_end == 0 {
                continue;
            }
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            let headers: Vec<(String, String)> = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_owned()))
                .collect();
            let length: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < head_end + length {
                match conn.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
            let mut seen = keep.lock().unwrap();
            seen.extend(headers);
            seen.push(("body".into(), body));
            let xml = format!(
                r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>{key}</AccessKeyId><SecretAccessKey>{secret}</SecretAccessKey><SessionToken>sts-token</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials><AssumedRoleUser><AssumedRoleId>AROASLUICE:sluice</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/ingest/sluice</Arn></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata></AssumeRoleResponse>"#
            );
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{xml}",
                xml.len()
            );
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}
