//! A record's content type as the otlp deserializer reads it: whether the body is OTLP/JSON
//! (media type `application/json`) or protobuf (anything else), and the media-type
//! parameters after it (`application/x-protobuf; otlp=traces`), where a source that receives
//! every signal names the one of each record.

/// Whether `content_type`'s media type (before any `;`) is `application/json`, in any case.
pub fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("");
    essence.trim().eq_ignore_ascii_case("application/json")
}

/// The value of `content_type`'s first parameter called `name` (in any case), without the
/// whitespace around it or the quotes of a quoted string; `None` if it has no such parameter.
/// Parameters that are not `name=value` are skipped.
pub fn parameter<'a>(content_type: &'a str, name: &str) -> Option<&'a str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (key, value) = p.split_once('=')?;
        if !key.trim().eq_ignore_ascii_case(name) {
            return None;
        }
        let value = value.trim();
        Some(
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{is_json, parameter};

    #[test]
    fn json_is_the_media_type_whatever_its_parameters_and_case() {
        assert!(is_json("application/json"));
        assert!(is_json("application/json; otlp=logs"));
        assert!(is_json("Application/JSON;charset=utf-8"));
        assert!(is_json("  application/json  ; otlp=metrics"));
        assert!(!is_json("application/x-protobuf; otlp=logs"));
        assert!(!is_json("application/jsonl"));
        assert!(!is_json("text/plain; x=application/json"));
        assert!(!is_json(""));
    }

    #[test]
    fn a_parameter_is_found_by_name_in_any_case_and_spacing() {
        let otlp = |t| parameter(t, "otlp");
        assert_eq!(otlp("application/x-protobuf; otlp=traces"), Some("traces"));
        assert_eq!(otlp("application/x-protobuf;otlp=traces"), Some("traces"));
        assert_eq!(
            otlp("application/json ; OTLP = logs ; charset=utf-8"),
            Some("logs")
        );
        assert_eq!(
            otlp("application/json; charset=utf-8;Otlp=metrics"),
            Some("metrics")
        );
        assert_eq!(
            otlp("application/x-protobuf; otlp=\"traces\""),
            Some("traces")
        );
        assert_eq!(otlp("application/x-protobuf; otlp=spans"), Some("spans"));
        assert_eq!(otlp("application/x-protobuf; otlp="), Some(""));
        assert_eq!(
            otlp("application/x-protobuf; otlp=logs; otlp=traces"),
            Some("logs")
        );
    }

    #[test]
    fn no_parameter_is_none() {
        let otlp = |t| parameter(t, "otlp");
        assert_eq!(otlp("application/x-protobuf"), None);
        assert_eq!(otlp("application/x-protobuf; charset=utf-8"), None);
        assert_eq!(otlp("application/x-protobuf; otlp"), None);
        assert_eq!(otlp("application/x-protobuf; xotlp=logs"), None);
        // The media type itself is no parameter.
        assert_eq!(otlp("otlp=logs"), None);
        assert_eq!(otlp(""), None);
    }
}
