//! What an SQS message announces, read as Data Prepper reads it: an S3 event notification
//! (`{"Records": [...]}`, also wrapped in an SNS notification's `Message`) or an EventBridge
//! event (`detail-type: Object Created`). Only the first record counts, as in Data Prepper;
//! the key is form-decoded (`+` is a space, `%2F` a `/`).

use serde_json::Value;

/// Where S3 notifications come from: `notification_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    S3,
    EventBridge,
}

/// What one message announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// An object was created: read it.
    Created(Announced),
    /// Nothing to read (S3's `s3:TestEvent`, an object removed, an empty object): the message
    /// is deleted unread.
    Skip(&'static str),
}

/// An object a message announces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announced {
    pub bucket: String,
    pub key: String,
    /// As announced (0 when the notification says none).
    pub size: u64,
    /// When S3 says the event happened (RFC 3339), if it says.
    pub event_time: Option<String>,
}

/// Reads the body of an SQS message; `Err` says why it is no notification.
pub fn parse(body: &str, from: From) -> Result<Notice, String> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the message is not JSON: {e}"))?;
    // SNS wraps S3's notification as a string in `Message`.
    let value = match value.get("Message").and_then(Value::as_str) {
        Some(inner) => serde_json::from_str(inner)
            .map_err(|e| format!("the SNS notification's `Message` is not JSON: {e}"))?,
        None => value,
    };
    match from {
        From::S3 => s3(&value),
        From::EventBridge => eventbridge(&value),
    }
}

fn s3(value: &Value) -> Result<Notice, String> {
    if value.get("Event").and_then(Value::as_str) == Some("s3:TestEvent") {
        return Ok(Notice::Skip("an S3 test event"));
    }
    let record = value
        .get("Records")
        .and_then(Value::as_array)
        .ok_or("the message has no `Records`: not an S3 event notification")?
        .first()
        .ok_or("the notification's `Records` is empty")?;
    let name = record
        .get("eventName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !name.starts_with("ObjectCreated") {
        return Ok(Notice::Skip("not an object created"));
    }
    let s3 = record
        .get("s3")
        .ok_or("the notification's record has no `s3`")?;
    let bucket = s3
        .pointer("/bucket/name")
        .and_then(Value::as_str)
        .ok_or("the notification has no `s3.bucket.name`")?;
    let key = s3
        .pointer("/object/key")
        .and_then(Value::as_str)
        .ok_or("the notification has no `s3.object.key`")?;
    Ok(Notice::Created(Announced {
        bucket: bucket.to_owned(),
        key: form_decode(key),
        size: s3
            .pointer("/object/size")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        event_time: record
            .get("eventTime")
            .and_then(Value::as_str)
            .map(str::to_owned),
    }))
}

fn eventbridge(value: &Value) -> Result<Notice, String> {
    let kind = value
        .get("detail-type")
        .and_then(Value::as_str)
        .ok_or("the message has no `detail-type`: not an EventBridge event")?;
    if kind != "Object Created" {
        return Ok(Notice::Skip("not an object created"));
    }
    let detail = value.get("detail").ok_or("the event has no `detail`")?;
    let bucket = detail
        .pointer("/bucket/name")
        .and_then(Value::as_str)
        .ok_or("the event has no `detail.bucket.name`")?;
    let key = detail
        .pointer("/object/key")
        .and_then(Value::as_str)
        .ok_or("the event has no `detail.object.key`")?;
    Ok(Notice::Created(Announced {
        bucket: bucket.to_owned(),
        // EventBridge sends the key as it is.
        key: key.to_owned(),
        size: detail
            .pointer("/object/size")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        event_time: value.get("time").and_then(Value::as_str).map(str::to_owned),
    }))
}

/// `application/x-www-form-urlencoded` decoding, as S3 encodes keys in notifications: `+` is
/// a space, `%XX` a byte; bytes that are not UTF-8 become U+FFFD.
fn form_decode(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(bucket: &str, key: &str, size: u64) -> Notice {
        Notice::Created(Announced {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            size,
            event_time: Some("2026-12-07T10:00:00.000Z".to_owned()),
        })
    }

    const PUT: &str = r#"{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2026-12-07T10:00:00.000Z","eventName":"ObjectCreated:Put","s3":{"s3SchemaVersion":"1.0","bucket":{"name":"logs","arn":"arn:aws:s3:::logs"},"object":{"key":"dir%2Fa+b%2Bc.log","size":12,"eTag":"x"}}}]}"#;

    #[test]
    fn an_s3_notification_names_the_object_with_its_key_decoded() {
        assert_eq!(
            parse(PUT, From::S3).unwrap(),
            created("logs", "dir/a b+c.log", 12)
        );
    }

    #[test]
    fn an_sns_wrapped_notification_reads_the_same() {
        let sns = serde_json::json!({"Type": "Notification", "Message": PUT}).to_string();
        assert_eq!(
            parse(&sns, From::S3).unwrap(),
            created("logs", "dir/a b+c.log", 12)
        );
    }

    #[test]
    fn test_events_and_removals_are_skipped_and_garbage_is_an_error() {
        let test = r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-12-07T10:00:00.000Z","Bucket":"logs"}"#;
        assert!(matches!(parse(test, From::S3), Ok(Notice::Skip(_))));
        let removed = PUT.replace("ObjectCreated:Put", "ObjectRemoved:Delete");
        assert!(matches!(parse(&removed, From::S3), Ok(Notice::Skip(_))));
        assert!(
            parse("not json", From::S3)
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            parse(r#"{"Records":[]}"#, From::S3)
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            parse(r#"{"a":1}"#, From::S3)
                .unwrap_err()
                .contains("no `Records`")
        );
    }

    #[test]
    fn an_eventbridge_event_names_the_object() {
        let event = r#"{"version":"0","detail-type":"Object Created","source":"aws.s3","time":"2026-12-07T10:00:00Z","detail":{"bucket":{"name":"logs"},"object":{"key":"a b.log","size":5}}}"#;
        assert_eq!(
            parse(event, From::EventBridge).unwrap(),
            Notice::Created(Announced {
                bucket: "logs".to_owned(),
                key: "a b.log".to_owned(),
                size: 5,
                event_time: Some("2026-12-07T10:00:00Z".to_owned()),
            })
        );
    }

    #[test]
    fn form_decoding_keeps_a_stray_percent() {
        assert_eq!(form_decode("100%25+sure%"), "100% sure%");
        assert_eq!(form_decode("%zz%é"), "%zz%é");
        assert_eq!(form_decode("%E2%82%AC"), "€");
    }
}
