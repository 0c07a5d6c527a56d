//! The perf client: one connection, one request for `size` bytes, every
//! response byte checked against the pattern as it arrives.

use std::net::SocketAddr;
use std::time::Instant;

use quinn::{ClientConfig, Endpoint, VarInt};

use crate::pattern;

pub struct Outcome {
    pub bytes: u64,
    pub seconds: f64,
    pub handshake_seconds: f64,
}

pub async fn download(
    server: SocketAddr,
    sni: &str,
    config: ClientConfig,
    size: u64,
) -> Result<Outcome, String> {
    let local: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .unwrap();
    let endpoint = Endpoint::client(local).map_err(|e| format!("bind {}: {}", local, e))?;
    let start = Instant::now();
    let conn = endpoint
        .connect_with(config, server, sni)
        .map_err(|e| format!("connect: {}", e))?
        .await
        .map_err(|e| format!("handshake with {}: {}", server, e))?;
    let handshake_seconds = start.elapsed().as_secs_f64();
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| format!("open stream: {}", e))?;
    send.write_all(&size.to_be_bytes())
        .await
        .map_err(|e| format!("request: {}", e))?;
    send.finish().await.map_err(|e| format!("request: {}", e))?;
    let block = pattern::block();
    let mut received = 0u64;
    while let Some(chunk) = recv
        .read_chunk(usize::MAX, true)
        .await
        .map_err(|e| format!("response: {}", e))?
    {
        if !pattern::matches(&block, chunk.offset, &chunk.bytes) {
            return Err(format!(
                "response bytes at offset {} differ from the pattern",
                chunk.offset
            ));
        }
        received += chunk.bytes.len() as u64;
    }
    let seconds = start.elapsed().as_secs_f64();
    conn.close(VarInt::from_u32(0), b"done");
    endpoint.wait_idle().await;
    if received != size {
        return Err(format!(
            "response has {} bytes, asked for {}",
            received, size
        ));
    }
    Ok(Outcome {
        bytes: received,
        seconds,
        handshake_seconds,
    })
}
