//! Message body compression: the one codec every rmq crate uses for RocketMQ's compressed
//! bodies (the producer compresses, the SDK and the Spark reader decompress).
//!
//! A body is compressed when its `sysFlag` has [`COMPRESSED_FLAG`]; bits 8..10
//! ([`COMPRESSION_TYPE_COMPARATOR`]) then say how, as RocketMQ 5's `CompressionType`:
//!
//! | bits 8..10 | type | body format (what the Java 5 client writes and reads) |
//! |---|---|---|
//! | 0 or 3 | ZLIB | zlib stream (`java.util.zip.Deflater`); 0 is what clients before the types sent |
//! | 1 | LZ4 | LZ4 frame format (lz4-java's `LZ4FrameOutputStream`: 4 MiB independent blocks) |
//! | 2 | ZSTD | standard zstd frame (zstd-jni's `ZstdOutputStream`) |
//!
//! Decompression is bounded: the output stops at a caller-given limit (the producer's
//! `maxMessageSize`, 4 MiB by default, is the natural one) and zstd windows above
//! [`ZSTD_WINDOW_LOG_MAX`] are refused, so a hostile body cannot make a reader allocate
//! without bound. Every failure is a [`CompressionError`] saying what is wrong; nothing here
//! panics on bad input.

use std::fmt;
use std::io::{Read, Write as _};
use std::str::FromStr;

use crate::sys_flag::{
    COMPRESSED_FLAG, COMPRESSION_LZ4_TYPE, COMPRESSION_TYPE_COMPARATOR, COMPRESSION_ZSTD_TYPE,
};

/// Largest zstd window (log2 bytes) a body may ask for: 16 MiB, above what zstd levels 1..19
/// use for bodies of a few MiB (the "ultra" levels 20..22 can ask for more and are refused).
pub const ZSTD_WINDOW_LOG_MAX: u32 = 24;

/// What went wrong compressing or decompressing a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompressionError {
    /// Bits 8..10 of the sysFlag hold a value RocketMQ does not define.
    #[error(
        "sysFlag {sys_flag:#x} marks the body compressed with compression type {value} \
         (sysFlag bits 8..10), which RocketMQ does not define (0 or 3 ZLIB, 1 LZ4, 2 ZSTD); \
         the body is left as stored"
    )]
    UnknownType {
        /// The message's sysFlag.
        sys_flag: i32,
        /// Bits 8..10 of it.
        value: i32,
    },
    /// A compression type name that is not ZLIB, LZ4 or ZSTD.
    #[error("unknown compression type {0:?}; use \"ZLIB\", \"LZ4\" or \"ZSTD\"")]
    UnknownName(String),
    /// The body is not valid data of its type (truncated, garbage, bad checksum).
    #[error("the {kind} body ({len} bytes) does not decompress: {detail}")]
    Corrupt {
        /// The body's compression type.
        kind: CompressionType,
        /// Its stored length.
        len: usize,
        /// The decoder's complaint.
        detail: String,
    },
    /// The body decompresses to more than the limit.
    #[error(
        "the {kind} body ({len} bytes) decompresses to more than {limit} bytes, the most a \
         reader accepts (the producers' maxMessageSize); it was not decompressed"
    )]
    TooLarge {
        /// The body's compression type.
        kind: CompressionType,
        /// Its stored length.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The encoder failed (never seen with in-memory buffers).
    #[error("{kind} compression failed: {detail}")]
    Compress {
        /// The compression type.
        kind: CompressionType,
        /// The encoder's complaint.
        detail: String,
    },
}

/// RocketMQ 5's `CompressionType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompressionType {
    /// zlib (`java.util.zip.Deflater`), every RocketMQ client's default.
    #[default]
    Zlib,
    /// LZ4 frame format.
    Lz4,
    /// zstd frame format.
    Zstd,
}

impl CompressionType {
    /// The name RocketMQ uses (`CompressionType.name()`): `ZLIB`, `LZ4`, `ZSTD`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Zlib => "ZLIB",
            Self::Lz4 => "LZ4",
            Self::Zstd => "ZSTD",
        }
    }

    /// The sysFlag bits a producer sets on a body compressed this way. ZLIB sets only
    /// [`COMPRESSED_FLAG`] (type bits 0), as rmq's producer always did: every RocketMQ
    /// consumer, 4.x included, reads that as zlib.
    #[must_use]
    pub const fn sys_flag(self) -> i32 {
        match self {
            Self::Zlib => COMPRESSED_FLAG,
            Self::Lz4 => COMPRESSED_FLAG | COMPRESSION_LZ4_TYPE,
            Self::Zstd => COMPRESSED_FLAG | COMPRESSION_ZSTD_TYPE,
        }
    }

    /// How a body with this sysFlag is compressed: `None` when [`COMPRESSED_FLAG`] is clear.
    ///
    /// # Errors
    /// [`CompressionError::UnknownType`] for type values 4..7.
    pub const fn of_sys_flag(sys_flag: i32) -> Result<Option<Self>, CompressionError> {
        if sys_flag & COMPRESSED_FLAG == 0 {
            return Ok(None);
        }
        match (sys_flag & COMPRESSION_TYPE_COMPARATOR) >> 8 {
            0 | 3 => Ok(Some(Self::Zlib)),
            1 => Ok(Some(Self::Lz4)),
            2 => Ok(Some(Self::Zstd)),
            value => Err(CompressionError::UnknownType { sys_flag, value }),
        }
    }

    /// Compress `body` in this type's format. `level` is the zlib level (clamped to 0..=9)
    /// or the zstd level (clamped to 1..=19); LZ4 has none (lz4-java's frame stream uses
    /// the fast compressor).
    ///
    /// # Errors
    /// [`CompressionError::Compress`] if the encoder fails.
    pub fn compress(self, body: &[u8], level: u32) -> Result<Vec<u8>, CompressionError> {
        let fail = |e: std::io::Error| CompressionError::Compress {
            kind: self,
            detail: e.to_string(),
        };
        match self {
            Self::Zlib => {
                let mut enc = flate2::write::ZlibEncoder::new(
                    Vec::with_capacity(body.len() / 2),
                    flate2::Compression::new(level.min(9)),
                );
                enc.write_all(body).map_err(fail)?;
                enc.finish().map_err(fail)
            }
            Self::Lz4 => {
                let info = lz4_flex::frame::FrameInfo::new()
                    .block_mode(lz4_flex::frame::BlockMode::Independent)
                    .block_size(lz4_flex::frame::BlockSize::Max4MB);
                let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(
                    info,
                    Vec::with_capacity(body.len() / 2),
                );
                enc.write_all(body).map_err(fail)?;
                enc.finish().map_err(|e| CompressionError::Compress {
                    kind: self,
                    detail: e.to_string(),
                })
            }
            Self::Zstd => {
                #[expect(clippy::cast_possible_wrap, reason = "clamped to 1..=19 first")]
                let level = level.clamp(1, 19) as i32;
                zstd::stream::encode_all(body, level).map_err(fail)
            }
        }
    }

    /// Decompress `body`, producing at most `limit` bytes.
    ///
    /// # Errors
    /// [`CompressionError::Corrupt`] or [`CompressionError::TooLarge`].
    pub fn decompress(self, body: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
        let corrupt = |e: std::io::Error| CompressionError::Corrupt {
            kind: self,
            len: body.len(),
            detail: e.to_string(),
        };
        match self {
            Self::Zlib => self.read_bounded(flate2::read::ZlibDecoder::new(body), body, limit),
            Self::Lz4 => {
                // lz4_flex ends quietly at a block boundary; a frame cut there is an error here.
                lz4_frames_complete(body).map_err(|detail| CompressionError::Corrupt {
                    kind: self,
                    len: body.len(),
                    detail,
                })?;
                self.read_bounded(lz4_flex::frame::FrameDecoder::new(body), body, limit)
            }
            Self::Zstd => {
                let mut dec = zstd::stream::read::Decoder::with_buffer(body).map_err(corrupt)?;
                dec.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(corrupt)?;
                self.read_bounded(dec, body, limit)
            }
        }
    }

    fn read_bounded(
        self,
        decoder: impl Read,
        body: &[u8],
        limit: usize,
    ) -> Result<Vec<u8>, CompressionError> {
        let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(limit));
        let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
        decoder
            .take(cap)
            .read_to_end(&mut out)
            .map_err(|e| CompressionError::Corrupt {
                kind: self,
                len: body.len(),
                detail: e.to_string(),
            })?;
        if out.len() > limit {
            return Err(CompressionError::TooLarge {
                kind: self,
                len: body.len(),
                limit,
            });
        }
        Ok(out)
    }
}

/// Check that `body` is whole LZ4 frames, back to back, each closed by its end mark (and
/// content checksum when its flags announce one): the frame layout, not the block contents.
fn lz4_frames_complete(body: &[u8]) -> Result<(), String> {
    const MAGIC: u32 = 0x184D_2204;
    let u32_at = |at: usize| -> Result<u32, String> {
        body.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| format!("frame truncated at byte {at} of {}", body.len()))
    };
    if body.is_empty() {
        return Err("empty body, no LZ4 frame".to_owned());
    }
    let mut at = 0;
    while at < body.len() {
        let magic = u32_at(at)?;
        if magic != MAGIC {
            return Err(format!(
                "no LZ4 frame magic at byte {at} (found {magic:#010x})"
            ));
        }
        let flg = *body
            .get(at + 4)
            .ok_or("frame truncated in its descriptor")?;
        let has_content_size = flg & 0x08 != 0;
        let has_dict_id = flg & 0x01 != 0;
        let block_checksums = flg & 0x10 != 0;
        let content_checksum = flg & 0x04 != 0;
        // magic, FLG, BD, optional content size and dictionary id, header checksum
        at += 4 + 2 + if has_content_size { 8 } else { 0 } + if has_dict_id { 4 } else { 0 } + 1;
        loop {
            let size = u32_at(at)?;
            at += 4;
            if size == 0 {
                break;
            }
            let data = usize::try_from(size & 0x7FFF_FFFF).unwrap_or(usize::MAX);
            at = at
                .saturating_add(data)
                .saturating_add(if block_checksums { 4 } else { 0 });
        }
        if content_checksum {
            u32_at(at)?;
            at += 4;
        }
    }
    Ok(())
}

impl fmt::Display for CompressionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CompressionType {
    type Err = CompressionError;

    /// `ZLIB`, `LZ4` or `ZSTD`, any case (as `CompressionType.of`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_uppercase().as_str() {
            "ZLIB" => Ok(Self::Zlib),
            "LZ4" => Ok(Self::Lz4),
            "ZSTD" => Ok(Self::Zstd),
            _ => Err(CompressionError::UnknownName(s.to_owned())),
        }
    }
}

/// The body as the producer sent it: `Ok(None)` when `sys_flag` does not mark it compressed,
/// else the decompressed bytes (at most `limit` of them).
///
/// # Errors
/// An unknown compression type in `sys_flag`, a corrupt body, or one above `limit`.
pub fn decompress_body(
    sys_flag: i32,
    body: &[u8],
    limit: usize,
) -> Result<Option<Vec<u8>>, CompressionError> {
    match CompressionType::of_sys_flag(sys_flag)? {
        None => Ok(None),
        Some(kind) => kind.decompress(body, limit).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [CompressionType; 3] = [
        CompressionType::Zlib,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ];
    const MIB: usize = 1 << 20;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"rmq compressible payload \x00\xff"[(i * i + i / 7) % 27])
            .collect()
    }

    #[test]
    fn each_type_round_trips_through_its_sys_flag() {
        for kind in ALL {
            for len in [0, 1, 4096, 300_000] {
                let body = sample(len);
                let z = kind.compress(&body, 5).unwrap();
                let flag = kind.sys_flag() | crate::sys_flag::MULTI_TAGS_FLAG;
                assert_eq!(CompressionType::of_sys_flag(flag), Ok(Some(kind)));
                let back = decompress_body(flag, &z, 4 * MIB).unwrap().unwrap();
                assert_eq!(back, body, "{kind} {len}");
            }
        }
    }

    #[test]
    fn formats_are_the_standard_frames() {
        let body = sample(10_000);
        let z = CompressionType::Zlib.compress(&body, 5).unwrap();
        assert_eq!(z[0], 0x78, "zlib header, as java.util.zip.Deflater writes");
        let l = CompressionType::Lz4.compress(&body, 5).unwrap();
        assert_eq!(l[..4], [0x04, 0x22, 0x4d, 0x18], "LZ4 frame magic");
        let s = CompressionType::Zstd.compress(&body, 5).unwrap();
        assert_eq!(s[..4], [0x28, 0xb5, 0x2f, 0xfd], "zstd frame magic");
        assert_eq!(zstd::stream::decode_all(&s[..]).unwrap(), body);
    }

    #[test]
    fn sys_flag_types_follow_rocketmq() {
        assert_eq!(
            CompressionType::of_sys_flag(0x300),
            Ok(None),
            "flag bit clear"
        );
        assert_eq!(
            CompressionType::of_sys_flag(1),
            Ok(Some(CompressionType::Zlib))
        );
        assert_eq!(
            CompressionType::of_sys_flag(0x301),
            Ok(Some(CompressionType::Zlib))
        );
        assert_eq!(
            CompressionType::of_sys_flag(0x101),
            Ok(Some(CompressionType::Lz4))
        );
        assert_eq!(
            CompressionType::of_sys_flag(0x201),
            Ok(Some(CompressionType::Zstd))
        );
        for value in 4..8 {
            let flag = (value << 8) | 1;
            let err = CompressionType::of_sys_flag(flag).unwrap_err();
            assert_eq!(
                err,
                CompressionError::UnknownType {
                    sys_flag: flag,
                    value
                }
            );
            assert!(err.to_string().contains(&format!("{flag:#x}")), "{err}");
        }
        assert_eq!(decompress_body(0, b"plain", 10), Ok(None));
    }

    #[test]
    fn names_parse_any_case() {
        assert_eq!("lz4".parse(), Ok(CompressionType::Lz4));
        assert_eq!(" ZSTD ".parse(), Ok(CompressionType::Zstd));
        assert_eq!("Zlib".parse(), Ok(CompressionType::Zlib));
        let err = "snappy".parse::<CompressionType>().unwrap_err();
        assert!(err.to_string().contains("\"snappy\""), "{err}");
    }

    #[test]
    fn truncated_and_garbage_bodies_are_errors() {
        let body = sample(50_000);
        for kind in ALL {
            let z = kind.compress(&body, 5).unwrap();
            for bad in [
                &z[..z.len() / 2],
                &z[..z.len() - 1],
                b"not compressed at all".as_slice(),
                &[],
            ] {
                let Err(err) = kind.decompress(bad, 4 * MIB) else {
                    panic!("{kind}: {} bad bytes decompress", bad.len());
                };
                assert!(
                    matches!(err, CompressionError::Corrupt { kind: k, .. } if k == kind),
                    "{kind} {} bytes: {err:?}",
                    bad.len()
                );
                assert!(err.to_string().contains(kind.name()), "{err}");
            }
            // Flipped bytes in the middle: an error, or (without a checksum) other bytes,
            // never a panic.
            let mut flipped = z.clone();
            let mid = flipped.len() / 2;
            flipped[mid] ^= 0x55;
            if let Ok(out) = kind.decompress(&flipped, 4 * MIB) {
                assert!(out.len() <= 4 * MIB);
            }
        }
    }

    #[test]
    fn bombs_stop_at_the_limit() {
        let zeros = vec![0u8; 64 * MIB];
        for kind in ALL {
            let z = kind.compress(&zeros, 5).unwrap();
            assert!(z.len() < MIB, "{kind}: {} bytes", z.len());
            let err = kind.decompress(&z, 4 * MIB).unwrap_err();
            assert_eq!(
                err,
                CompressionError::TooLarge {
                    kind,
                    len: z.len(),
                    limit: 4 * MIB
                }
            );
            // Exactly at the limit is fine.
            let z = kind.compress(&zeros[..4 * MIB], 5).unwrap();
            assert_eq!(kind.decompress(&z, 4 * MIB).unwrap().len(), 4 * MIB);
        }
    }

    #[test]
    fn zstd_windows_above_the_bound_are_refused() {
        // A frame header asking for a 1 GiB window (window descriptor exponent 20: 2^30),
        // no content size, then one raw block: refused before any allocation of that size.
        let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, (30 - 10) << 3];
        frame.extend_from_slice(&[0x01, 0x00, 0x00]); // last raw block, 0 bytes
        let err = CompressionType::Zstd
            .decompress(&frame, 4 * MIB)
            .unwrap_err();
        assert!(matches!(err, CompressionError::Corrupt { .. }), "{err:?}");
        // The same frame with a 1 MiB window decodes (to nothing).
        frame[5] = (20 - 10) << 3;
        assert_eq!(
            CompressionType::Zstd.decompress(&frame, 4 * MIB),
            Ok(Vec::new())
        );
    }
}
