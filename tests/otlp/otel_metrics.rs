//! `otel_metrics_source` → `otel_metrics` → file sink, with a data point of every OTLP metric
//! kind from the OpenTelemetry Python SDK (a summary built with the OTLP protobuf classes, as
//! no SDK instrument makes one): each document is compared, field by field, with the document
//! Data Prepper's `OTelMetricsRawProcessor` makes of what the script says it sent
//! (`JacksonSum`, `JacksonGauge`, `JacksonHistogram`, `JacksonExponentialHistogram`,
//! `JacksonSummary`), built here from the SDK's own account of its data.

use std::time::Duration;

use serde_json::{Map, Value, json};
use sluice_tests::{Sluice, json_lines, kafka_bootstrap, unique};

use super::export;

/// Java's `Instant.ofEpochSecond(0, nanos).toString()` (Data Prepper's
/// `convertUnixNanosToISO8601`): the fraction in groups of three digits, none when zero.
fn instant(nanos: u64) -> String {
    let (secs, frac) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    // Howard Hinnant's `civil_from_days`.
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let base = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    );
    if frac == 0 {
        format!("{base}Z")
    } else if frac % 1_000_000 == 0 {
        format!("{base}.{:03}Z", frac / 1_000_000)
    } else if frac % 1_000 == 0 {
        format!("{base}.{:06}Z", frac / 1_000)
    } else {
        format!("{base}.{frac:09}Z")
    }
}

/// The SDK's JSON number (an integer or a double) as a double.
fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a count: {v}"))
}

/// A key as Data Prepper writes an attribute's name: dots as `@`.
fn at(prefix: &str, name: &str) -> String {
    format!("{prefix}{}", name.replace('.', "@"))
}

/// Data Prepper's `createBuckets`.
fn buckets(counts: &[Value], bounds: &[Value]) -> Value {
    let max = f64::from(f32::MAX);
    let list: Vec<Value> = counts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let lo = if i == 0 { -max } else { f(&bounds[i - 1]) };
            let hi = bounds.get(i).map_or(max, f);
            json!({"min": lo, "max": hi, "count": u(c)})
        })
        .collect();
    Value::Array(list)
}

/// Data Prepper's `createExponentialBuckets` (bounds from its table `base^(±i)`, the sign the
/// offset's).
fn exponential_buckets(side: &Value, scale: i64) -> Value {
    let offset = side["offset"].as_i64().unwrap();
    let base = 2f64.powf(2f64.powf(-(scale as f64)));
    let sign = if offset < 0 { -1.0 } else { 1.0 };
    let skip = offset.unsigned_abs() as f64;
    let list: Vec<Value> = side["bucket_counts"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let k = skip + i as f64;
            json!({"min": base.powf(sign * k), "max": base.powf(sign * (k + 1.0)), "count": u(c)})
        })
        .collect();
    Value::Array(list)
}

fn temporality(t: &Value) -> &'static str {
    match t.as_i64() {
        Some(1) => "AGGREGATION_TEMPORALITY_DELTA",
        Some(2) => "AGGREGATION_TEMPORALITY_CUMULATIVE",
        _ => "AGGREGATION_TEMPORALITY_UNSPECIFIED",
    }
}

/// The documents Data Prepper makes of the SDK's `MetricsData` JSON, by metric name (an
/// exponential histogram beyond scale 10 makes none).
fn expected_from_sdk(sdk: &Value) -> Vec<Value> {
    let mut docs = Vec::new();
    for rm in sdk["resource_metrics"].as_array().unwrap() {
        let mut origin = Map::new();
        let resource = rm["resource"]["attributes"].as_object().unwrap();
        origin.insert("serviceName".into(), resource["service.name"].clone());
        for (k, v) in resource {
            origin.insert(at("resource.attributes.", k), v.clone());
        }
        for sm in rm["scope_metrics"].as_array().unwrap() {
            let mut origin = origin.clone();
            origin.insert(
                "instrumentationScope.name".into(),
                sm["scope"]["name"].clone(),
            );
            origin.insert(
                "instrumentationScope.version".into(),
                sm["scope"]["version"].clone(),
            );
            for m in sm["metrics"].as_array().unwrap() {
                let data = &m["data"];
                for p in data["data_points"].as_array().unwrap() {
                    let mut d = origin.clone();
                    d.insert("name".into(), m["name"].clone());
                    d.insert("description".into(), m["description"].clone());
                    d.insert("unit".into(), m["unit"].clone());
                    // A gauge's point has no start time: Java writes the epoch.
                    d.insert(
                        "startTime".into(),
                        instant(p["start_time_unix_nano"].as_u64().unwrap_or(0)).into(),
                    );
                    d.insert("time".into(), instant(u(&p["time_unix_nano"])).into());
                    d.insert("schemaUrl".into(), rm["schema_url"].clone());
                    d.insert("flags".into(), p["flags"].as_u64().unwrap_or(0).into());
                    d.insert("exemplars".into(), json!([]));
                    for (k, v) in p["attributes"].as_object().unwrap() {
                        d.insert(at("metric.attributes.", k), v.clone());
                    }
                    let t = temporality(&data["aggregation_temporality"]);
                    if p["scale"].is_i64() {
                        let scale = p["scale"].as_i64().unwrap();
                        if scale.abs() > 10 {
                            continue;
                        }
                        d.insert("kind".into(), "EXPONENTIAL_HISTOGRAM".into());
                        d.insert("sum".into(), f(&p["sum"]).into());
                        d.insert("count".into(), p["count"].clone());
                        d.insert("scale".into(), scale.into());
                        d.insert("zeroCount".into(), p["zero_count"].clone());
                        d.insert("positive".into(), p["positive"]["bucket_counts"].clone());
                        d.insert("negative".into(), p["negative"]["bucket_counts"].clone());
                        d.insert("positiveOffset".into(), p["positive"]["offset"].clone());
                        d.insert("negativeOffset".into(), p["negative"]["offset"].clone());
                        d.insert("aggregationTemporality".into(), t.into());
                        d.insert(
                            "positiveBuckets".into(),
                            exponential_buckets(&p["positive"], scale),
                        );
                        d.insert(
                            "negativeBuckets".into(),
                            exponential_buckets(&p["negative"], scale),
                        );
                    } else if p["bucket_counts"].is_array() {
                        let counts = p["bucket_counts"].as_array().unwrap();
                        let bounds = p["explicit_bounds"].as_array().unwrap();
                        d.insert("kind".into(), "HISTOGRAM".into());
                        d.insert("sum".into(), f(&p["sum"]).into());
                        d.insert("count".into(), p["count"].clone());
                        d.insert("bucketCounts".into(), counts.len().into());
                        d.insert("bucketCountsList".into(), Value::Array(counts.clone()));
                        d.insert("explicitBoundsCount".into(), bounds.len().into());
                        let doubles: Vec<Value> = bounds.iter().map(|b| f(b).into()).collect();
                        d.insert("explicitBounds".into(), Value::Array(doubles));
                        d.insert("aggregationTemporality".into(), t.into());
                        d.insert("buckets".into(), buckets(counts, bounds));
                    } else if data["is_monotonic"].is_boolean() {
                        d.insert("kind".into(), "SUM".into());
                        d.insert("value".into(), f(&p["value"]).into());
                        d.insert("isMonotonic".into(), data["is_monotonic"].clone());
                        d.insert("aggregationTemporality".into(), t.into());
                    } else {
                        d.insert("kind".into(), "GAUGE".into());
                        d.insert("value".into(), f(&p["value"]).into());
                    }
                    docs.push(Value::Object(d));
                }
            }
        }
    }
    docs
}

/// The summary request's document (protobuf JSON: camelCase, 64-bit integers as text).
fn expected_summary(request: &Value) -> Value {
    let rm = &request["resourceMetrics"][0];
    let sm = &rm["scopeMetrics"][0];
    let m = &sm["metrics"][0];
    let p = &m["summary"]["dataPoints"][0];
    let nanos = |k: &str| p[k].as_str().unwrap().parse::<u64>().unwrap();
    let quantiles: Vec<Value> = p["quantileValues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| json!({"quantile": f(&q["quantile"]), "value": f(&q["value"])}))
        .collect();
    json!({
        "name": m["name"], "description": m["description"], "unit": m["unit"],
        "kind": "SUMMARY",
        "startTime": instant(nanos("startTimeUnixNano")), "time": instant(nanos("timeUnixNano")),
        "schemaUrl": "", "flags": 0, "exemplars": [],
        "serviceName": "checkout",
        "resource.attributes.service@name": "checkout",
        "instrumentationScope.name": sm["scope"]["name"],
        "instrumentationScope.version": sm["scope"]["version"],
        "metric.attributes.method": "Get",
        "sum": f(&p["sum"]),
        "count": p["count"].as_str().unwrap().parse::<u64>().unwrap(),
        "quantiles": quantiles,
        "quantileValuesCount": quantiles.len(),
    })
}

/// Whether two JSON values are equal, doubles to a relative 1e-12 (bounds computed with `pow`
/// on two machines' libm may differ in the last bit).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// `actual` against `expected`, key by key.
fn compare(actual: &Value, expected: &Value) {
    let name = &expected["name"];
    let (a, e) = (actual.as_object().unwrap(), expected.as_object().unwrap());
    for (k, v) in e {
        let got = a
            .get(k)
            .unwrap_or_else(|| panic!("`{name}` has no `{k}`: {actual}"));
        assert!(
            same(got, v),
            "`{name}`.`{k}`: got {got}, Data Prepper writes {v}"
        );
    }
    for k in a.keys() {
        assert!(
            e.contains_key(k),
            "`{name}` has `{k}`, which Data Prepper does not write: {actual}"
        );
    }
}

#[test]
fn otel_metrics_makes_data_preppers_document_of_every_metric_kind() {
    let topic = unique("otel-metrics");
    let s = Sluice::start(&format!(
        r#"
metrics:
  delay: 20ms
  source:
    otel_metrics_source:
      port: {{port}}
      ssl: false
      unframed_requests: true
  buffer:
    kafka:
      bootstrap_servers: [{bootstrap}]
      produce_timeout: 2s
      topics:
        - name: {topic}
          group_id: {topic}-g
          create_topic: true
  processor:
    - otel_metrics:
  sink:
    - file:
        path: {{dir}}/out/events.jsonl
  dlq_path: {{dir}}/dlq.jsonl
"#,
        bootstrap = kafka_bootstrap()
    ));
    let endpoint = format!(
        "http://127.0.0.1:{}/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        s.port
    );
    let sent = export("send_metric_kinds.py", &endpoint, 1, &[]);
    assert!(
        sent.status.success(),
        "the exporter was refused: {}\n{}",
        String::from_utf8_lossy(&sent.stderr),
        s.log()
    );
    let sent: Value = serde_json::from_slice(&sent.stdout).unwrap();
    let mut expected = expected_from_sdk(&sent["sdk"]);
    expected.push(expected_summary(&sent["summary"]));
    let mut kinds: Vec<&str> = expected
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    assert_eq!(
        kinds,
        [
            "EXPONENTIAL_HISTOGRAM",
            "GAUGE",
            "HISTOGRAM",
            "SUM",
            "SUMMARY"
        ],
        "every kind once, the scale-20 exponential histogram left out: {expected:?}"
    );

    let out = s.path("out/events.jsonl");
    s.wait_for("5 metric documents", Duration::from_secs(60), || {
        json_lines(&out).len() >= 5
    });
    std::thread::sleep(Duration::from_millis(500));
    let events = json_lines(&out);
    assert_eq!(events.len(), 5, "one per data point kept: {events:?}");
    for e in &expected {
        let actual = events
            .iter()
            .find(|a| a["name"] == e["name"])
            .unwrap_or_else(|| panic!("no `{}` in {events:?}", e["name"]));
        compare(actual, e);
    }
    // The exponential histogram at scale 20 was sent, and dropped (counted as dropped).
    assert!(events.iter().all(|e| e["name"] != "fine.latency"));
    assert_eq!(s.metric("sluice_eventsDropped", "metrics"), Some(1.0));
    assert!(json_lines(&s.path("dlq.jsonl")).is_empty());
}
