//! The `http` source, compatible with Data Prepper's: clients POST, each request body is one
//! record (a push source; its listener's keys are [`crate::listener`]'s).

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

use super::deserializer::{DeserializerConfig, check_deserializer, deserializer_name_or_map};
use super::{CheckSource, SourceConfig, SourceKind};
use crate::context::Context;
use crate::error::Errors;
use crate::listener::{ListenerSettings, TlsWording, check_listener, listener_source};
use crate::location::join;
use crate::secret::SecretError;

listener_source! {
    /// The `http` source, compatible with Data Prepper's.
    #[derive(Debug, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct HttpSource {
        /// The TCP port to listen on (all interfaces). Default 2021.
        #[serde(default = "default_http_port")]
        pub port: u16,
        /// The URL path that accepts POST requests. Default `/log/ingest`.
        #[serde(default = "default_http_path")]
        pub path: String,
        /// The deserializer plugin for request bodies: a name (`json`), or a map with `name`,
        /// `options`, `max_memory` and `timeout`. Default `json`.
        #[serde(default, deserialize_with = "deserializer_name_or_map")]
        pub deserializer: DeserializerConfig,
        ..listener,
    }
}

/// What the `http` source serves, its defaults resolved.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// The URL path that accepts POST requests.
    pub path: String,
    /// The port and how it is served.
    pub listener: ListenerSettings,
}

impl SourceConfig for HttpSource {
    const KIND: SourceKind = SourceKind::Push;
    fn read<'de, D: Deserializer<'de>>(_: &'static str, d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
    fn port(&self) -> Option<u16> {
        Some(self.port)
    }
    fn deserializer(&self) -> Cow<'_, DeserializerConfig> {
        Cow::Borrowed(&self.deserializer)
    }
}

impl crate::Resolve for HttpSource {
    type Settings = HttpSettings;
    type Error = SecretError;
    fn resolve(&self, _pipeline: &str) -> Result<HttpSettings, SecretError> {
        Ok(HttpSettings {
            path: self.path.clone(),
            listener: self.listener().settings(self.port)?,
        })
    }
}

/// The http source's rules. The port's uniqueness across pipelines is checked by `validate`.
impl CheckSource for HttpSource {
    fn check(&self, path: &str, errors: &mut Errors, context: Context<'_>) {
        if !self.path.starts_with('/') {
            errors.at(
                &join(path, "path"),
                format!("`{path}.path` must start with `/`, e.g. `/log/ingest`"),
            );
        }
        let tls = TlsWording {
            certificate: "ssl_certificate_file",
            key: "ssl_key_file",
            on_by_default: false,
        };
        check_listener(&self.listener(), tls, path, errors);
        check_deserializer(
            &self.deserializer,
            &join(path, "deserializer"),
            errors,
            context,
        );
    }
}

/// Data Prepper's http source port.
const fn default_http_port() -> u16 {
    2021
}

fn default_http_path() -> String {
    "/log/ingest".to_owned()
}
