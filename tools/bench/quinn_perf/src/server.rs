//! The perf server: on each bidirectional stream the client sends an 8-byte
//! big-endian response size, optionally an upload, then FIN; the server
//! reads to FIN and answers with that many pattern bytes and FIN. A stream
//! that ends before 8 bytes is reset with code 1, as dpquic's server does.

use bytes::Bytes;
use quinn::{Connecting, Endpoint, RecvStream, SendStream, VarInt};

use crate::pattern;

const INCOMPLETE_REQUEST: u32 = 1;

pub async fn serve(endpoint: Endpoint) {
    let block = pattern::block();
    while let Some(connecting) = endpoint.accept().await {
        tokio::spawn(connection(connecting, block.clone()));
    }
}

async fn connection(connecting: Connecting, block: Bytes) {
    let conn = match connecting.await {
        Ok(conn) => conn,
        Err(_) => return,
    };
    while let Ok((send, recv)) = conn.accept_bi().await {
        tokio::spawn(stream(send, recv, block.clone()));
    }
}

async fn stream(mut send: SendStream, mut recv: RecvStream, block: Bytes) -> Result<(), ()> {
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
    send.finish().await.map_err(|_| ())
}
