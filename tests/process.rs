//! Processors (contract 0.2): the example `redact` component, built from `plugins/`, through
//! the real host's processor adapter.

use sluice_plugin::{
    Decoder, Event, Events, Limits, PluginError, PluginHost, Processed, Processor,
};
use sluice_tests::plugin_dir;

fn plugin(name: &str) -> sluice_plugin::Plugin {
    PluginHost::new(None)
        .unwrap()
        .load_file(&plugin_dir().join(format!("{name}.wasm")))
        .unwrap()
}

fn redact(keys: &str) -> Result<Processor, PluginError> {
    Processor::new(
        plugin("redact"),
        vec![("keys".to_owned(), keys.to_owned())],
        Limits::default(),
    )
}

fn event(body: &str) -> Event<'_> {
    Event {
        body: body.as_bytes(),
        received_at_ms: 1,
        origin: "test",
    }
}

#[test]
fn redact_masks_named_keys_keeps_the_rest_and_fails_what_is_not_an_object() {
    let mut p = redact(r#"["password"]"#).unwrap();
    assert_eq!(p.plugin().world(), "sluice:plugin/processor-plugin@0.2.0");
    let out = p.process(&[
        event(r#"{"user":"ann","password":"hunter2"}"#),
        event(r#"{"user":"bob"}"#),
        event("[1,2]"),
    ]);
    assert_eq!(
        out,
        vec![
            Processed::Replace(Events::from(vec![
                r#"{"password":"***","user":"ann"}"#.to_owned()
            ])),
            Processed::Keep,
            Processed::Failed(
                "not a JSON object: invalid type: sequence, expected a map at line 1 column 0"
                    .to_owned()
            ),
        ]
    );
    assert_eq!(p.stats().calls, 1, "one call for the whole batch");
}

#[test]
fn redact_refuses_missing_or_malformed_options_by_name() {
    let err = |r: Result<Processor, PluginError>| r.err().unwrap().to_string();
    assert_eq!(
        err(redact("password")),
        "plugin `redact` refused its options: `keys` must be a list of key names, got `password`"
    );
    let none = Processor::new(plugin("redact"), vec![], Limits::default());
    assert_eq!(
        err(none),
        "plugin `redact` refused its options: `keys` is required: the keys whose values to mask"
    );
}

#[test]
fn a_plugin_of_one_kind_is_refused_where_another_is_expected() {
    let as_decoder = Decoder::new(plugin("redact"), vec![], Limits::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        as_decoder
            .contains("it is a `sluice:plugin/processor-plugin@0.2.0` plugin, not a deserializer"),
        "{as_decoder}"
    );
    let as_processor = Processor::new(plugin("json"), vec![], Limits::default())
        .err()
        .unwrap()
        .to_string();
    assert!(as_processor.contains("not a processor"), "{as_processor}");
}
