//! The example plugins, built from `plugins/` for wasm32-wasip2, through the real host.

use sluice_plugin::{Decoded, Decoder, Limits, PluginHost, RawRecord};
use sluice_tests::plugin_dir;

fn record(payload: &str) -> RawRecord {
    RawRecord {
        payload: payload.as_bytes().to_vec(),
        key: None,
        received_at_ms: 1,
        origin: "test".into(),
    }
}

fn decoder(name: &str) -> Decoder {
    let host = PluginHost::new(None).unwrap();
    let plugin = host
        .load_file(&plugin_dir().join(format!("{name}.wasm")))
        .unwrap();
    Decoder::new(plugin, vec![], Limits::default()).unwrap()
}

fn events(texts: &[&str]) -> Decoded {
    Decoded::Events(
        texts
            .iter()
            .map(|t| (*t).to_owned())
            .collect::<Vec<_>>()
            .into(),
    )
}

/// The json plugin's scan uses vector instructions (simd128): the same answers from the
/// optimized code and from the baseline code (Winch) a first start runs.
#[test]
fn json_takes_arrays_of_objects_and_single_objects() {
    let host = PluginHost::new(None).unwrap();
    let path = plugin_dir().join("json.wasm");
    for plugin in [
        host.load_file(&path).unwrap(),
        host.load_file_quickly(&path).unwrap(),
    ] {
        json_answers(Decoder::new(plugin, vec![], Limits::default()).unwrap());
    }
}

fn json_answers(mut d: Decoder) {
    let long = format!(
        r#"{{"log":"{} é 😀 \"quoted\" {}"}}"#,
        "a".repeat(40),
        "b".repeat(17)
    );
    let out = d.decode(&[
        record(r#"[{"log":"a"},{"log":"b"}]"#),
        record(r#"{"log":"c"}"#),
        record("[1, 2]"),
        record("not json"),
        record("42"),
        record("[]"),
        record(&format!(" [{long},\n{long}] ")),
        record(&long.replace('é', "\t")),
    ]);
    assert_eq!(out[6], events(&[&long, &long]));
    assert!(
        matches!(&out[7], Decoded::Malformed(r) if r.contains("control character")),
        "a raw tab in a string: {:?}",
        out[7]
    );
    assert_eq!(out[0], events(&[r#"{"log":"a"}"#, r#"{"log":"b"}"#]));
    assert_eq!(out[1], events(&[r#"{"log":"c"}"#]));
    assert_eq!(
        out[2],
        Decoded::Malformed("element 0 of the array is a number, not an object".into())
    );
    assert!(
        matches!(&out[3], Decoded::Malformed(r) if r.starts_with("invalid JSON")),
        "{:?}",
        out[3]
    );
    assert_eq!(
        out[4],
        Decoded::Malformed("expected a JSON object or array of objects, got a number".into())
    );
    assert_eq!(out[5], events(&[]));
}

#[test]
fn ndjson_gives_one_event_per_line_and_names_the_bad_line() {
    let mut d = decoder("ndjson");
    let out = d.decode(&[
        record("{\"a\":1}\n\n{\"b\":2}\r\n"),
        record("{\"a\":1}\n{\"b\":\n"),
    ]);
    assert_eq!(out[0], events(&[r#"{"a":1}"#, r#"{"b":2}"#]));
    assert!(
        matches!(&out[1], Decoded::Malformed(r) if r.starts_with("line 2:")),
        "{:?}",
        out[1]
    );
}

#[test]
fn json_refuses_unknown_options_at_startup() {
    let host = PluginHost::new(None).unwrap();
    let plugin = host.load_file(&plugin_dir().join("json.wasm")).unwrap();
    let err = Decoder::new(
        plugin,
        vec![("flatten".into(), "true".into())],
        Limits::default(),
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "plugin `json` refused its options: unknown option `flatten`: the json deserializer takes no options"
    );
}

#[test]
fn real_plugins_import_only_wasi_and_the_contracts_types() {
    let host = PluginHost::new(None).unwrap();
    for name in ["json", "ndjson"] {
        let plugin = host
            .load_file(&plugin_dir().join(format!("{name}.wasm")))
            .unwrap();
        assert!(
            plugin
                .imports()
                .iter()
                .all(|i| i.starts_with("wasi:") || i == "sluice:plugin/types@0.2.0"),
            "{:?}",
            plugin.imports()
        );
    }
}
