//! The host's limits and trap policy, over an inline WAT component (no wasm toolchain needed).

use std::time::{Duration, Instant};

use sluice_plugin::testing::hostile_component;
use sluice_plugin::{Decoded, Decoder, Limits, PluginError, PluginHost, RawRecord};

fn record(payload: &str) -> RawRecord {
    RawRecord {
        payload: payload.as_bytes().to_vec(),
        key: None,
        received_at_ms: 0,
        origin: format!("test:{payload}"),
    }
}

/// The WAT component loaded under `name`, with or without its `configure` export.
fn plugin(name: &str, configurable: bool) -> sluice_plugin::Plugin {
    let host = PluginHost::new(None).unwrap();
    host.load_bytes(
        name,
        &format!("{name}.wat"),
        hostile_component(configurable).as_bytes(),
    )
    .unwrap()
}

fn decoder(limits: Limits) -> Decoder {
    let plugin = plugin("hostile", false);
    Decoder::new(plugin, vec![], limits).unwrap()
}

fn ok() -> Decoded {
    Decoded::Events(vec![r#"{"wat":true}"#.to_owned()].into())
}

#[test]
fn well_behaved_records_get_their_outcomes() {
    let mut d = decoder(Limits::default());
    let out = d.decode(&[record("a"), record("M"), record("")]);
    assert_eq!(
        out,
        vec![ok(), Decoded::Malformed("bad record".into()), ok()]
    );
    assert_eq!(d.stats().faults, 0);
    assert_eq!(d.stats().instances, 1);
}

#[test]
fn a_trap_is_isolated_to_its_record() {
    let mut d = decoder(Limits::default());
    let out = d.decode(&[
        record("a"),
        record("b"),
        record("T"),
        record("c"),
        record("M"),
    ]);
    assert_eq!(out.len(), 5);
    assert_eq!(out[0], ok());
    assert_eq!(out[1], ok());
    assert!(
        matches!(&out[2], Decoded::Trapped(r) if r.contains("unreachable")),
        "{out:?}"
    );
    assert_eq!(out[3], ok());
    assert_eq!(out[4], Decoded::Malformed("bad record".into()));
    // Later batches still work, on a fresh instance.
    assert_eq!(d.decode(&[record("x")]), vec![ok()]);
}

#[test]
fn an_infinite_loop_hits_the_deadline() {
    let mut d = decoder(Limits {
        timeout: Duration::from_millis(50),
        ..Limits::default()
    });
    let started = Instant::now();
    let out = d.decode(&[record("a"), record("L")]);
    assert_eq!(out[0], ok());
    assert!(
        matches!(&out[1], Decoded::Trapped(r) if r.contains("deadline")),
        "{out:?}"
    );
    assert!(d.stats().deadline_hits >= 2);
    // Generous bound: the point is that it ends, not how fast.
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(d.decode(&[record("y")]), vec![ok()]);
}

#[test]
fn memory_growth_hits_the_cap() {
    let mut d = decoder(Limits {
        max_memory: 4 << 20,
        ..Limits::default()
    });
    let out = d.decode(&[record("G"), record("a")]);
    assert!(
        matches!(&out[0], Decoded::Trapped(r) if r.contains("memory limit of 4 MiB")),
        "{out:?}"
    );
    assert_eq!(out[1], ok());
}

#[test]
fn a_reply_of_the_wrong_length_is_a_fault() {
    let mut d = decoder(Limits::default());
    let out = d.decode(&[record("a"), record("W")]);
    assert_eq!(out[0], ok());
    assert!(
        matches!(&out[1], Decoded::Trapped(r) if r.contains("returned 2 outcomes for 1 records")),
        "{out:?}"
    );
}

#[test]
fn configure_errors_name_the_plugin() {
    let plugin = plugin("picky", true);
    assert_eq!(
        plugin.world(),
        "sluice:plugin/configurable-deserializer@0.1.0"
    );
    let good = Decoder::new(
        plugin.clone(),
        vec![("fine".into(), "1".into())],
        Limits::default(),
    );
    assert!(good.is_ok());
    let err = Decoder::new(plugin, vec![("bad".into(), "1".into())], Limits::default())
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "plugin `picky` refused its options: bad option `bad`"
    );
}

#[test]
fn options_for_a_plugin_without_configure_are_refused() {
    let plugin = plugin("plain", false);
    let err = Decoder::new(plugin, vec![("x".into(), "1".into())], Limits::default())
        .err()
        .unwrap();
    assert!(matches!(err, PluginError::NotConfigurable { .. }), "{err}");
}

#[test]
fn a_component_without_the_export_is_refused_naming_it() {
    let host = PluginHost::new(None).unwrap();
    let err = host
        .load_bytes("empty", "empty.wasm", b"(component)")
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`empty.wasm`") && text.contains("sluice:plugin/raw-byte-handler@0.1.0"),
        "{text}"
    );
}

#[test]
fn unknown_imports_are_refused() {
    let host = PluginHost::new(None).unwrap();
    let wat = r#"(component (import "acme:net/socket" (instance)))"#;
    let err = host
        .load_bytes("spy", "spy.wasm", wat.as_bytes())
        .unwrap_err();
    assert!(err.to_string().contains("`acme:net/socket`"), "{err}");
}

#[test]
fn compiled_components_are_cached_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let host = PluginHost::new(Some(dir.path().to_owned())).unwrap();
    host.load_bytes("a", "a.wat", hostile_component(false).as_bytes())
        .unwrap();
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let path = e.as_ref().unwrap().path();
            path.extension().is_some_and(|x| x == "cwasm")
        })
        .collect();
    assert_eq!(entries.len(), 1);
    // A second host loads from the cache and the plugin still works.
    let host = PluginHost::new(Some(dir.path().to_owned())).unwrap();
    let plugin = host
        .load_bytes("a", "a.wat", hostile_component(false).as_bytes())
        .unwrap();
    let mut d = Decoder::new(plugin, vec![], Limits::default()).unwrap();
    assert_eq!(d.decode(&[record("a")]), vec![ok()]);
}

#[test]
fn precompiled_files_are_refused() {
    let host = PluginHost::new(None).unwrap();
    let engine = wasmtime_engine_bytes(&host);
    let err = host
        .load_bytes("native", "native.wasm", &engine)
        .unwrap_err();
    assert!(matches!(err, PluginError::Precompiled { .. }), "{err}");
}

fn wasmtime_engine_bytes(host: &PluginHost) -> Vec<u8> {
    host.precompile_for_tests(hostile_component(false).as_bytes())
}

#[test]
fn instances_are_reused_then_recycled_after_n_batches() {
    let mut d = decoder(Limits {
        recycle_after: 3,
        ..Limits::default()
    });
    for _ in 0..7 {
        assert_eq!(d.decode(&[record("a")]), vec![ok()]);
    }
    let stats = d.stats();
    // Batches 1-3 on the first instance, 4-6 on the second, 7 on the third.
    assert_eq!((stats.instances, stats.recycled), (3, 2), "{stats:?}");
    // The WAT component declares one 64 KiB page.
    assert_eq!(stats.peak_memory, 64 << 10);
}

#[test]
fn without_recycling_one_instance_serves_every_batch() {
    let mut d = decoder(Limits {
        recycle_after: 0,
        ..Limits::default()
    });
    for _ in 0..50 {
        assert_eq!(d.decode(&[record("a"), record("b")]), vec![ok(), ok()]);
    }
    assert_eq!((d.stats().instances, d.stats().recycled), (1, 0));
}

#[test]
fn each_front_refuses_a_plugin_of_another_kind_naming_the_worlds_it_expected() {
    let plugin = plugin("hostile", false);
    assert_eq!(plugin.kind(), sluice_plugin::PluginKind::Deserializer);
    let as_policy = sluice_plugin::BufferPolicy::new(plugin.clone(), vec![], Limits::default())
        .expect_err("a deserializer is not a buffer policy");
    assert!(matches!(as_policy, PluginError::WrongWorld { .. }));
    assert_eq!(
        as_policy.to_string(),
        "plugin `hostile.wat` does not implement the world `sluice:plugin/buffer-plugin@0.2.0`: \
         it is a `sluice:plugin/deserializer@0.1.0` plugin, not a buffer policy"
    );
    let as_processor = sluice_plugin::Processor::new(plugin, vec![], Limits::default())
        .err()
        .expect("a deserializer is not a processor")
        .to_string();
    assert!(
        as_processor.contains(
            "the world `sluice:plugin/processor-plugin@0.3.0` or \
             `sluice:plugin/processor-plugin@0.2.0`: it is a"
        ),
        "{as_processor}"
    );
}

#[test]
fn a_component_exporting_no_known_interface_is_judged_against_the_oldest_world() {
    let host = PluginHost::new(None).unwrap();
    let empty = "(component)";
    let err = host
        .load_bytes("empty", "empty.wat", empty.as_bytes())
        .expect_err("an empty component implements no world")
        .to_string();
    assert!(
        err.starts_with(
            "plugin `empty.wat` does not implement the world `sluice:plugin/deserializer@0.1.0`: "
        ),
        "{err}"
    );
}
