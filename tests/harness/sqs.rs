//! The SQS server `scripts/test` started (moto, the same process as the KMS server): queues,
//! and the S3 event notifications S3 would send them. SeaweedFS, the tests' S3 store, cannot
//! notify a queue, so a test announces each object it uploads itself, with the JSON S3 sends.

use aws_sdk_sqs::types::QueueAttributeName;

/// The test SQS server's endpoint, from `SLUICE_SQS_ENDPOINT` (set by `scripts/test`). Panics
/// when unset: SQS tests fail loudly rather than skip.
pub fn sqs_endpoint() -> String {
    std::env::var("SLUICE_SQS_ENDPOINT").unwrap_or_else(|_| {
        panic!("SLUICE_SQS_ENDPOINT is not set: run the tests with ./scripts/test, which starts an SQS server")
    })
}

/// A client of the test server.
pub fn sqs_client() -> aws_sdk_sqs::Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(aws_sdk_sqs::config::BehaviorVersion::latest())
        .region(aws_sdk_sqs::config::Region::new("us-east-1"))
        .endpoint_url(sqs_endpoint())
        .credentials_provider(aws_sdk_sqs::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .build();
    aws_sdk_sqs::Client::from_conf(config)
}

/// Creates the queue `name`; returns its URL (on the test server's host and port).
pub async fn create_queue(name: &str) -> String {
    let out = sqs_client()
        .create_queue()
        .queue_name(name)
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "CreateQueue {name}: {}",
                aws_sdk_sqs::error::DisplayErrorContext(e)
            )
        });
    out.queue_url().expect("a queue URL").to_owned()
}

/// Sends `body` to the queue at `url`.
pub async fn send(url: &str, body: &str) {
    sqs_client()
        .send_message()
        .queue_url(url)
        .message_body(body)
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "SendMessage: {}",
                aws_sdk_sqs::error::DisplayErrorContext(e)
            )
        });
}

/// The notification S3 sends when `key` (`size` bytes) is put into `bucket`; the key
/// form-encoded as S3 encodes it (`a b+c` is `a+b%2Bc`).
pub fn object_created(bucket: &str, key: &str, size: usize) -> String {
    let mut encoded = String::new();
    for b in key.bytes() {
        match b {
            b' ' => encoded.push('+'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                encoded.push(b as char)
            }
            _ => encoded.push_str(&format!("%{b:02X}")),
        }
    }
    serde_json::json!({"Records": [{
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "us-east-1",
        "eventTime": "2026-12-07T10:00:00.000Z",
        "eventName": "ObjectCreated:Put",
        "s3": {
            "s3SchemaVersion": "1.0",
            "bucket": {"name": bucket, "arn": format!("arn:aws:s3:::{bucket}")},
            "object": {"key": encoded, "size": size},
        },
    }]})
    .to_string()
}

/// The messages of the queue at `url`: (visible, in flight). Both 0: every message deleted.
pub async fn queue_counts(url: &str) -> (u64, u64) {
    let out = sqs_client()
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "GetQueueAttributes: {}",
                aws_sdk_sqs::error::DisplayErrorContext(e)
            )
        });
    let attributes = out.attributes().cloned().unwrap_or_default();
    let count = |name: QueueAttributeName| {
        attributes
            .get(&name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (
        count(QueueAttributeName::ApproximateNumberOfMessages),
        count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    )
}
