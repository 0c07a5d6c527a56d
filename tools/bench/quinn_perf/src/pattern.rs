//! The bytes of perf responses, shared with dpquic's server and client
//! (dataplane/app/synthetic_body.h): byte i is ALPHABET[i % 64]. Responses are
//! served as zero-copy slices of one 64 KiB block, and a receiver checks any
//! chunk from its offset alone.

use bytes::Bytes;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub const PERIOD: usize = 64;
pub const BLOCK_SIZE: usize = 64 * 1024;
/// The longest slice of the block that can start at any phase.
pub const STEP: usize = BLOCK_SIZE - PERIOD;

pub fn block() -> Bytes {
    let bytes: Vec<u8> = (0..BLOCK_SIZE).map(|i| ALPHABET[i % PERIOD]).collect();
    Bytes::from(bytes)
}

/// The slice of `block` holding the `len` (at most STEP) bytes at `offset`.
pub fn slice(block: &Bytes, offset: u64, len: usize) -> Bytes {
    let phase = (offset % PERIOD as u64) as usize;
    block.slice(phase..phase + len)
}

/// Whether `bytes` are the response bytes starting at `offset`.
pub fn matches(block: &Bytes, offset: u64, bytes: &[u8]) -> bool {
    let mut done = 0;
    while done < bytes.len() {
        let n = STEP.min(bytes.len() - done);
        if slice(block, offset + done as u64, n)[..] != bytes[done..done + n] {
            return false;
        }
        done += n;
    }
    true
}
