//! Hashes and checksums whose exact values are part of RocketMQ's on-disk formats.

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units, wrapping
/// in 32 bits. RocketMQ stores it as the ConsumeQueue tags code and hashes index keys with it,
/// so a file written here must hold the same numbers a Java broker would write.
#[must_use]
pub fn java_string_hash(s: &str) -> i32 {
    java_string_hash_after(0, s)
}

/// Java's `hashCode()` of `prefix + s`, given `h` = `prefix.hashCode()`. The hash is a fold
/// over the string, so a key made of parts (`topic#key` in the index) is hashed part by
/// part, without building it.
#[must_use]
pub fn java_string_hash_after(h: i32, s: &str) -> i32 {
    if s.is_ascii() {
        // Fast path: for ASCII every byte is one UTF-16 unit. Eight units a step, as
        // `h·31⁸ + Σ bᵢ·31⁷⁻ⁱ` (the same number in wrapping arithmetic): the eight products
        // do not wait for each other, and the chain of dependent multiplies is an eighth as
        // long. Index keys (`topic#UNIQ_KEY`, 30-odd bytes) are hashed once per message.
        const POW: [i32; 8] = powers_of_31();
        const P8: i32 = POW[0].wrapping_mul(31);
        let mut chunks = s.as_bytes().chunks_exact(8);
        let mut h = h;
        for c in &mut chunks {
            let step = c.iter().zip(POW).fold(0i32, |acc, (&b, p)| {
                acc.wrapping_add(i32::from(b).wrapping_mul(p))
            });
            h = h.wrapping_mul(P8).wrapping_add(step);
        }
        return chunks
            .remainder()
            .iter()
            .fold(h, |h, &b| h.wrapping_mul(31).wrapping_add(i32::from(b)));
    }
    s.encode_utf16()
        .fold(h, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

/// `[31⁷, 31⁶, …, 31, 1]` in wrapping `i32` arithmetic.
const fn powers_of_31() -> [i32; 8] {
    let mut p = [1i32; 8];
    let mut i = 7;
    while i > 0 {
        p[i - 1] = p[i].wrapping_mul(31);
        i -= 1;
    }
    p
}

/// Tags code stored in a ConsumeQueue unit: the tag's Java hash, sign-extended to 64 bits.
/// An empty or absent tag gives 0, as RocketMQ's `tagsString2tagsCode` does.
#[must_use]
pub fn tags_hash_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => i64::from(java_string_hash(t)),
        _ => 0,
    }
}

/// Hash of an index key as the IndexFile stores it: `abs(hashCode)`, with `Integer.MIN_VALUE`
/// (whose absolute value overflows in Java) mapped to 0.
#[must_use]
pub fn index_key_hash(key: &str) -> i32 {
    index_hash_of(java_string_hash(key))
}

/// [`index_key_hash`] of a key whose Java hash is `java_hash`.
#[must_use]
pub fn index_hash_of(java_hash: i32) -> i32 {
    if java_hash == i32::MIN {
        0
    } else {
        java_hash.abs()
    }
}

/// Body CRC as RocketMQ's `UtilAll.crc32`: CRC-32 (IEEE) masked to 31 bits, so it is never
/// negative as a Java `int`.
#[must_use]
pub fn body_crc(body: &[u8]) -> i32 {
    // The mask clears the sign bit, so the value is the same as i32.
    (crc32fast::hash(body) & 0x7FFF_FFFF).cast_signed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_matches_known_values() {
        // Values computed by the JVM ("TagA".hashCode() appears in RocketMQ's docs as 2598919).
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        // Overflowing string: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // Non-ASCII goes through UTF-16: "é" is U+00E9 = 233; "😀" is a surrogate pair.
        assert_eq!(java_string_hash("é"), 233);
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    }

    proptest::proptest! {
        /// The eight-at-a-time ASCII path gives the textbook definition's numbers.
        #[test]
        fn ascii_hash_is_the_definition(s in "[ -~]{0,80}") {
            let one_by_one = s
                .bytes()
                .fold(0i32, |h, b| h.wrapping_mul(31).wrapping_add(i32::from(b)));
            proptest::prop_assert_eq!(java_string_hash(&s), one_by_one);
        }

        /// A key hashed part by part gives the hash of the whole key, non-ASCII parts too.
        #[test]
        fn hash_after_a_prefix_is_the_whole_strings(a in "\\PC{0,20}", b in "\\PC{0,40}") {
            let whole = format!("{a}#{b}");
            let parts = java_string_hash_after(java_string_hash_after(java_string_hash(&a), "#"), &b);
            proptest::prop_assert_eq!(parts, java_string_hash(&whole));
        }
    }

    #[test]
    fn index_hash_is_never_negative() {
        assert_eq!(index_key_hash("polygenelubricants"), 0);
        assert!(index_key_hash("topic#key-1") >= 0);
        let neg = "GydZG_"; // a string with a negative Java hash
        assert!(java_string_hash(neg) < 0 || index_key_hash(neg) >= 0);
        assert_eq!(index_key_hash("TagA"), 2_598_919);
    }

    #[test]
    fn tags_code_is_sign_extended() {
        assert_eq!(tags_hash_code(None), 0);
        assert_eq!(tags_hash_code(Some("")), 0);
        assert_eq!(
            tags_hash_code(Some("polygenelubricants")),
            i64::from(i32::MIN)
        );
    }

    #[test]
    fn body_crc_is_masked_crc32() {
        // CRC-32 of "123456789" is 0xCBF43926; masked to 31 bits it is 0x4BF43926.
        assert_eq!(body_crc(b"123456789"), 0x4BF4_3926);
        assert_eq!(body_crc(b""), 0);
    }
}
