//! TLS and transport settings of both ends: TLS 1.3 preferring
//! AES-128-GCM (the suite dpquic and ngtcp2 negotiate), ALPN "perf", and a
//! fixed datagram size so that every stack is compared at the same MTU.

use std::{fs, io::BufReader, sync::Arc, time::Duration};

use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::{cipher_suite, version::TLS13, Certificate, PrivateKey, RootCertStore};

pub const ALPN: &[u8] = b"perf";

static SUITES: &[rustls::SupportedCipherSuite] = &[
    cipher_suite::TLS13_AES_128_GCM_SHA256,
    cipher_suite::TLS13_AES_256_GCM_SHA384,
    cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
];

/// Transport settings: `payload` is the UDP payload size of every packet
/// (quinn 0.9 has no path MTU discovery: it sends this size from the
/// handshake on), `window` the stream receive window and send window.
pub fn transport(payload: u16, window: u64) -> Result<Arc<TransportConfig>, String> {
    let window_varint = VarInt::from_u64(window).map_err(|_| "--window is too large")?;
    let mut t = TransportConfig::default();
    t.initial_max_udp_payload_size(payload)
        .stream_receive_window(window_varint)
        .send_window(window)
        .max_idle_timeout(Some(IdleTimeout::from(VarInt::from_u32(30_000))))
        .keep_alive_interval(Some(Duration::from_secs(5)));
    Ok(Arc::new(t))
}

fn read_certs(path: &str) -> Result<Vec<Certificate>, String> {
    let file = fs::File::open(path).map_err(|e| format!("{}: {}", path, e))?;
    let certs =
        rustls_pemfile::certs(&mut BufReader::new(file)).map_err(|e| format!("{}: {}", path, e))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate", path));
    }
    Ok(certs.into_iter().map(Certificate).collect())
}

fn read_key(path: &str) -> Result<PrivateKey, String> {
    let file = fs::File::open(path).map_err(|e| format!("{}: {}", path, e))?;
    let mut reader = BufReader::new(file);
    loop {
        match rustls_pemfile::read_one(&mut reader).map_err(|e| format!("{}: {}", path, e))? {
            Some(rustls_pemfile::Item::PKCS8Key(k))
            | Some(rustls_pemfile::Item::ECKey(k))
            | Some(rustls_pemfile::Item::RSAKey(k)) => return Ok(PrivateKey(k)),
            Some(_) => continue,
            None => return Err(format!("{}: no PEM private key", path)),
        }
    }
}

pub fn server(
    cert: &str,
    key: &str,
    transport: Arc<TransportConfig>,
) -> Result<quinn::ServerConfig, String> {
    let mut tls = rustls::ServerConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(read_certs(cert)?, read_key(key)?)
        .map_err(|e| format!("{} and {}: {}", cert, key, e))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = 0;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(tls));
    config.transport = transport;
    Ok(config)
}

/// A client trusting the certificates in `ca` (a self-signed leaf with
/// CA:FALSE and a SAN for the server name is enough).
pub fn client(ca: &str, transport: Arc<TransportConfig>) -> Result<quinn::ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    for cert in read_certs(ca)? {
        roots.add(&cert).map_err(|e| format!("{}: {}", ca, e))?;
    }
    let mut tls = rustls::ClientConfig::builder()
        .with_cipher_suites(SUITES)
        .with_safe_default_kx_groups()
        .with_protocol_versions(&[&TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let mut config = quinn::ClientConfig::new(Arc::new(tls));
    config.transport_config(transport);
    Ok(config)
}
