//! Byte-level facts about JSON string literals, shared by the readers that scan them without
//! serde_json: which bytes a literal holds as they are, found eight at a time, and what its
//! two-character escapes stand for.

/// The bytes a JSON string literal holds as they are (RFC 8259, section 7): all but control
/// characters, `"` and `\` (a table lookup per byte, fewer instructions than the three
/// comparisons).
pub(crate) static PLAIN: [bool; 256] = {
    let mut plain = [true; 256];
    let mut byte = 0;
    while byte < 0x20 {
        plain[byte] = false;
        byte += 1;
    }
    plain[b'"' as usize] = false;
    plain[b'\\' as usize] = false;
    plain
};

/// The bytes of `word` (little-endian) that a JSON string literal cannot hold as they are
/// (control characters, `"`, `\\`), as a mask whose lowest set bit is the high bit of the first
/// such byte; 0 when all eight are plain. (Each test is the classic "has a zero byte" one,
/// `(x - 0x01…) & !x & 0x80…`, which can also flag bytes after a true hit, never before.)
#[inline]
pub(crate) fn special_bytes(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    // Bytes under 0x20: `x - 0x20…` borrows from them, and `!x` keeps bytes under 0x80.
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (zero(quote) | zero(backslash) | control) & HIGH
}

/// How many bytes at the start of `bytes` are [`PLAIN`]: eight at a time (see
/// [`special_bytes`]), then one at a time. The run ends before an ASCII byte or at the end, so
/// in a `str` it ends on a character boundary.
#[inline]
pub(crate) fn plain_run(bytes: &[u8]) -> usize {
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let Ok(word) = <[u8; 8]>::try_from(word) else {
            break;
        };
        let mask = special_bytes(u64::from_le_bytes(word));
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + words
        .remainder()
        .iter()
        .position(|&b| !PLAIN[usize::from(b)])
        .unwrap_or(words.remainder().len())
}

/// The character a backslash and `byte` stand for as a JSON escape; `None` for `u` (four hex
/// digits follow) and for bytes no escape may have.
pub(crate) fn short_escape(byte: u8) -> Option<char> {
    Some(match byte {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so the cases are the same on every run.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Bytes where borrows could mislead: control bytes, 0x20, quotes, backslashes,
    /// 0x7F-0x81, 0xFF.
    const INTERESTING: [u8; 12] = [
        0x00, 0x01, 0x1F, 0x20, 0x21, b'"', b'\\', 0x5D, 0x7F, 0x80, 0x81, 0xFF,
    ];

    fn naive_run(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&b| !PLAIN[usize::from(b)])
            .unwrap_or(bytes.len())
    }

    #[test]
    fn special_bytes_finds_the_first_byte_a_literal_cannot_hold_as_it_is() {
        let naive = |bytes: [u8; 8]| bytes.iter().position(|&b| !PLAIN[usize::from(b)]);
        let found = |bytes: [u8; 8]| {
            let mask = special_bytes(u64::from_le_bytes(bytes));
            (mask != 0).then(|| (mask.trailing_zeros() / 8) as usize)
        };
        // Every byte value at every position, among plain bytes and after a special one.
        for position in 0..8 {
            for byte in 0..=255u8 {
                let mut bytes = *b"abcdefgh";
                bytes[position] = byte;
                assert_eq!(found(bytes), naive(bytes), "{bytes:?}");
                let mut bytes = [0xFF; 8];
                bytes[position] = byte;
                bytes[7] = b'"';
                assert_eq!(found(bytes), naive(bytes), "{bytes:?}");
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            let random = xorshift(&mut state);
            let bytes = std::array::from_fn(|i| {
                let pick = (random >> (i * 8)) as u8;
                if pick & 1 == 0 {
                    INTERESTING[usize::from(pick >> 1) % INTERESTING.len()]
                } else {
                    pick
                }
            });
            assert_eq!(found(bytes), naive(bytes), "{bytes:?}");
        }
    }

    #[test]
    fn plain_run_is_the_byte_loop_for_every_length_and_position() {
        // Every length up to 40 with one special byte at every position (and none).
        for len in 0..40 {
            for special in INTERESTING
                .iter()
                .copied()
                .filter(|&b| !PLAIN[usize::from(b)])
            {
                for position in 0..=len {
                    let mut bytes = vec![b'a'; len];
                    if position < len {
                        bytes[position] = special;
                    }
                    assert_eq!(plain_run(&bytes), naive_run(&bytes), "{bytes:?}");
                }
            }
        }
        // Random slices of mixed bytes, mostly plain.
        let mut state = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            let len = (xorshift(&mut state) % 70) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let pick = xorshift(&mut state) as u8;
                    if pick < 8 {
                        INTERESTING[usize::from(pick) % INTERESTING.len()]
                    } else {
                        pick | 0x20
                    }
                })
                .collect();
            assert_eq!(plain_run(&bytes), naive_run(&bytes), "{bytes:?}");
        }
    }
}
