//! `geoip`: adds where an IP address is (country, city, location, autonomous system) from
//! MaxMind databases, as Data Prepper's `GeoIPProcessorConfig` and `EntryConfig`.
//!
//! Data Prepper reads its databases through its `geoip_service` extension (in
//! `data-prepper-config.yaml`: `maxmind.databases` with `city`, `country`, `asn`,
//! `enterprise`; by default it downloads GeoLite2 from OpenSearch's endpoint). sluice reads no
//! such file and downloads nothing: the processor's own `databases` (sluice's key, with the
//! extension's names) gives the `.mmdb` files by path.

use std::path::PathBuf;

use serde::Deserialize;
use sluice_event::{Expression, Key};

use super::ProcessorConfig;
use crate::error::{Errors, closest};
use crate::location::join;

/// Data Prepper's `GeoIPField` names, in its order (the order fields are written in).
pub const FIELDS: [&str; 31] = [
    "continent_code",
    "continent_name",
    "country_name",
    "is_country_in_european_union",
    "country_iso_code",
    "country_confidence",
    "registered_country_name",
    "registered_country_iso_code",
    "represented_country_name",
    "represented_country_iso_code",
    "represented_country_type",
    "city_name",
    "city_confidence",
    "location",
    "latitude",
    "longitude",
    "location_accuracy_radius",
    "metro_code",
    "time_zone",
    "postal_code",
    "postal_code_confidence",
    "most_specified_subdivision_name",
    "most_specified_subdivision_iso_code",
    "most_specified_subdivision_confidence",
    "least_specified_subdivision_name",
    "least_specified_subdivision_iso_code",
    "least_specified_subdivision_confidence",
    "asn",
    "asn_organization",
    "network",
    "ip",
];

/// ```yaml
/// - geoip:
///     databases:
///       city: /var/lib/geoip/GeoLite2-City.mmdb
///       asn: /var/lib/geoip/GeoLite2-ASN.mmdb
///     entries:
///       - source: /peer/ip
///         target: geo
///         include_fields: [country_iso_code, city_name, location, asn]
///     tags_on_ip_not_found: [_geoip_not_found]
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeoIp {
    /// sluice's, not Data Prepper's (its `geoip_service` extension's `maxmind.databases`):
    /// the MaxMind databases, by path. Required: Data Prepper's default, downloading GeoLite2
    /// from OpenSearch's endpoint, is not supported.
    #[serde(default)]
    pub databases: Option<Databases>,
    /// The addresses to look up, each with where its result goes. Required, at least one.
    pub entries: Vec<GeoIpEntry>,
    /// Tags added to an event when a database could not be read for it. Default: none.
    #[serde(default)]
    pub tags_on_engine_failure: Vec<String>,
    /// Tags added to an event when an entry's address is in no database. Default: none.
    #[serde(default)]
    pub tags_on_ip_not_found: Vec<String>,
    /// Tags added to an event when an entry's source is missing, empty, not an IP address, or
    /// a private or loopback address (without `lookup_private_addresses`). Default: none.
    #[serde(default)]
    pub tags_on_no_valid_ip: Vec<String>,
    /// Look up only events for which this condition is true.
    #[serde(default, deserialize_with = "crate::event::opt_condition")]
    pub geoip_when: Option<Expression>,
    /// Look up private (site-local: `10/8`, `172.16/12`, `192.168/16`, `fec0::/10`) and
    /// loopback addresses too, for databases that hold internal networks. Default false.
    #[serde(default)]
    pub lookup_private_addresses: bool,
}

/// The databases, by path: GeoLite2 `city`, `country` and `asn`, or one `enterprise`
/// (GeoIP2 Enterprise), as Data Prepper's `MaxMindDatabaseConfig` names them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Databases {
    /// A GeoLite2 (or GeoIP2) City database.
    pub city: Option<PathBuf>,
    /// A GeoLite2 (or GeoIP2) Country database.
    pub country: Option<PathBuf>,
    /// A GeoLite2 ASN database.
    pub asn: Option<PathBuf>,
    /// A GeoIP2 Enterprise database; not with the others.
    pub enterprise: Option<PathBuf>,
}

/// One address to look up.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeoIpEntry {
    /// The key holding the IP address. Required.
    #[serde(deserialize_with = "crate::event::key")]
    pub source: Key,
    /// Where the result goes, an object. Default `geo`.
    #[serde(default = "default_target", deserialize_with = "crate::event::key")]
    pub target: Key,
    /// The fields to write (`country_iso_code`, `city_name`, `location`, `asn`, ...; case
    /// does not matter). Default (neither this nor `exclude_fields`): every field.
    pub include_fields: Option<Vec<String>>,
    /// Every field but these. Not with `include_fields`.
    pub exclude_fields: Option<Vec<String>>,
}

fn default_target() -> Key {
    Key::unchecked("geo")
}

impl ProcessorConfig for GeoIp {
    fn check(&self, path: &str, errors: &mut Errors) {
        let key = join(path, "databases");
        let Some(dbs) = &self.databases else {
            errors.at(
                path,
                format!(
                    "`{path}` has no `databases`: Data Prepper's default (its `geoip_service` \
                     extension downloading MaxMind GeoLite2) is not supported by sluice yet; \
                     give `databases` with the path of a `city`, `country`, `asn` or \
                     `enterprise` database"
                ),
            );
            return;
        };
        if dbs.enterprise.is_some()
            && (dbs.city.is_some() || dbs.country.is_some() || dbs.asn.is_some())
        {
            errors.at(
                &join(&key, "enterprise"),
                format!(
                    "`{key}` has `enterprise` and GeoLite2 databases; MaxMind GeoLite2 databases \
                     cannot be used along with an enterprise database: keep one or the others"
                ),
            );
        }
        if dbs.enterprise.is_none()
            && dbs.city.is_none()
            && dbs.country.is_none()
            && dbs.asn.is_none()
        {
            errors.at(
                &key,
                format!(
                    "`{key}` names no database; give the path of at least one of `city`, \
                     `country`, `asn` or `enterprise` (sluice downloads none)"
                ),
            );
        }
        if self.entries.is_empty() {
            errors.at(
                &join(path, "entries"),
                format!("`{path}.entries` is empty; give at least one, e.g. `- source: /ip`"),
            );
        }
        for (i, entry) in self.entries.iter().enumerate() {
            let at = format!("{}[{i}]", join(path, "entries"));
            // Data Prepper's `@AssertTrue areFieldsValid` asks for one of them, but is no
            // getter, so its validator never runs it: neither means every field, as its
            // documentation's first example shows.
            if entry.include_fields.is_some() && entry.exclude_fields.is_some() {
                errors.at(
                    &join(&at, "exclude_fields"),
                    format!(
                        "`{at}` has both `include_fields` and `exclude_fields`; keep one (Data \
                         Prepper means them to be exclusive, and would use `include_fields`)"
                    ),
                );
            }
            for (name, list) in [
                ("include_fields", &entry.include_fields),
                ("exclude_fields", &entry.exclude_fields),
            ] {
                for field in list.iter().flatten() {
                    if !FIELDS.iter().any(|f| f.eq_ignore_ascii_case(field)) {
                        let hint = closest(&field.to_ascii_lowercase(), FIELDS)
                            .map(|c| format!("did you mean `{c}`? "))
                            .unwrap_or_default();
                        let key = join(&at, name);
                        errors.at(
                            &key,
                            format!(
                                "`{key}`: `{field}` is not a geoip field; {hint}the fields are {}",
                                FIELDS.map(|f| format!("`{f}`")).join(", ")
                            ),
                        );
                    }
                }
            }
        }
    }
}
