//! Pulled messages as Arrow-ready column buffers.
//!
//! A reader that feeds Arrow (the Spark source) wants a range of a queue as columns, not one
//! Python object per message: `ClientInstance.pull_columns` pulls the range here, with
//! several pulls in flight and the GIL released, and hands back each column as the buffers
//! of an Arrow array (validity bitmap, little-endian offsets, data), which `pyarrow` wraps
//! without copying them again.

use std::collections::{HashSet, VecDeque};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmq_client::{ClientError, ClientInstance, PullRequest, PullStatus, RawPull};
use rmq_common::properties::encoded_pairs;
use rmq_common::record::DecodedRecord;
use rmq_common::topic::RETRY_GROUP_TOPIC_PREFIX;
use rmq_common::{push_offset_msg_id, sys_flag, PropertyKey};
use rmq_protocol::message_decoder::{decode_message_at, MessageExt};

use crate::client::block_on;

/// A nullable string (or binary) column: Arrow's validity bitmap, i32 offsets, data.
struct StrColumn {
    validity: Vec<u8>,
    offsets: Vec<u8>,
    data: Vec<u8>,
    len: usize,
}

impl StrColumn {
    fn new() -> Self {
        Self {
            validity: Vec::new(),
            offsets: 0i32.to_le_bytes().to_vec(),
            data: Vec::new(),
            len: 0,
        }
    }

    fn push(&mut self, value: Option<&[u8]>) {
        let i = self.len;
        if i.is_multiple_of(8) {
            self.validity.push(0);
        }
        if let Some(v) = value {
            self.validity[i / 8] |= 1 << (i % 8);
            self.data.extend_from_slice(v);
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_possible_wrap,
            reason = "offsets are i32: a call stops at MAX_BYTES, far below 2 GiB"
        )]
        let end = self.data.len() as i32;
        self.offsets.extend_from_slice(&end.to_le_bytes());
        self.len += 1;
    }
}

/// The columns of the messages pulled so far.
struct Columns {
    queue_offsets: Vec<u8>,
    born: Vec<u8>,
    stored: Vec<u8>,
    bodies: StrColumn,
    tags: StrColumn,
    keys: StrColumn,
    msg_ids: StrColumn,
    /// `properties`: per message an offset into the entries, then keys and values.
    prop_offsets: Vec<u8>,
    prop_keys: StrColumn,
    prop_values: StrColumn,
    rows: usize,
    /// Where an offset message id is spelled before it is pushed.
    scratch: String,
}

impl Columns {
    fn new() -> Self {
        Self {
            queue_offsets: Vec::new(),
            born: Vec::new(),
            stored: Vec::new(),
            bodies: StrColumn::new(),
            tags: StrColumn::new(),
            keys: StrColumn::new(),
            msg_ids: StrColumn::new(),
            prop_offsets: 0i32.to_le_bytes().to_vec(),
            prop_keys: StrColumn::new(),
            prop_values: StrColumn::new(),
            rows: 0,
            scratch: String::new(),
        }
    }

    /// Push a record read in place, whose PROPERTIES are `props`: the same row [`push`]
    /// makes of its `MessageExt` (first value of a repeated property in the tags, keys and
    /// msg id columns, every pair in the properties column), without one allocation per
    /// field. For records the client has nothing to do to (see [`RangePull::push_records`]).
    ///
    /// [`push`]: Self::push
    fn push_record(&mut self, r: &DecodedRecord<'_>, props: &str, skip: &HashSet<String>) {
        self.queue_offsets
            .extend_from_slice(&r.queue_offset.to_le_bytes());
        self.born.extend_from_slice(&r.born_timestamp.to_le_bytes());
        self.stored
            .extend_from_slice(&r.store_timestamp.to_le_bytes());
        self.bodies.push(Some(r.body));
        let (mut tags, mut keys, mut uniq) = (None, None, None);
        for (k, v) in encoded_pairs(props) {
            match k {
                PropertyKey::TAGS => tags = tags.or(Some(v)),
                PropertyKey::KEYS => keys = keys.or(Some(v)),
                PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX => uniq = uniq.or(Some(v)),
                _ => {}
            }
            if !skip.contains(k) {
                self.prop_keys.push(Some(k.as_bytes()));
                self.prop_values.push(Some(v.as_bytes()));
            }
        }
        self.tags.push(tags.map(str::as_bytes));
        self.keys.push(keys.map(str::as_bytes));
        if let Some(id) = uniq {
            self.msg_ids.push(Some(id.as_bytes()));
        } else {
            self.scratch.clear();
            push_offset_msg_id(&mut self.scratch, r.store_host, r.physical_offset);
            self.msg_ids.push(Some(self.scratch.as_bytes()));
        }
        self.end_row();
    }

    fn push(&mut self, m: &MessageExt, skip: &HashSet<String>) {
        self.queue_offsets
            .extend_from_slice(&m.queue_offset.to_le_bytes());
        self.born.extend_from_slice(&m.born_timestamp.to_le_bytes());
        self.stored
            .extend_from_slice(&m.store_timestamp.to_le_bytes());
        self.bodies.push(Some(&m.body));
        let props = &m.properties;
        self.tags
            .push(props.get(PropertyKey::TAGS).map(str::as_bytes));
        self.keys
            .push(props.get(PropertyKey::KEYS).map(str::as_bytes));
        self.msg_ids.push(Some(m.client_msg_id().as_bytes()));
        for (k, v) in props.iter() {
            if !skip.contains(k) {
                self.prop_keys.push(Some(k.as_bytes()));
                self.prop_values.push(Some(v.as_bytes()));
            }
        }
        self.end_row();
    }

    /// Close the row: its properties end where the key column stands now.
    fn end_row(&mut self) {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_possible_wrap,
            reason = "fewer entries than bytes, and a call stops at MAX_BYTES, far below 2 GiB"
        )]
        let entries = self.prop_keys.len as i32;
        self.prop_offsets.extend_from_slice(&entries.to_le_bytes());
        self.rows += 1;
    }
}

/// Bytes of bodies after which a call returns (the columns stay well under i32 offsets).
const MAX_BYTES: usize = 64 << 20;

/// A range of one queue, pulled into columns (see the module doc). `status` is why the call
/// stopped: `FOUND` (the range's end, `max_rows` or the byte limit was reached), `GAP` (the
/// next message is at `gap_to`, past `next_offset`: messages were deleted), or the status of
/// the pull that found nothing (`NO_NEW_MSG`, `NO_MATCHED_MSG`, `OFFSET_ILLEGAL`), with the
/// queue's `min_offset` and `max_offset` from the last pull.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
pub(crate) struct PulledColumns {
    status: &'static str,
    next_offset: i64,
    gap_to: i64,
    min_offset: i64,
    max_offset: i64,
    num_rows: usize,
    queue_offsets: Py<PyBytes>,
    born_timestamps: Py<PyBytes>,
    store_timestamps: Py<PyBytes>,
    body_offsets: Py<PyBytes>,
    body_data: Py<PyBytes>,
    tags_validity: Py<PyBytes>,
    tags_offsets: Py<PyBytes>,
    tags_data: Py<PyBytes>,
    keys_validity: Py<PyBytes>,
    keys_offsets: Py<PyBytes>,
    keys_data: Py<PyBytes>,
    msg_id_offsets: Py<PyBytes>,
    msg_id_data: Py<PyBytes>,
    property_offsets: Py<PyBytes>,
    property_key_offsets: Py<PyBytes>,
    property_key_data: Py<PyBytes>,
    property_value_offsets: Py<PyBytes>,
    property_value_data: Py<PyBytes>,
}

struct Pulled {
    status: &'static str,
    next_offset: i64,
    gap_to: i64,
    min_offset: i64,
    max_offset: i64,
    cols: Columns,
}

/// What the pipelined pulls of one call share.
///
/// A pull asks the broker for `batch` messages, and the broker grants at most its own caps
/// (`maxTransferCountOnMessageInMemory`, 32 by default, and the byte cap): the first pull of
/// a call goes alone and the offsets it covered become the `stride` of the windows sent ahead
/// after it, so that a reader asking 1 024 from a broker that grants 32 keeps `depth` pulls of
/// 32 in flight rather than windows 1 024 apart with holes to fill one pull at a time.
struct RangePull {
    instance: ClientInstance,
    request: PullRequest,
    end: i64,
    batch: i64,
    /// A tag filter (not `*`): the broker skips messages that do not match.
    filtered: bool,
}

impl RangePull {
    /// Push the records of `raw` before the range's end into `cols`, as
    /// [`ClientInstance::pull`] would hand them over (exact tag check, bodies decompressed,
    /// `MIN_OFFSET`/`MAX_OFFSET` added): read in place when that changes nothing (no
    /// compressed body, no retry topic, those two properties skipped), else through
    /// [`ClientInstance::process_pulled`]. The queue offset of the last row pushed, if any.
    fn push_records(
        &self,
        raw: &RawPull,
        cols: &mut Columns,
        skip: &HashSet<String>,
    ) -> rmq_client::Result<Option<i64>> {
        let bad = |e: &dyn std::fmt::Display| ClientError::BadResponse {
            addr: raw.addr.clone(),
            detail: format!("pulled messages do not decode: {e}"),
        };
        let in_place =
            skip.contains(PropertyKey::MIN_OFFSET) && skip.contains(PropertyKey::MAX_OFFSET);
        let tags_set = &self.request.subscription.tags_set;
        let (mut pos, mut last) = (0, None);
        while pos < raw.body.len() {
            let r = DecodedRecord::parse(&raw.body[pos..]).map_err(|e| bad(&e))?;
            let at = pos;
            pos += r.total_size;
            if r.queue_offset >= self.end {
                continue;
            }
            let plain = r.sys_flag & sys_flag::COMPRESSED_FLAG == 0
                && !r.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX);
            if in_place && plain {
                let props = r.properties_str().map_err(|e| bad(&e))?;
                if !tags_set.is_empty() {
                    let tag = encoded_pairs(props).find(|(k, _)| *k == PropertyKey::TAGS);
                    if !tag.is_some_and(|(_, t)| tags_set.iter().any(|s| s == t)) {
                        continue;
                    }
                }
                cols.push_record(&r, props, skip);
                last = Some(r.queue_offset);
                continue;
            }
            let m = decode_message_at(&raw.body.slice(at..), at).map_err(|e| bad(&e))?;
            let one = vec![m];
            for m in self
                .instance
                .process_pulled(&raw.addr, &self.request, one, &raw.result)
            {
                if let Some(e) = &m.body_error {
                    // A row must hold the body the producer sent, never the stored
                    // compressed bytes: the read fails, naming the message.
                    return Err(ClientError::BadBody(e.clone()));
                }
                cols.push(&m, skip);
                last = Some(m.queue_offset);
            }
        }
        Ok(last)
    }

    /// A pull of `want` messages (at most `batch`, and not past `upto`) from `offset`.
    fn spawn(&self, offset: i64, upto: i64, want: i64) -> Window {
        let mut req = self.request.clone();
        req.offset = offset;
        // `batch` comes from Python as any positive i64; a pull asks for at most i32::MAX.
        req.max_nums = i32::try_from((upto - offset).min(want).min(self.batch)).unwrap_or(i32::MAX);
        let asked = i64::from(req.max_nums);
        let instance = self.instance.clone();
        let handle = tokio::spawn(async move { instance.pull_raw(&req).await });
        Window {
            offset,
            asked,
            handle,
        }
    }

    async fn run(
        &self,
        start: i64,
        max_rows: usize,
        depth: usize,
        skip: &HashSet<String>,
    ) -> rmq_client::Result<Pulled> {
        let mut out = Pulled {
            status: "FOUND",
            next_offset: start,
            gap_to: -1,
            min_offset: 0,
            max_offset: 0,
            cols: Columns::new(),
        };
        let cols = &mut out.cols;
        let mut offset = start;
        let mut ahead: VecDeque<Window> = VecDeque::new();
        let mut next_window = start;
        // Pulls ask no further than this call may read: one row per offset at most, so that
        // a call never returns more than `max_rows` (under a tag filter, offsets without rows
        // are skipped: up to the range's end, and the last pull may pass `max_rows`).
        let limit = if self.filtered {
            self.end
        } else {
            let rows = i64::try_from(max_rows).unwrap_or(i64::MAX);
            self.end.min(start.saturating_add(rows))
        };
        // Offsets per window: unknown (0) until the first pull, sent alone, comes back.
        let mut stride = 0i64;
        let result = 'pull: loop {
            if offset >= self.end || cols.rows >= max_rows || cols.bodies.data.len() >= MAX_BYTES {
                break Ok(());
            }
            while ahead.front().is_some_and(|w| w.offset < offset) {
                if let Some(w) = ahead.pop_front() {
                    w.handle.abort();
                }
            }
            if let Some(o) = ahead.front().map(|w| w.offset) {
                if o > offset {
                    // The last pull came back short: fill the gap before the next window.
                    ahead.push_front(self.spawn(offset, o, self.batch));
                }
            } else if stride == 0 {
                // The first pull: it alone, asking `batch`, tells what the broker grants.
                ahead.push_back(self.spawn(offset, limit, self.batch));
                next_window = self.end;
            } else {
                next_window = offset;
            }
            while stride > 0 && ahead.len() < depth && next_window < limit {
                ahead.push_back(self.spawn(next_window, limit, stride));
                next_window += stride;
            }
            let Some(Window { asked, handle, .. }) = ahead.pop_front() else {
                break Ok(());
            };
            let raw = match handle.await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => break Err(e),
                Err(_) => break Err(ClientError::Shutdown),
            };
            let r = &raw.result;
            out.min_offset = r.min_offset;
            out.max_offset = r.max_offset;
            let mut status = r.status;
            let mut last = offset;
            if status == PullStatus::Found {
                // Under a tag filter the broker skips what does not match: not a gap.
                let first = DecodedRecord::parse(&raw.body).ok().map(|f| f.queue_offset);
                if let Some(first) = first.filter(|f| *f > offset && !self.filtered) {
                    out.status = "GAP";
                    out.gap_to = first;
                    break Ok(());
                }
                match self.push_records(&raw, cols, skip) {
                    // Everything failed the exact tag check: as NO_MATCHED_MSG.
                    Ok(None) => status = PullStatus::NoMatchedMsg,
                    Ok(Some(l)) => last = l,
                    Err(e) => break 'pull Err(e),
                }
            }
            match status {
                PullStatus::Found => {
                    let from = offset;
                    // A filtered pull may have looked past the range's end: stop at it.
                    offset = r.next_begin_offset.max(last + 1).min(self.end);
                    stride = learn_stride(stride, offset - from, asked);
                }
                // Nothing matched the tag filter up to `next_begin_offset`: read on from there.
                PullStatus::NoMatchedMsg if self.filtered && r.next_begin_offset > offset => {
                    let from = offset;
                    offset = r.next_begin_offset.min(self.end);
                    stride = learn_stride(stride, offset - from, asked);
                }
                status => {
                    out.status = status.name();
                    break Ok(());
                }
            }
        };
        for w in ahead {
            w.handle.abort();
        }
        result?;
        out.next_offset = offset;
        Ok(out)
    }
}

/// A pull sent: from `offset`, for `asked` messages.
struct Window {
    offset: i64,
    asked: i64,
    handle: tokio::task::JoinHandle<rmq_client::Result<RawPull>>,
}

/// The window stride after a pull that asked `asked` messages and covered `covered` offsets:
/// the first pull sets it; a later one the broker cut short (its byte cap, messages of other
/// sizes) lowers it, so that windows seldom leave holes to fill. A pull that got all it asked
/// (a hole's fill, the range's last window) says nothing about the broker's caps.
fn learn_stride(stride: i64, covered: i64, asked: i64) -> i64 {
    let covered = covered.max(1);
    if stride == 0 {
        covered
    } else if covered < asked {
        stride.min(covered)
    } else {
        stride
    }
}

/// How far `ClientInstance.pull_columns` reads (see `PulledColumns`): up to offset `end`, at
/// most `max_rows` rows, `depth` pulls in flight, the first asking `batch` messages;
/// properties named in `skip_properties` are left out of the properties column.
pub(crate) struct ColumnRange {
    pub(crate) end: i64,
    pub(crate) max_rows: usize,
    pub(crate) batch: i64,
    pub(crate) depth: usize,
    pub(crate) skip_properties: Vec<String>,
}

/// Pull `request.offset..range.end` into columns (see `PulledColumns` and [`ColumnRange`]).
pub(crate) fn pull_columns(
    instance: ClientInstance,
    py: Python<'_>,
    request: PullRequest,
    range: ColumnRange,
) -> PyResult<PulledColumns> {
    let start = request.offset;
    let max_rows = range.max_rows;
    let expression = request.subscription.sub_string.trim();
    let filtered = !(expression.is_empty() || expression == "*");
    let pull = RangePull {
        filtered,
        instance,
        request,
        end: range.end,
        batch: range.batch.max(1),
    };
    let skip: HashSet<String> = range.skip_properties.into_iter().collect();
    let depth = range.depth.max(1);
    let p = block_on(
        py,
        async move { pull.run(start, max_rows, depth, &skip).await },
    )?;
    let b = |v: &[u8]| PyBytes::new(py, v).unbind();
    let c = &p.cols;
    Ok(PulledColumns {
        status: p.status,
        next_offset: p.next_offset,
        gap_to: p.gap_to,
        min_offset: p.min_offset,
        max_offset: p.max_offset,
        num_rows: c.rows,
        queue_offsets: b(&c.queue_offsets),
        born_timestamps: b(&c.born),
        store_timestamps: b(&c.stored),
        body_offsets: b(&c.bodies.offsets),
        body_data: b(&c.bodies.data),
        tags_validity: b(&c.tags.validity),
        tags_offsets: b(&c.tags.offsets),
        tags_data: b(&c.tags.data),
        keys_validity: b(&c.keys.validity),
        keys_offsets: b(&c.keys.offsets),
        keys_data: b(&c.keys.data),
        msg_id_offsets: b(&c.msg_ids.offsets),
        msg_id_data: b(&c.msg_ids.data),
        property_offsets: b(&c.prop_offsets),
        property_key_offsets: b(&c.prop_keys.offsets),
        property_key_data: b(&c.prop_keys.data),
        property_value_offsets: b(&c.prop_values.offsets),
        property_value_data: b(&c.prop_values.data),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PulledColumns>()?;
    Ok(())
}
