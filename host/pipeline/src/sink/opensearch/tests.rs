use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;
use sluice_buffer::Position;
use sluice_config::Resolve;
use sluice_config::sink::opensearch::OpenSearchSink as Config;

use super::*;

/// The sink of `yaml` (nothing is called: its host does not exist).
async fn sink(yaml: &str) -> OpenSearchSink {
    let config: Config = serde_yaml::from_str(yaml).unwrap();
    let s = config.resolve("p").unwrap();
    let builtin = builtin::builtin(s.index_type);
    OpenSearchSink {
        client: Client::new(&s).await.unwrap(),
        encoder: Arc::new(Encoder::new(&s, "i", None)),
        plan: plan(&s, builtin.as_ref(), "i").unwrap(),
        pattern: "i".into(),
        dynamic: false,
        ready: tokio::sync::Mutex::new(HashSet::new()),
        threshold: Threshold {
            event_count: None,
            maximum_size: None,
            event_collect_timeout: None,
        },
        retry: Retry::default(),
        exactly_once: s.exactly_once,
        es6: false,
        external_versions: false,
        lookup_field: None,
        metrics: Metrics::new("p", "s"),
    }
}

fn from_buffer(n: usize) -> Provenance {
    Provenance {
        at: (0..n)
            .map(|i| {
                Some((
                    Position {
                        topic: "buf".into(),
                        partition: 2,
                        offset: 40 + i as i64 / 2,
                    },
                    (i % 2) as u32,
                ))
            })
            .collect(),
        ..Provenance::default()
    }
}

fn line(action: serde_json::Value, doc: serde_json::Value) -> Bytes {
    Bytes::from(format!("{action}\n{doc}"))
}

#[tokio::test]
async fn documents_without_an_id_are_named_by_their_buffer_position() {
    let s = sink("hosts: [http://127.0.0.1:1]\nindex: i\n").await;
    let events = [
        line(json!({"index": {"_index": "i"}}), json!({"a": 1})),
        line(json!({"create": {"_index": "i"}}), json!({"a": 2})),
        line(json!({"index": {"_index": "i", "_id": "mine"}}), json!({"a": 3})),
    ];
    let (items, refused) = s.items(&events, &from_buffer(3));
    assert!(refused.is_empty());
    let ids: Vec<serde_json::Value> = items
        .iter()
        .map(|i| serde_json::from_slice::<serde_json::Value>(&i.action).unwrap())
        .collect();
    assert_eq!(ids[0]["index"]["_id"], "buf/2/40/0");
    assert_eq!(ids[1]["create"]["_id"], "buf/2/40/1");
    assert_eq!(ids[2]["index"]["_id"], "mine");
    assert_eq!(
        items.iter().map(|i| i.chosen_id).collect::<Vec<_>>(),
        [true, true, false]
    );
    // Without a position (a memory buffer), or with `exactly_once: false`: OpenSearch's ids.
    let (items, _) = s.items(&events[..1], &Provenance::default());
    assert!(!items[0].action.windows(5).any(|w| w == b"\"_id\""));
    let off = sink("hosts: [http://127.0.0.1:1]\nindex: i\nexactly_once: false\n").await;
    let (items, _) = off.items(&events[..1], &from_buffer(1));
    assert!(!items[0].chosen_id);
}

#[tokio::test]
async fn item_answers_decide_each_documents_fate() {
    let s = sink("hosts: [http://127.0.0.1:1]\nindex: i\n").await;
    let events = [
        line(json!({"index": {"_index": "i"}}), json!({"a": 1})),
        line(json!({"index": {"_index": "i"}}), json!({"a": 2})),
        line(json!({"create": {"_index": "i"}}), json!({"a": 3})),
        line(json!({"create": {"_index": "i", "_id": "u"}}), json!({"a": 4})),
        line(json!({"index": {"_index": "i"}}), json!({"a": 5})),
    ];
    let (items, _) = s.items(&events, &from_buffer(5));
    let refs: Vec<&Item> = items.iter().collect();
    let answer = json!({"took": 3, "errors": true, "items": [
        {"index": {"_index": "i", "_id": "x", "status": 201}},
        {"index": {"_index": "i", "_id": "x", "status": 429, "error": {"type": "es_rejected_execution_exception", "reason": "queue full"}}},
        {"create": {"_index": "i", "_id": "x", "status": 409, "error": {"type": "version_conflict_engine_exception", "reason": "exists"}}},
        {"create": {"_index": "i", "_id": "u", "status": 409, "error": {"type": "version_conflict_engine_exception", "reason": "exists"}}},
        {"index": {"_index": "i", "_id": "x", "status": 400, "error": {"type": "mapper_parsing_exception", "reason": "failed to parse field [a]", "caused_by": {"type": "illegal_argument_exception", "reason": "not a date"}}}},
    ]});
    let fates = s.item_fates(&refs, answer.to_string().as_bytes());
    let describe: Vec<String> = fates
        .iter()
        .map(|f| match f {
            Fate::Taken => "taken".into(),
            Fate::Refused(r) => format!("refused {r}"),
            Fate::Retry(r) => format!("retry {r}"),
        })
        .collect();
    assert_eq!(
        describe,
        [
            "taken",
            "retry 429 es_rejected_execution_exception: queue full",
            // A conflict on an id sluice chose: indexed by an earlier read.
            "taken",
            // On the user's id: refused, as in Data Prepper.
            "refused 409 version_conflict_engine_exception: exists",
            "refused 400 mapper_parsing_exception: failed to parse field [a] caused by illegal_argument_exception: not a date",
        ]
    );
}

#[tokio::test]
async fn dead_letters_hold_the_document_not_the_action() {
    let s = sink("hosts: [http://127.0.0.1:1]\nindex: i\n").await;
    let l = line(json!({"index": {"_index": "i"}}), json!({"a": 1}));
    assert_eq!(&s.payload(&l)[..], br#"{"a":1}"#);
    let error = Bytes::from(json!({ERROR_KEY: "no index", "document": {"b": 2}}).to_string());
    assert_eq!(&s.payload(&error)[..], br#"{"b":2}"#);
    let (items, refused) = s.items(&[error], &Provenance::default());
    assert!(items.is_empty());
    assert_eq!(refused, [(0, "no index".to_owned())]);
}

#[test]
fn an_id_past_512_bytes_names_its_topic_by_hash() {
    let short = Position {
        topic: "logs".into(),
        partition: 2,
        offset: 7,
    };
    assert_eq!(super::position_id(&short, 1), "logs/2/7/1");
    let key = "k".repeat(1000);
    let long = Position {
        topic: format!("s3://bucket/{key}").into(),
        ..short
    };
    let id = super::position_id(&long, 0);
    assert!(id.len() <= 512 && id.starts_with("sha256:") && id.ends_with("/2/7/0"), "{id}");
    let other = Position {
        topic: format!("s3://bucket/{key}x").into(),
        ..long.clone()
    };
    assert_ne!(super::position_id(&other, 0), id, "another object, another id");
}
