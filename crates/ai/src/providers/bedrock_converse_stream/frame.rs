//! Cuts AWS's binary event stream into frames before they are decoded: each frame starts with
//! a 12-byte prelude (total length, headers length, CRC-32 of those 8 bytes). The prelude is
//! checked as soon as its 12 bytes arrive, so a frame that declares 4 GB, or a prelude that is
//! not one, fails at once instead of being buffered until the body ends; a frame is at most
//! [`MAX_FRAME_BYTES`].

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::Message;
use bytes::{Buf, BytesMut};

/// The largest frame accepted: AWS's event-stream limit (16 MiB for the whole message).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// The prelude's length: total length, headers length, their CRC-32.
const PRELUDE: usize = 12;
/// Prelude plus the message's closing CRC-32: the smallest frame.
const MIN_FRAME: usize = PRELUDE + 4;

/// Frames of one body, as bytes arrive.
#[derive(Debug, Default)]
pub struct FrameReader {
    buffer: BytesMut,
    /// The checked total length of the frame at the front of `buffer`.
    frame_len: Option<usize>,
}

impl FrameReader {
    /// A reader with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes of the body.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// Whether bytes of an unfinished frame are buffered (a body that ends now was cut).
    pub fn has_partial_frame(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed, `Err` naming what is
    /// wrong with the frame at the front.
    pub fn next_message(&mut self) -> Result<Option<Message>, String> {
        let frame_len = match self.frame_len {
            Some(len) => len,
            None => {
                if self.buffer.len() < PRELUDE {
                    return Ok(None);
                }
                let len = check_prelude(&self.buffer[..PRELUDE])?;
                self.frame_len = Some(len);
                len
            }
        };
        if self.buffer.len() < frame_len {
            return Ok(None);
        }
        let mut frame = self.buffer.split_to(frame_len);
        self.frame_len = None;
        match MessageFrameDecoder::new().decode_frame(&mut frame) {
            Ok(DecodedFrame::Complete(message)) if !frame.has_remaining() => Ok(Some(message)),
            Ok(_) => Err("a frame's length does not match its content".to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// The total length a prelude declares, once its CRC and lengths are sane.
fn check_prelude(prelude: &[u8]) -> Result<usize, String> {
    let word =
        |i: usize| u32::from_be_bytes([prelude[i], prelude[i + 1], prelude[i + 2], prelude[i + 3]]);
    let (total, headers, crc) = (word(0), word(4), word(8));
    let computed = crc32fast::hash(&prelude[..8]);
    if crc != computed {
        return Err(format!(
            "the prelude's CRC is {crc:#010x}, its bytes give {computed:#010x}"
        ));
    }
    let total = total as usize;
    if total > MAX_FRAME_BYTES {
        return Err(format!(
            "a frame declares {total} bytes, more than the {MAX_FRAME_BYTES} allowed"
        ));
    }
    if total < MIN_FRAME || headers as usize > total - MIN_FRAME {
        return Err(format!(
            "a frame declares {total} bytes with {headers} bytes of headers, which cannot be"
        ));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_eventstream::frame::write_message_to;

    fn prelude(total: u32, headers: u32) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&total.to_be_bytes());
        bytes.extend_from_slice(&headers.to_be_bytes());
        let crc = crc32fast::hash(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn frames_split_anywhere_come_out_whole() {
        let mut body = Vec::new();
        for text in ["one", "two", "three"] {
            write_message_to(&Message::new(text.as_bytes().to_vec()), &mut body).unwrap();
        }
        for step in [1, 5, 12, 13, body.len()] {
            let mut reader = FrameReader::new();
            let mut payloads = Vec::new();
            for chunk in body.chunks(step) {
                reader.push(chunk);
                while let Some(message) = reader.next_message().unwrap() {
                    payloads.push(String::from_utf8(message.payload().to_vec()).unwrap());
                }
            }
            assert_eq!(payloads, ["one", "two", "three"], "step {step}");
            assert!(!reader.has_partial_frame());
        }
    }

    #[test]
    fn a_bad_prelude_fails_as_soon_as_its_12_bytes_arrive() {
        let cases = [
            (
                prelude(u32::MAX, 0),
                "a frame declares 4294967295 bytes, more than the 16777216 allowed",
            ),
            (
                prelude(8, 0),
                "a frame declares 8 bytes with 0 bytes of headers, which cannot be",
            ),
            (
                prelude(100, 90),
                "a frame declares 100 bytes with 90 bytes of headers, which cannot be",
            ),
        ];
        for (bytes, expected) in cases {
            let mut reader = FrameReader::new();
            reader.push(&bytes);
            assert_eq!(reader.next_message(), Err(expected.to_string()));
        }
        let mut corrupt = prelude(100, 0);
        corrupt[11] ^= 1;
        let mut reader = FrameReader::new();
        reader.push(&corrupt[..11]);
        assert_eq!(reader.next_message(), Ok(None), "not yet 12 bytes");
        reader.push(&corrupt[11..]);
        assert!(reader
            .next_message()
            .unwrap_err()
            .starts_with("the prelude's CRC is"));
    }
}
