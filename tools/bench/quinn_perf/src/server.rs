//! The perf server: on each bidirectional stream the client sends an 8-byte
//! big-endian response size, optionally an upload, then FIN; the server
//! reads to FIN and answers with that many pattern bytes and FIN. A stream
//! that ends before 8 bytes is reset with code 1, as dpquic's server does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use quinn::{Connecting, Endpoint, RecvStream, SendStream, VarInt};

use crate::pattern;

const INCOMPLETE_REQUEST: u32 = 1;

#[derive(Default)]
pub struct Counters {
    pub connections: AtomicU64,
    pub streams: AtomicU64,
    pub bytes_sent: AtomicU64,
}

pub async fn serve(endpoint: Endpoint, counters: Arc<Counters>) {
    let block = pattern::block();
    while let Some(connecting) = endpoint.accept().await {
        tokio::spawn(connection(connecting, block.clone(), counters.clone()));
    }
}

async fn connection(connecting: Connecting, block: Bytes, counters: Arc<Counters>) {
    let conn = match connecting.await {
        Ok(conn) => conn,
        Err(_) => return,
    };
    counters.connections.fetch_add(1, Ordering::Relaxed);
    while let Ok((send, recv)) = conn.accept_bi().await {
        let (block, counters) = (block.clone(), counters.clone());
        tokio::spawn(async move {
            if let Ok(sent) = stream(send, recv, block).await {
                counters.streams.fetch_add(1, Ordering::Relaxed);
                counters.bytes_sent.fetch_add(sent, Ordering::Relaxed);
            }
        });
    }
}

async fn stream(mut send: SendStream, mut recv: RecvStream, block: Bytes) -> Result<u64, ()> {
    let mut size = [0u8; 8];
    if recv.read_exact(&mut size).await.is_err() {
        let _ = send.reset(VarInt::from_u32(INCOMPLETE_REQUEST));
        return Err(());
    }
    while let Some(_upload) = recv.read_chunk(usize::MAX, false).await.map_err(|_| ())? {}
    let size = u64::from_be_bytes(size);
    let mut offset = 0u64;
    while offset < size {
        let n = pattern::STEP.min((size - offset) as usize);
        send.write_chunk(pattern::slice(&block, offset, n))
            .await
            .map_err(|_| ())?;
        offset += n as u64;
    }
    send.finish().await.map_err(|_| ())?;
    Ok(size)
}
