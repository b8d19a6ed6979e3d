//! A real S3-compatible store for a test: SeaweedFS started by `scripts/s3` (installed by
//! `scripts/test`) on a free port in a fresh folder, stopped when dropped; and a signed
//! aws-sdk-s3 client to create buckets and read objects back.

use std::path::PathBuf;
use std::process::Command;

use super::{free_port, root};

/// The test credentials `scripts/s3` provisions.
pub const S3_ACCESS_KEY: &str = "sluice-test";
pub const S3_SECRET_KEY: &str = "sluice-test-secret";

/// A running SeaweedFS.
pub struct S3Store {
    pub dir: tempfile::TempDir,
    pub port: u16,
    running: bool,
}

impl S3Store {
    /// Starts a store; fails loudly if `scripts/s3` cannot (the binary is missing, it does
    /// not answer).
    pub fn start() -> Self {
        let mut s = Self {
            dir: tempfile::tempdir().unwrap(),
            port: free_port(),
            running: false,
        };
        s.resume();
        s
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn script() -> PathBuf {
        root().join("scripts/s3")
    }

    /// Starts it (again) on the same port and data.
    pub fn resume(&mut self) {
        let out = Command::new(Self::script())
            .arg("start")
            .arg(self.dir.path())
            .arg(self.port.to_string())
            .output()
            .expect("running scripts/s3");
        assert!(
            out.status.success(),
            "scripts/s3 start failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.running = true;
    }

    /// Kills every SeaweedFS process of this store (SIGKILL); the data stays.
    pub fn kill(&mut self) {
        let pid = std::fs::read_to_string(self.dir.path().join("s3.pid")).unwrap();
        let _ = Command::new("kill")
            .args(["-9", "--", &format!("-{}", pid.trim())])
            .status();
        // Wait until the S3 port is free again.
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        self.running = false;
    }

    /// A client signed with the test credentials (or `secret` instead).
    pub async fn client(&self, secret: &str) -> aws_sdk_s3::Client {
        let credentials =
            aws_sdk_s3::config::Credentials::new(S3_ACCESS_KEY, secret, None, None, "test");
        let config = aws_sdk_s3::config::Builder::new()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .endpoint_url(self.endpoint())
            .force_path_style(true)
            .credentials_provider(credentials)
            .build();
        aws_sdk_s3::Client::from_conf(config)
    }

    /// Creates `bucket`.
    pub async fn create_bucket(&self, bucket: &str) {
        self.client(S3_SECRET_KEY)
            .await
            .create_bucket()
            .bucket(bucket)
            .send()
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "creating bucket {bucket}: {}",
                    aws_sdk_s3::error::DisplayErrorContext(e)
                )
            });
    }

    /// Every object of `bucket`: (key, ETag, body as stored).
    pub async fn objects(&self, bucket: &str) -> Vec<(String, String, Vec<u8>)> {
        let client = self.client(S3_SECRET_KEY).await;
        let mut out = Vec::new();
        let mut token = None;
        loop {
            let page = client
                .list_objects_v2()
                .bucket(bucket)
                .set_continuation_token(token)
                .send()
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "listing {bucket}: {}",
                        aws_sdk_s3::error::DisplayErrorContext(e)
                    )
                });
            for o in page.contents() {
                let key = o.key().unwrap_or_default().to_owned();
                let got = client
                    .get_object()
                    .bucket(bucket)
                    .key(&key)
                    .send()
                    .await
                    .unwrap();
                let etag = got.e_tag().unwrap_or_default().to_owned();
                let body = got.body.collect().await.unwrap().into_bytes().to_vec();
                out.push((key, etag, body));
            }
            token = page.next_continuation_token().map(str::to_owned);
            if token.is_none() {
                break;
            }
        }
        out
    }

    /// The environment `sluice run` needs to sign requests to this store.
    pub fn env(&self) -> [(&'static str, &'static str); 2] {
        [
            ("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", S3_SECRET_KEY),
        ]
    }
}

impl Drop for S3Store {
    fn drop(&mut self) {
        if self.running {
            let _ = Command::new(Self::script())
                .arg("stop")
                .arg(self.dir.path())
                .status();
        }
    }
}
