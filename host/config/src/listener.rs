//! The keys of a push source's listener, shared by the `http` source and the OTLP sources:
//! limits (`max_request_length`, `max_connection_count`, `max_pending_requests`), timeouts
//! (`request_timeout`, `header_read_timeout`, `idle_timeout`), TLS (`ssl`,
//! `ssl_certificate_file`, `ssl_key_file`), `authentication`, `compression`, the health check
//! and Data Prepper's `thread_count`. Each key is declared once, here.
//!
//! Raw → checked → resolved, as for every component:
//! - raw: each source's serde struct holds these keys flat, spliced in where it lists them by
//!   `listener_source!`;
//! - [`Listener`]: the same keys as one value (each source's `listener()`), and
//!   `check_listener`, their rules, for every source;
//! - [`ListenerSettings`]: the keys resolved ([`Listener::settings`]), the one value the
//!   runtime's listener serves with.
//!
//! The `port` is each source's own key, not one of these: the http source's is a number with
//! Data Prepper's default `2021`, an OTLP source's is optional with a default that depends on
//! which of the four it is; both resolve into [`ListenerSettings::port`].

use std::time::Duration;

use crate::error::Errors;
use crate::http::{Compression, Tls, check_authentication};
use crate::location::join;
use crate::secret::{BasicAuth, SecretError};
use crate::units::ByteSize;

/// Declares a push source's serde struct, with the listener's keys spliced in where the struct
/// names them (`..idle_timeout,`), each key's type, default, `serde` attributes and user
/// documentation written once, in this macro; and its `listener()`, those keys as a
/// [`Listener`].
///
/// Why a macro, and not one struct of these keys inside each source's: `#[serde(flatten)]`
/// would turn off `deny_unknown_fields` for the keys around it, and it reads the flattened
/// keys from a buffer that `serde_path_to_error` cannot follow, so errors would stop naming the
/// key; a hand-written visitor would have to redo serde's messages. Spliced in, each source
/// stays one derived, strict struct: serde's own messages and key paths are unchanged, and
/// since the source places each key, the list of fields an unknown key's message gives keeps
/// the order it always had.
///
/// Per source: `..listener,` places every key, in the http source's order; doc lines written
/// before `..key` are added to the key's documentation; `..ssl(default = "f")` sets `ssl`'s
/// default (else false); `..ssl_certificate_file(alias =
/// "a")` and `..ssl_key_file(alias = "a")` add another name for the key.
macro_rules! listener_source {
    // Entry: a struct's attributes and name, and its fields.
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($body:tt)* }
    ) => {
        $crate::listener::listener_source!(
            @munch all $name [$(#[$meta])* pub struct $name] [] $($body)*
        );
    };

    // The listener's keys. `$on` is `all` when the `serde` attributes apply and `any` when they
    // are dropped (for `Listener`, which only holds the values): `cfg_attr(any(), ..)` removes
    // the attribute before `derive` sees it.
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..max_request_length, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// The largest request body, after decompression (`compression: gzip`); larger ones
            /// are refused: HTTP 413 (at once when `Content-Length` says so), gRPC
            /// `INVALID_ARGUMENT`. Default `10mb`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default = "crate::listener::default_max_request_length"))]
            pub max_request_length: $crate::units::ByteSize,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..request_timeout, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// How long a request may wait for room in the buffer before it is refused as
            /// retryable: HTTP 503 with `Retry-After`, gRPC `UNAVAILABLE`. A duration or
            /// integer milliseconds. Default `10s`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(
                default = "crate::listener::default_request_timeout",
                deserialize_with = "crate::units::duration"
            ))]
            pub request_timeout: ::std::time::Duration,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..max_connection_count, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// The most connections open at once. One more closes the open connection that has
            /// been sending its request head the longest (a slow or stalled client), else the
            /// one idle the longest between requests, and takes its place; a connection serving
            /// a request is never closed for it. Only when every open connection serves a
            /// request is one more answered 503 with `Retry-After` and closed. Default `500`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default = "crate::listener::default_max_connection_count"))]
            pub max_connection_count: usize,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..header_read_timeout, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// How long a client has to send a request's line and headers (and, with `ssl`,
            /// to finish the TLS handshake), counted from when it connects or from the first
            /// byte of a following request; then the connection is closed. Default `10s`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(
                default = "crate::listener::default_header_read_timeout",
                deserialize_with = "crate::units::duration"
            ))]
            pub header_read_timeout: ::std::time::Duration,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..idle_timeout, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// How long a connection may stay silent while sluice waits for it: a keep-alive
            /// connection between requests, or a request body that stops arriving; then the
            /// connection is closed. Default `75s`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(
                default = "crate::listener::default_idle_timeout",
                deserialize_with = "crate::units::duration"
            ))]
            pub idle_timeout: ::std::time::Duration,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..thread_count, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// Data Prepper's size of the thread pool that handles requests. Accepted so Data
            /// Prepper files load unchanged; sluice handles requests on its async runtime, so it
            /// has no effect (`max_pending_requests` and `max_connection_count` bound the work
            /// in progress). Default `200`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default = "crate::listener::default_thread_count"))]
            pub thread_count: usize,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..max_pending_requests, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// The most requests being handled at once (reading their body or waiting for the
            /// buffer); one more is refused as retryable at once (HTTP 429 with `Retry-After`).
            /// Default `1024`, as Data Prepper.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default = "crate::listener::default_max_pending_requests"))]
            pub max_pending_requests: usize,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..ssl, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// Serve TLS (HTTPS; gRPC clients negotiate HTTP/2 by ALPN) with
            /// `ssl_certificate_file` and `ssl_key_file`. Default false.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default))]
            pub ssl: bool,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..ssl(default = $default:literal), $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// Serve TLS (HTTPS; gRPC clients negotiate HTTP/2 by ALPN) with
            /// `ssl_certificate_file` and `ssl_key_file`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default = $default))]
            pub ssl: bool,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..ssl_certificate_file $((alias = $alias:literal))?,
        $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// The certificate chain, PEM, server certificate first. Required with `ssl: true`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default $(, alias = $alias)?))]
            pub ssl_certificate_file: ::std::option::Option<::std::path::PathBuf>,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..ssl_key_file $((alias = $alias:literal))?, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1). Required with
            /// `ssl: true`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default $(, alias = $alias)?))]
            pub ssl_key_file: ::std::option::Option<::std::path::PathBuf>,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..authentication, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// How clients authenticate: `http_basic: {username, password}` (gRPC clients send
            /// the `authorization` metadata) or `unauthenticated:`. Default unauthenticated.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default))]
            pub authentication: ::std::option::Option<$crate::http::Authentication>,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..compression, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// `none` or `gzip`: which requests may be compressed (`Content-Encoding: gzip`,
            /// gRPC `grpc-encoding: gzip`). Default `none`.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default))]
            pub compression: $crate::http::Compression,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..health_check_service, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// Answer `GET /health` on this port (200 while the source takes requests), and on
            /// the OTLP sources the gRPC health check (`grpc.health.v1.Health/Check`). Default
            /// false.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default))]
            pub health_check_service: bool,
        ] $($rest)*);
    };
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[doc = $note:literal])* ..unauthenticated_health_check, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            /// The health check answers without credentials. Default false.
            $(#[doc = $note])*
            #[cfg_attr($on(), serde(default))]
            pub unauthenticated_health_check: bool,
        ] $($rest)*);
    };

    // Every key, in the order the http source has always listed them (the order the list of
    // fields in an unknown key's message gives).
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*] ..listener, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*]
            ..max_request_length,
            ..request_timeout,
            ..max_connection_count,
            ..header_read_timeout,
            ..idle_timeout,
            ..thread_count,
            ..max_pending_requests,
            ..ssl,
            ..ssl_certificate_file,
            ..ssl_key_file,
            ..authentication,
            ..compression,
            ..health_check_service,
            ..unauthenticated_health_check,
            $($rest)*
        );
    };

    // The source's own fields, as written.
    (@munch $on:ident $name:ident [$($head:tt)*] [$($fields:tt)*]
        $(#[$attr:meta])* pub $field:ident : $ty:ty, $($rest:tt)*) => {
        $crate::listener::listener_source!(@munch $on $name [$($head)*] [$($fields)*
            $(#[$attr])* pub $field: $ty,
        ] $($rest)*);
    };

    // Every field placed: `Listener` itself, or a source's struct and its `listener()`.
    (@munch any Listener [$($head:tt)*] [$($fields:tt)*]) => {
        $($head)* { $($fields)* }
    };
    (@munch all $name:ident [$($head:tt)*] [$($fields:tt)*]) => {
        $($head)* { $($fields)* }

        impl $name {
            /// The listener's keys, as written.
            pub fn listener(&self) -> $crate::listener::Listener {
                $crate::listener::Listener {
                    max_request_length: self.max_request_length,
                    request_timeout: self.request_timeout,
                    max_connection_count: self.max_connection_count,
                    header_read_timeout: self.header_read_timeout,
                    idle_timeout: self.idle_timeout,
                    thread_count: self.thread_count,
                    max_pending_requests: self.max_pending_requests,
                    ssl: self.ssl,
                    ssl_certificate_file: self.ssl_certificate_file.clone(),
                    ssl_key_file: self.ssl_key_file.clone(),
                    authentication: self.authentication.clone(),
                    compression: self.compression,
                    health_check_service: self.health_check_service,
                    unauthenticated_health_check: self.unauthenticated_health_check,
                }
            }
        }
    };
}
pub(crate) use listener_source;

listener_source!(@munch any Listener [
    /// A push source's listener keys as written (its `listener()`), one shape for every
    /// source: what the one listener check checks and [`Listener::settings`] resolves. The
    /// fields' documentation is the keys' (written once, in `listener_source!`).
    #[derive(Debug, Clone)]
    pub struct Listener
] [] ..listener,);

/// A push source's listener, resolved: what the runtime's `listener::Server` serves with, for
/// the http and the OTLP sources alike. `thread_count` has no counterpart: sluice has no
/// request thread pool.
#[derive(Debug, Clone)]
pub struct ListenerSettings {
    /// The TCP port, on all interfaces.
    pub port: u16,
    /// The certificate chain and key, with `ssl: true`.
    pub tls: Option<Tls>,
    /// The HTTP Basic credentials clients must send, the password resolved; `None` when
    /// unauthenticated.
    pub authentication: Option<BasicAuth>,
    /// Which requests may be compressed.
    pub compression: Compression,
    /// The largest request body, after decompression.
    pub max_request_length: ByteSize,
    /// How long a request may wait for room in the buffer.
    pub request_timeout: Duration,
    /// The most connections open at once.
    pub max_connection_count: usize,
    /// The most requests being handled at once.
    pub max_pending_requests: usize,
    /// How long a request head (and a TLS handshake) may take.
    pub header_read_timeout: Duration,
    /// How long a connection may stay silent while sluice waits for it.
    pub idle_timeout: Duration,
    /// Answer the health check on this port.
    pub health_check_service: bool,
    /// The health check answers without credentials.
    pub unauthenticated_health_check: bool,
}

impl Listener {
    /// The listener resolved, on `port` (the source's, its default resolved). Reads the
    /// password, so call once, at startup.
    pub fn settings(&self, port: u16) -> Result<ListenerSettings, SecretError> {
        Ok(ListenerSettings {
            port,
            tls: self.tls(),
            authentication: match &self.authentication {
                Some(a) => a.basic()?,
                None => None,
            },
            compression: self.compression,
            max_request_length: self.max_request_length,
            request_timeout: self.request_timeout,
            max_connection_count: self.max_connection_count,
            max_pending_requests: self.max_pending_requests,
            header_read_timeout: self.header_read_timeout,
            idle_timeout: self.idle_timeout,
            health_check_service: self.health_check_service,
            unauthenticated_health_check: self.unauthenticated_health_check,
        })
    }

    /// The listener's TLS, if `ssl` is on (and both files are given, which
    /// validation requires).
    pub fn tls(&self) -> Option<Tls> {
        match (self.ssl, &self.ssl_certificate_file, &self.ssl_key_file) {
            (true, Some(certificate_file), Some(key_file)) => Some(Tls {
                certificate_file: certificate_file.clone(),
                key_file: key_file.clone(),
            }),
            _ => None,
        }
    }
}

/// How a source words its TLS keys in messages: the http source as Data Prepper's http source,
/// the OTLP sources with their own names for the files and their `ssl` on by default.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TlsWording {
    /// The certificate file's key: `ssl_certificate_file`, or `sslKeyCertChainFile` in the
    /// single-signal OTLP sources (both are accepted there).
    pub(crate) certificate: &'static str,
    /// The key file's key: `ssl_key_file` or `sslKeyFile`.
    pub(crate) key: &'static str,
    /// `ssl` is true by default (the OTLP sources, as Data Prepper's): messages say so.
    pub(crate) on_by_default: bool,
}

/// The listener's rules, the same for every push source; `path` is the source's key path
/// (`<pipeline>.source.http`). The port's uniqueness across pipelines is checked by
/// `validate`.
pub(crate) fn check_listener(
    listener: &Listener,
    tls: TlsWording,
    path: &str,
    errors: &mut Errors,
) {
    for (key, zero) in [
        ("max_pending_requests", listener.max_pending_requests == 0),
        ("max_connection_count", listener.max_connection_count == 0),
    ] {
        if zero {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` must be at least 1"),
            );
        }
    }
    for (key, value) in [
        ("request_timeout", listener.request_timeout),
        ("header_read_timeout", listener.header_read_timeout),
        ("idle_timeout", listener.idle_timeout),
    ] {
        if value.is_zero() {
            errors.at(
                &join(path, key),
                format!("`{path}.{key}` must be more than zero"),
            );
        }
    }
    let default = if tls.on_by_default {
        " (the default, as in Data Prepper)"
    } else {
        ""
    };
    for (key, file) in [
        (tls.certificate, &listener.ssl_certificate_file),
        (tls.key, &listener.ssl_key_file),
    ] {
        match (listener.ssl, file) {
            (true, None) => errors.at(
                &join(path, "ssl"),
                format!(
                    "`{path}.ssl` is true{default} but `{key}` is missing: give the PEM file, or \
                     set `ssl: false`"
                ),
            ),
            (true, Some(file)) => errors.file(&join(path, key), file),
            // With `ssl: false` the files are not read, as in Data Prepper (whose own
            // examples keep them beside `ssl: false`).
            _ => {}
        }
    }
    if let Some(auth) = &listener.authentication {
        check_authentication(auth, path, errors);
    }
}

/// Data Prepper's http source `max_request_length` default (its OTLP sources' too).
pub(crate) const fn default_max_request_length() -> ByteSize {
    ByteSize::mib(10)
}

/// Data Prepper's http source `request_timeout` default (its OTLP sources' too).
pub(crate) const fn default_request_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Data Prepper's http source `thread_count` default.
pub(crate) const fn default_thread_count() -> usize {
    200
}

/// Data Prepper's http source `max_pending_requests` default.
pub(crate) const fn default_max_pending_requests() -> usize {
    1024
}

/// Data Prepper's http source `max_connection_count` default.
pub(crate) const fn default_max_connection_count() -> usize {
    500
}

/// Data Prepper has no such key. A client sends its request head in one go, so 10 s is
/// plenty even on a slow link, and short enough that idle sockets cannot pile up.
pub(crate) const fn default_header_read_timeout() -> Duration {
    Duration::from_secs(10)
}

/// Data Prepper has no such key. nginx's `keepalive_timeout` default: longer than the 60 s a
/// load balancer such as AWS's ALB keeps an idle connection, so the balancer closes first and
/// never sends a request on a connection sluice is closing.
pub(crate) const fn default_idle_timeout() -> Duration {
    Duration::from_secs(75)
}

/// The OTLP sources' `ssl` default: on, as Data Prepper's.
pub(crate) const fn default_ssl_on() -> bool {
    true
}
