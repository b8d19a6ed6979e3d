//! TLS for a listener with `ssl: true`: the certificate chain and key, read and checked once
//! at start ([`tls_acceptor`], with ALPN for the [`Protocols`] spoken), and a connection's
//! transport, plain TCP or TLS over it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::Protocols;
use super::activity::Watched;

/// The TLS side of a listener with `ssl: true`: the certificate chain and key, read and
/// checked once, at start (a file that cannot be used fails the start, naming it).
pub fn tls_acceptor(
    tls: &sluice_config::http::Tls,
    protocols: Protocols,
) -> Result<TlsAcceptor, String> {
    let (cert_file, key_file) = (&tls.certificate_file, &tls.key_file);
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect())
        .map_err(|e| {
            format!(
                "`ssl_certificate_file` {}: not a PEM certificate chain: {e}",
                cert_file.display()
            )
        })?;
    if certificates.is_empty() {
        return Err(format!(
            "`ssl_certificate_file` {}: no certificate in it",
            cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| {
        format!(
            "`ssl_key_file` {}: not a PEM private key: {e}",
            key_file.display()
        )
    })?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|e| {
            format!(
                "`ssl_certificate_file` {} and `ssl_key_file` {}: {e}",
                cert_file.display(),
                key_file.display()
            )
        })?;
    config.alpn_protocols = match protocols {
        Protocols::Http1 => vec![b"http/1.1".to_vec()],
        Protocols::Http1And2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A connection's transport: plain TCP, or TLS over it.
pub(super) enum Transport {
    Plain(Watched),
    Tls(Box<tokio_rustls::server::TlsStream<Watched>>),
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_flush(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Transport::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
