//! `geoip`, as Data Prepper's `GeoIPProcessor` with its `GeoLite2DatabaseReader` and
//! `GeoIP2DatabaseReader`: for each entry, the IP address at `source` is looked up in the
//! MaxMind databases and the fields asked for are written, as an object, at `target`.
//!
//! Which databases an entry reads follows from its fields (`GeoIPDatabase.
//! selectDatabasesForFields`): a field that the Country database has is read from it, not from
//! the City database, unless a City field is asked for too (then City gives both). So an entry
//! asking only for `country_name` with only a City database finds nothing, as in Data Prepper.
//! A field is written once, the first value found, and never as null; `location` is
//! `{lat, lon}`; `is_country_in_european_union` is false where the record says nothing (Java's
//! primitive getter); `network` and `ip` as Java writes addresses (IPv6 uncompressed).
//!
//! An address that is missing, empty, not an address, or private or loopback (Java's
//! `isSiteLocalAddress`, `isLoopbackAddress`; unless `lookup_private_addresses`) tags the event
//! `tags_on_no_valid_ip`; one no database holds, `tags_on_ip_not_found`; a database that fails
//! to read (or an ASN field asked of an enterprise database, which Data Prepper's reader cannot
//! answer: it fails the batch), `tags_on_engine_failure`. The event goes on either way.
//!
//! Data Prepper's processor counters (`eventsProcessed`, `eventsSucceeded`, `eventsFailed`,
//! ...) are not kept: sluice's built-in processors have no per-processor series yet.

use std::net::{IpAddr, Ipv6Addr};
use std::path::Path;

use maxminddb::Reader;
use serde_json::{Map, Value, json};
use sluice_config::processor::geoip::{self as config, FIELDS};
use sluice_event::{Event, Expression, Key};

use crate::{Apply, BuildError, BuildProcessor, Failure, Fate};

/// A set of Data Prepper's `GeoIPDatabase`s, as bits.
const COUNTRY: u8 = 1;
const CITY: u8 = 2;
const ASN: u8 = 4;
const ENTERPRISE: u8 = 8;

/// The databases holding each field of [`FIELDS`] (Data Prepper's `GeoIPField`).
const FIELD_DATABASES: [u8; 31] = {
    const CCE: u8 = CITY | COUNTRY | ENTERPRISE;
    const CE: u8 = CITY | ENTERPRISE;
    const E: u8 = ENTERPRISE;
    [
        CCE, CCE, CCE, CCE, CCE, E, E, E, E, E, E, CE, E, CE, CE, CE, CE, CE, CE, CE, E, E, E, E,
        E, E, E, ASN, ASN, ASN, ASN,
    ]
};

/// The part of a record each field comes from, in the order Data Prepper's readers extract
/// them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Continent,
    Country,
    Registered,
    Represented,
    City,
    Location,
    Postal,
    MostSpecific,
    LeastSpecific,
    Asn,
}

fn part(field: usize) -> Part {
    match field {
        0..=1 => Part::Continent,
        2..=5 => Part::Country,
        6..=7 => Part::Registered,
        8..=10 => Part::Represented,
        11..=12 => Part::City,
        13..=18 => Part::Location,
        19..=20 => Part::Postal,
        21..=23 => Part::MostSpecific,
        24..=26 => Part::LeastSpecific,
        _ => Part::Asn,
    }
}

/// The `*_confidence` fields, written from an enterprise database only.
fn is_confidence(field: usize) -> bool {
    matches!(field, 5 | 12 | 20 | 23 | 26)
}

/// `geoip`, built: its databases open, each entry's fields and databases chosen.
pub struct GeoIp {
    databases: Databases,
    entries: Vec<Entry>,
    tags_on_engine_failure: Vec<String>,
    tags_on_ip_not_found: Vec<String>,
    tags_on_no_valid_ip: Vec<String>,
    lookup_private_addresses: bool,
}

/// The open databases: GeoLite2's, or one enterprise database.
#[allow(
    clippy::large_enum_variant,
    reason = "one per processor, built once: its size does not matter"
)]
enum Databases {
    Lite {
        city: Option<Reader<Vec<u8>>>,
        country: Option<Reader<Vec<u8>>>,
        asn: Option<Reader<Vec<u8>>>,
    },
    Enterprise(Reader<Vec<u8>>),
}

struct Entry {
    source: Key,
    target: Key,
    /// Indices into [`FIELDS`], in its order.
    fields: Vec<usize>,
    /// The databases the fields need (`selectDatabasesForFields`).
    databases: u8,
}

/// Why a lookup wrote nothing.
enum Miss {
    NotFound,
    Engine(String),
}

fn open(
    path: &Option<std::path::PathBuf>,
    key: &str,
) -> Result<Option<Reader<Vec<u8>>>, BuildError> {
    path.as_deref()
        .map(|p: &Path| {
            Reader::open_readfile(p).map_err(|e| BuildError {
                key: format!("databases.{key}"),
                message: format!(
                    "`databases.{key}`: `{}` is not a readable MaxMind database: {e}",
                    p.display()
                ),
            })
        })
        .transpose()
}

impl BuildProcessor for config::GeoIp {
    type Processor = GeoIp;

    fn when(&self) -> Option<&Expression> {
        self.geoip_when.as_ref()
    }

    fn build(&self) -> Result<GeoIp, BuildError> {
        let dbs = self.databases.clone().unwrap_or_default();
        let databases = match open(&dbs.enterprise, "enterprise")? {
            Some(reader) => Databases::Enterprise(reader),
            None => Databases::Lite {
                city: open(&dbs.city, "city")?,
                country: open(&dbs.country, "country")?,
                asn: open(&dbs.asn, "asn")?,
            },
        };
        let entries = self
            .entries
            .iter()
            .map(|e| {
                let fields = fields(e);
                let databases = select_databases(&fields);
                Entry {
                    source: e.source.clone(),
                    target: e.target.clone(),
                    fields,
                    databases,
                }
            })
            .collect();
        Ok(GeoIp {
            databases,
            entries,
            tags_on_engine_failure: self.tags_on_engine_failure.clone(),
            tags_on_ip_not_found: self.tags_on_ip_not_found.clone(),
            tags_on_no_valid_ip: self.tags_on_no_valid_ip.clone(),
            lookup_private_addresses: self.lookup_private_addresses,
        })
    }
}

/// An entry's fields (`EntryConfig.getGeoIPFields`): `include_fields` if it names any, else
/// every field but `exclude_fields`; names match whatever their case.
fn fields(entry: &config::GeoIpEntry) -> Vec<usize> {
    let index = |name: &String| FIELDS.iter().position(|f| f.eq_ignore_ascii_case(name));
    match (&entry.include_fields, &entry.exclude_fields) {
        (Some(include), _) if !include.is_empty() => {
            let named: Vec<usize> = include.iter().filter_map(index).collect();
            (0..FIELDS.len()).filter(|i| named.contains(i)).collect()
        }
        (_, Some(exclude)) => {
            let named: Vec<usize> = exclude.iter().filter_map(index).collect();
            (0..FIELDS.len()).filter(|i| !named.contains(i)).collect()
        }
        _ => (0..FIELDS.len()).collect(),
    }
}

/// Data Prepper's `GeoIPDatabase.selectDatabasesForFields`.
fn select_databases(fields: &[usize]) -> u8 {
    let mut selected = 0;
    for &f in fields {
        let mut dbs = FIELD_DATABASES[f];
        if dbs & CITY != 0 && dbs & COUNTRY != 0 {
            dbs &= !CITY;
        }
        selected |= dbs;
    }
    if selected & CITY != 0 {
        selected &= !COUNTRY;
    }
    selected
}

/// Guava's `InetAddresses.forString` then Data Prepper's `GeoInetAddress`: the address if it
/// may be looked up. An IPv4-mapped IPv6 address is its IPv4 address, as Java makes it.
fn usable(text: &str, private_too: bool) -> Option<IpAddr> {
    let ip = text.parse::<IpAddr>().ok()?.to_canonical();
    let public = match ip {
        IpAddr::V4(v4) => !v4.is_private() && !v4.is_loopback(),
        // `isSiteLocalAddress`: fec0::/10 (deprecated site-local), not fc00::/7.
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfec0 && !v6.is_loopback(),
    };
    (public || private_too).then_some(ip)
}

/// An address as Java's `InetAddress.getHostAddress` writes it (IPv6: eight groups, no
/// leading zeros, no `::`).
fn java_address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => java_v6(v6),
    }
}

fn java_v6(v6: Ipv6Addr) -> String {
    v6.segments().map(|s| format!("{s:x}")).join(":")
}

impl Apply for GeoIp {
    fn apply(&self, event: &mut Event, name: &'static str) -> Result<Fate, Failure> {
        let (mut not_found, mut invalid, mut engine) = (false, false, false);
        for entry in &self.entries {
            let text = match crate::java_string(event.get(&entry.source)) {
                Ok(Some(text)) if !text.is_empty() => text,
                Ok(_) => {
                    invalid = true;
                    continue;
                }
                Err(()) => {
                    // Data Prepper's `event.get(source, String.class)` throws: "not found".
                    tracing::debug!(
                        processor = name,
                        source = entry.source.as_str(),
                        "the address is not text"
                    );
                    not_found = true;
                    continue;
                }
            };
            let Some(ip) = usable(&text, self.lookup_private_addresses) else {
                invalid = true;
                continue;
            };
            match self.look_up(ip, entry) {
                Ok(geo) => {
                    event
                        .put(&entry.target, Value::Object(geo))
                        .map_err(|e| Failure::untagged(e.to_string()))?;
                }
                Err(Miss::NotFound) => not_found = true,
                Err(Miss::Engine(reason)) => {
                    tracing::warn!(processor = name, ip = %ip, reason, "geoip lookup failed");
                    engine = true;
                }
            }
        }
        if invalid {
            event.metadata.add_tags(&self.tags_on_no_valid_ip);
        }
        if not_found {
            event.metadata.add_tags(&self.tags_on_ip_not_found);
        }
        if engine {
            event.metadata.add_tags(&self.tags_on_engine_failure);
        }
        Ok(Fate::Keep)
    }
}

impl GeoIp {
    /// The entry's fields for `ip`, or why there are none.
    fn look_up(&self, ip: IpAddr, entry: &Entry) -> Result<Map<String, Value>, Miss> {
        let mut geo = Map::new();
        let want = entry.databases;
        match &self.databases {
            Databases::Lite { city, country, asn } => {
                use Part::*;
                if let (Some(db), true) = (country, want & COUNTRY != 0)
                    && let Some((record, _)) = record(db, ip)?
                {
                    let parts = [Continent, Country, Registered, Represented];
                    extract(&record, None, &parts, entry, false, &mut geo);
                }
                if let (Some(db), true) = (city, want & CITY != 0)
                    && let Some((record, _)) = record(db, ip)?
                {
                    let mut parts = vec![];
                    if want & COUNTRY == 0 {
                        parts.extend([Continent, Country, Registered, Represented]);
                    }
                    parts.extend([City, Location, Postal, MostSpecific, LeastSpecific]);
                    extract(&record, None, &parts, entry, false, &mut geo);
                }
                if let (Some(db), true) = (asn, want & ASN != 0)
                    && let Some((record, network)) = record(db, ip)?
                {
                    let asn = Some((ip, network));
                    extract(&record, asn, &[Asn], entry, false, &mut geo);
                }
            }
            Databases::Enterprise(db) => {
                if want & ENTERPRISE != 0
                    && let Some((record, _)) = record(db, ip)?
                {
                    use Part::*;
                    let parts = [
                        Continent,
                        Country,
                        Registered,
                        Represented,
                        City,
                        Location,
                        Postal,
                        MostSpecific,
                        LeastSpecific,
                    ];
                    extract(&record, None, &parts, entry, true, &mut geo);
                }
                if want & ASN != 0 {
                    return Err(Miss::Engine(format!(
                        "an enterprise database ({}) has no ASN records",
                        db.metadata().database_type
                    )));
                }
            }
        }
        if geo.is_empty() {
            Err(Miss::NotFound)
        } else {
            Ok(geo)
        }
    }
}

/// The record `db` holds for `ip` and its network as Java writes it, if it holds one.
fn record(db: &Reader<Vec<u8>>, ip: IpAddr) -> Result<Option<(Value, String)>, Miss> {
    let engine = |e: maxminddb::MaxMindDbError| Miss::Engine(e.to_string());
    let found = db.lookup(ip).map_err(engine)?;
    if !found.has_data() {
        return Ok(None);
    }
    let network = found.network().map_err(engine)?;
    let address = match (ip, network.ip()) {
        (IpAddr::V4(_), IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .or_else(|| v6.to_ipv4())
            .map_or(IpAddr::V6(v6), IpAddr::V4),
        (_, address) => address,
    };
    let prefix = match (ip, network.ip()) {
        (IpAddr::V4(_), IpAddr::V6(_)) => network.prefix().saturating_sub(96),
        _ => network.prefix(),
    };
    let network = format!("{}/{prefix}", java_address(address));
    let record = found.decode::<Value>().map_err(engine)?;
    Ok(record.map(|r| (r, network)))
}

/// Writes into `geo` each of the entry's fields that `parts` of `record` give (Data Prepper's
/// `extract*Fields`): in its field order, the first value only, never null.
fn extract(
    record: &Value,
    asn: Option<(IpAddr, String)>,
    parts: &[Part],
    entry: &Entry,
    enterprise: bool,
    geo: &mut Map<String, Value>,
) {
    for &field in &entry.fields {
        if !parts.contains(&part(field)) || (is_confidence(field) && !enterprise) {
            continue;
        }
        let value = value(record, field, asn.as_ref());
        if !value.is_null() && !geo.contains_key(FIELDS[field]) {
            geo.insert(FIELDS[field].to_owned(), value);
        }
    }
}

/// One field's value in a GeoIP2 record (null: none).
fn value(r: &Value, field: usize, asn: Option<&(IpAddr, String)>) -> Value {
    let at = |path: &str| r.pointer(path).cloned().unwrap_or(Value::Null);
    let subdivisions = r["subdivisions"].as_array();
    let most = subdivisions
        .and_then(|s| s.last())
        .cloned()
        .unwrap_or_default();
    let least = subdivisions
        .and_then(|s| s.first())
        .cloned()
        .unwrap_or_default();
    let of = |v: &Value, path: &str| v.pointer(path).cloned().unwrap_or(Value::Null);
    match FIELDS[field] {
        "continent_code" => at("/continent/code"),
        "continent_name" => at("/continent/names/en"),
        "country_name" => at("/country/names/en"),
        "is_country_in_european_union" => Value::Bool(
            at("/country/is_in_european_union")
                .as_bool()
                .unwrap_or(false),
        ),
        "country_iso_code" => at("/country/iso_code"),
        "country_confidence" => at("/country/confidence"),
        "registered_country_name" => at("/registered_country/names/en"),
        "registered_country_iso_code" => at("/registered_country/iso_code"),
        "represented_country_name" => at("/represented_country/names/en"),
        "represented_country_iso_code" => at("/represented_country/iso_code"),
        "represented_country_type" => at("/represented_country/type"),
        "city_name" => at("/city/names/en"),
        "city_confidence" => at("/city/confidence"),
        "location" => json!({"lat": at("/location/latitude"), "lon": at("/location/longitude")}),
        "latitude" => at("/location/latitude"),
        "longitude" => at("/location/longitude"),
        "location_accuracy_radius" => at("/location/accuracy_radius"),
        "metro_code" => at("/location/metro_code"),
        "time_zone" => at("/location/time_zone"),
        "postal_code" => at("/postal/code"),
        "postal_code_confidence" => at("/postal/confidence"),
        "most_specified_subdivision_name" => of(&most, "/names/en"),
        "most_specified_subdivision_iso_code" => of(&most, "/iso_code"),
        "most_specified_subdivision_confidence" => of(&most, "/confidence"),
        "least_specified_subdivision_name" => of(&least, "/names/en"),
        "least_specified_subdivision_iso_code" => of(&least, "/iso_code"),
        "least_specified_subdivision_confidence" => of(&least, "/confidence"),
        "asn" => at("/autonomous_system_number"),
        "asn_organization" => at("/autonomous_system_organization"),
        "network" => asn.map_or(Value::Null, |(_, n)| n.clone().into()),
        "ip" => asn.map_or(Value::Null, |(ip, _)| java_address(*ip).into()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{ASN, CITY, COUNTRY, ENTERPRISE, java_v6, select_databases, usable};
    use crate::testing::{invalid, processor, run, tagged};

    /// A MaxMind test database (`tests/data/geoip/`, MaxMind's fictitious records).
    fn db(name: &str) -> String {
        let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo test");
        let path = std::path::Path::new(&dir).join(format!("../../tests/data/geoip/{name}.mmdb"));
        path.to_str().unwrap().to_owned()
    }

    /// A `geoip` block over the GeoLite2 test databases; `rest` is YAML at the block's level.
    fn lite(rest: &str) -> String {
        format!(
            "geoip:\n  databases:\n    city: {}\n    country: {}\n    asn: {}\n{rest}",
            db("GeoLite2-City-Test"),
            db("GeoLite2-Country-Test"),
            db("GeoLite2-ASN-Test")
        )
    }

    const TAGS: &str = "  tags_on_ip_not_found: [not_found]\n  tags_on_no_valid_ip: [no_ip]\n  tags_on_engine_failure: [engine]\n";

    #[test]
    fn a_city_lookup_writes_the_fields_asked_for_from_the_city_record() {
        let p = processor(&lite(
            "  entries:\n    - source: ip\n      include_fields: [country_iso_code, city_name, location, time_zone, most_specified_subdivision_iso_code, postal_code]\n",
        ));
        let out = run(&*p, json!({"ip": "2.125.160.216"})).unwrap();
        assert_eq!(
            out["geo"],
            json!({
                "country_iso_code": "GB", "city_name": "Boxford",
                "location": {"lat": 51.75, "lon": -1.25}, "time_zone": "Europe/London",
                "postal_code": "OX1", "most_specified_subdivision_iso_code": "WBK",
            })
        );
    }

    #[test]
    fn every_field_of_the_geolite2_databases_without_confidences_or_nulls() {
        let p = processor(&lite(
            "  entries:\n    - source: /peer/ip\n      target: where\n      exclude_fields: []\n",
        ));
        let out = run(&*p, json!({"peer": {"ip": "81.2.69.142"}})).unwrap();
        let geo = out["where"].as_object().unwrap();
        assert_eq!(geo["country_name"], "United Kingdom");
        assert_eq!(geo["continent_code"], "EU");
        assert_eq!(
            geo["is_country_in_european_union"], false,
            "Java's primitive default"
        );
        assert_eq!(geo["registered_country_iso_code"], "US");
        assert_eq!(geo["city_name"], "London");
        assert_eq!(geo["latitude"], 51.5142);
        assert_eq!(geo["location_accuracy_radius"], 10);
        assert_eq!(geo["least_specified_subdivision_name"], "England");
        assert!(geo.keys().all(|k| !k.ends_with("confidence")), "{out}");
        assert!(geo.values().all(|v| !v.is_null()), "{out}");
        // Not in the ASN test database: no ASN fields, and still found.
        assert!(geo.get("asn").is_none(), "{out}");
    }

    #[test]
    fn without_include_or_exclude_every_field_is_written() {
        let p = processor(&lite("  entries:\n    - source: ip\n"));
        let geo = run(&*p, json!({"ip": "2.125.160.216"})).unwrap()["geo"].clone();
        assert_eq!(geo["city_name"], "Boxford", "{geo}");
        assert_eq!(geo["registered_country_iso_code"], "FR", "{geo}");
        let p = processor(&lite("  entries:\n    - source: ip\n"));
        let geo = run(&*p, json!({"ip": "1.128.0.1"})).unwrap()["geo"].clone();
        assert_eq!(geo["asn"], 1221, "{geo}");
    }

    #[test]
    fn asn_fields_with_the_network_and_address_as_java_writes_them() {
        let p = processor(&lite(
            "  entries:\n    - source: ip\n      include_fields: [asn, asn_organization, network, ip]\n",
        ));
        let out = run(&*p, json!({"ip": "1.128.0.1"})).unwrap();
        assert_eq!(
            out["geo"],
            json!({"asn": 1221, "asn_organization": "Telstra Pty Ltd", "network": "1.128.0.0/11", "ip": "1.128.0.1"})
        );
        assert_eq!(
            java_v6("2001:218::1".parse().unwrap()),
            "2001:218:0:0:0:0:0:1"
        );
    }

    #[test]
    fn an_address_in_no_database_or_no_address_is_tagged_and_the_event_goes_on() {
        let p = processor(&lite(&format!(
            "  entries:\n    - source: ip\n      include_fields: [city_name]\n{TAGS}"
        )));
        let (out, tags) = tagged(&*p, json!({"ip": "8.8.8.8"}));
        assert_eq!(
            (out, tags),
            (json!({"ip": "8.8.8.8"}), vec!["not_found".to_owned()])
        );
        for ip in [
            json!("10.1.2.3"),
            json!("127.0.0.1"),
            json!("::1"),
            json!("not an ip"),
            json!(""),
            Value::Null,
        ] {
            let (out, tags) = tagged(&*p, json!({"ip": ip}));
            assert_eq!(tags, ["no_ip"], "{ip}");
            assert!(out.get("geo").is_none());
        }
        let (_, tags) = tagged(&*p, json!({"other": 1}));
        assert_eq!(tags, ["no_ip"], "a missing source");
    }

    #[test]
    fn private_addresses_are_looked_up_when_told() {
        assert!(usable("10.0.0.1", false).is_none());
        assert!(usable("10.0.0.1", true).is_some());
        assert!(
            usable("::ffff:192.168.1.1", false).is_none(),
            "mapped: IPv4 to Java"
        );
        assert!(usable("fc00::1", false).is_some(), "not site-local to Java");
        assert!(usable("fec0::1", false).is_none());
        assert!(usable("169.254.1.1", false).is_some());
    }

    #[test]
    fn the_databases_read_follow_from_the_fields_as_in_data_prepper() {
        // country_name alone: the Country database (City only when a City field is asked).
        let p = processor(&format!(
            "geoip:\n  databases:\n    city: {}\n  entries:\n    - source: ip\n      include_fields: [country_name]\n{TAGS}",
            db("GeoLite2-City-Test")
        ));
        let (_, tags) = tagged(&*p, json!({"ip": "81.2.69.142"}));
        assert_eq!(tags, ["not_found"]);
        assert_eq!(select_databases(&[2]), COUNTRY | ENTERPRISE);
        assert_eq!(select_databases(&[2, 11]), CITY | ENTERPRISE);
        assert_eq!(select_databases(&[27]), ASN);
    }

    #[test]
    fn an_enterprise_database_gives_confidences_and_no_asn() {
        let p = processor(&format!(
            "geoip:\n  databases:\n    enterprise: {}\n  entries:\n    - source: ip\n      include_fields: [city_name, city_confidence, country_confidence, postal_code_confidence]\n{TAGS}",
            db("GeoIP2-Enterprise-Test")
        ));
        let out = run(&*p, json!({"ip": "2.125.160.216"})).unwrap();
        assert_eq!(
            out["geo"],
            json!({"country_confidence": 95, "city_name": "Boxford", "city_confidence": 50, "postal_code_confidence": 20})
        );
        let p = processor(&format!(
            "geoip:\n  databases:\n    enterprise: {}\n  entries:\n    - source: ip\n      include_fields: [asn]\n{TAGS}",
            db("GeoIP2-Enterprise-Test")
        ));
        let (_, tags) = tagged(&*p, json!({"ip": "2.125.160.216"}));
        assert_eq!(tags, ["engine"]);
    }

    #[test]
    fn geoip_when_selects_the_events() {
        let p = processor(&lite(
            "  geoip_when: '/ip != \"81.2.69.142\"'\n  entries:\n    - source: ip\n      include_fields: [city_name]\n",
        ));
        assert_eq!(
            run(&*p, json!({"ip": "81.2.69.142"})),
            Some(json!({"ip": "81.2.69.142"}))
        );
        assert_eq!(
            run(&*p, json!({"ip": "2.125.160.216"})).unwrap()["geo"]["city_name"],
            "Boxford"
        );
    }

    #[test]
    fn its_rules_name_the_key() {
        let e = invalid(&lite(
            "  entries:\n    - source: ip\n      include_fields: [asn]\n      exclude_fields: [ip]\n",
        ));
        assert!(
            e.contains("has both `include_fields` and `exclude_fields`"),
            "{e}"
        );
        let e = invalid("geoip:\n  entries:\n    - source: ip\n");
        assert!(
            e.contains("has no `databases`") && e.contains("not supported by sluice yet"),
            "{e}"
        );
        let e = invalid(&lite(
            "  entries:\n    - source: ip\n      include_fields: [city]\n",
        ));
        assert!(
            e.contains("`city` is not a geoip field; did you mean `city_name`?"),
            "{e}"
        );
        let e = invalid(
            "geoip:\n  databases: {}\n  entries:\n    - source: ip\n      exclude_fields: []\n",
        );
        assert!(e.contains("names no database"), "{e}");
        let e = invalid(&format!(
            "geoip:\n  databases:\n    enterprise: {}\n    city: {}\n  entries:\n    - source: ip\n      exclude_fields: []\n",
            db("GeoIP2-Enterprise-Test"),
            db("GeoLite2-City-Test")
        ));
        assert!(
            e.contains("cannot be used along with an enterprise database"),
            "{e}"
        );
        let e = invalid(
            "geoip:\n  databases:\n    city: /nonexistent.mmdb\n  entries:\n    - source: ip\n      exclude_fields: []\n",
        );
        assert!(
            e.contains("`databases.city`: `/nonexistent.mmdb` is not a readable MaxMind database"),
            "{e}"
        );
    }
}
