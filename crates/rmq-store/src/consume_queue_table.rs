//! The ConsumeQueue table: topic → queue id → [`ConsumeQueue`] (RocketMQ's
//! `consumeQueueTable`), with the files under `consumequeue/`. It owns creating a queue the
//! first time a record of it is dispatched, loading the queues found on disk, and removing
//! queues (retention, unused topics), and it keeps the dispatch thread's own lookup cache
//! consistent with the table, so dispatch pays no table lock or string hash per message.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use rmq_common::fx::FxHashMap;

use crate::consume_queue::{ConsumeQueue, QueueId};
use crate::error::{IoContext, Result};
use crate::format::CqUnit;
use crate::mapped_file::MappedFile;

type Table = HashMap<String, HashMap<QueueId, Arc<ConsumeQueue>>>;

/// ConsumeQueues by topic and queue id, as the dispatch thread looks them up.
type Cache = FxHashMap<String, Vec<Option<Arc<ConsumeQueue>>>>;

/// Every ConsumeQueue of the store.
pub(crate) struct ConsumeQueueTable {
    /// `<storePathRootDir>/consumequeue`.
    dir: PathBuf,
    file_size: usize,
    table: RwLock<Table>,
    dispatch_cache: Mutex<Cache>,
}

impl ConsumeQueueTable {
    /// Load the queues under `dir` (creating it when missing). Directories whose name is
    /// not a queue id are skipped, as RocketMQ does.
    ///
    /// # Errors
    /// The directory cannot be listed or a queue's files cannot be opened.
    pub(crate) fn load(dir: PathBuf, file_size: usize) -> Result<Self> {
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let mut table = Table::new();
        for topic_dir in std::fs::read_dir(&dir).ctx(|| format!("listing {}", dir.display()))? {
            let topic_dir = topic_dir
                .ctx(|| format!("listing {}", dir.display()))?
                .path();
            let Some(topic) = topic_dir
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_owned)
            else {
                continue;
            };
            if !topic_dir.is_dir() {
                continue;
            }
            for q in
                std::fs::read_dir(&topic_dir).ctx(|| format!("listing {}", topic_dir.display()))?
            {
                let q = q.ctx(|| format!("listing {}", topic_dir.display()))?.path();
                let Some(qid) = q
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<i32>().ok())
                    .and_then(|n| QueueId::new(n).ok())
                else {
                    continue; // not a queue id: RocketMQ skips it too
                };
                let cq = ConsumeQueue::new(&dir, &topic, qid, file_size)?;
                cq.load()?;
                table
                    .entry(topic.clone())
                    .or_default()
                    .insert(qid, Arc::new(cq));
            }
        }
        Ok(Self {
            dir,
            file_size,
            table: RwLock::new(table),
            dispatch_cache: Mutex::new(Cache::default()),
        })
    }

    /// The queue of `(topic, queue_id)`, if it exists.
    pub(crate) fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        let qid = QueueId::new(queue_id).ok()?;
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .and_then(|m| m.get(&qid))
            .cloned()
    }

    /// The queue of `(topic, queue_id)`, created when missing.
    ///
    /// # Errors
    /// A queue id outside `0..=65535`, or the queue's directory cannot be created.
    pub(crate) fn find_or_create(
        &self,
        topic: &str,
        queue_id: QueueId,
    ) -> Result<Arc<ConsumeQueue>> {
        if let Some(cq) = self.get(topic, queue_id.get()) {
            return Ok(cq);
        }
        let mut t = self.table.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(cq) = t.get(topic).and_then(|m| m.get(&queue_id)) {
            return Ok(Arc::clone(cq));
        }
        let cq = Arc::new(ConsumeQueue::new(
            &self.dir,
            topic,
            queue_id,
            self.file_size,
        )?);
        t.entry(topic.to_owned())
            .or_default()
            .insert(queue_id, Arc::clone(&cq));
        Ok(cq)
    }

    /// Every queue, in no particular order.
    pub(crate) fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        self.table
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Every (topic, queue ids), sorted.
    pub(crate) fn topic_queues(&self) -> Vec<(String, Vec<i32>)> {
        let t = self.table.read().unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<(String, Vec<i32>)> = t
            .iter()
            .map(|(k, m)| {
                let mut q: Vec<i32> = m.keys().map(|q| q.get()).collect();
                q.sort_unstable();
                (k.clone(), q)
            })
            .collect();
        v.sort();
        v
    }

    /// Forget every queue (recovery found no CommitLog: the queues point at nothing) after
    /// deleting its files.
    ///
    /// # Errors
    /// A file could not be deleted.
    pub(crate) fn destroy_all(&self) -> Result<()> {
        for cq in self.all() {
            cq.queue().destroy()?;
        }
        let mut cache = self.lock_dispatch_cache();
        self.table
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        cache.cache.clear();
        Ok(())
    }

    /// Take the queues `select` picks out of the table (the dispatch cache forgets their
    /// topics), skipping `keep_topic`; returns them for the caller to delete.
    pub(crate) fn remove(
        &self,
        keep_topic: &str,
        select: impl Fn(&str, &ConsumeQueue) -> bool,
    ) -> Vec<(String, QueueId, Arc<ConsumeQueue>)> {
        let mut cache = self.lock_dispatch_cache();
        let mut table = self.table.write().unwrap_or_else(PoisonError::into_inner);
        let mut removed = Vec::new();
        for (topic, queues) in table.iter_mut() {
            if topic == keep_topic {
                continue;
            }
            queues.retain(|&queue_id, cq| {
                let selected = select(topic, cq);
                if selected {
                    removed.push((topic.clone(), queue_id, Arc::clone(cq)));
                }
                !selected
            });
        }
        table.retain(|_, queues| !queues.is_empty());
        for (topic, _, _) in &removed {
            cache.cache.remove(topic);
        }
        removed
    }

    /// The dispatch pass's view, held for one pass.
    pub(crate) fn lock_dispatch_cache(&self) -> DispatchCache<'_> {
        DispatchCache {
            table: self,
            cache: self
                .dispatch_cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            last: None,
            last_file: None,
        }
    }
}

/// The dispatch thread's lookup of ConsumeQueues by topic and queue index, held for a pass.
pub(crate) struct DispatchCache<'a> {
    table: &'a ConsumeQueueTable,
    cache: MutexGuard<'a, Cache>,
    /// The queue found last: a batch's messages all go to one, found without hashing.
    last: Option<Arc<ConsumeQueue>>,
    /// The file of `last` its last unit went into. Held for one pass, under the lock a
    /// truncation of the queues takes too.
    last_file: Option<Arc<MappedFile>>,
}

impl DispatchCache<'_> {
    /// Append `unit` at `cq_offset` of the queue of `(topic, queue_id)`, created on first
    /// use (see [`ConsumeQueue::put_message_position_info`]).
    ///
    /// # Errors
    /// As [`ConsumeQueueTable::find_or_create`], and when a new file cannot be created.
    pub(crate) fn put_unit(
        &mut self,
        topic: &str,
        queue_id: QueueId,
        unit: CqUnit,
        cq_offset: i64,
    ) -> Result<()> {
        let cq = match self.last.take() {
            Some(cq) if cq.queue_id() == queue_id && cq.topic() == topic => cq,
            _ => {
                self.last_file = None;
                self.lookup(topic, queue_id)?
            }
        };
        self.last
            .insert(cq)
            .put_message_position_info_in(unit, cq_offset, &mut self.last_file)
    }

    fn lookup(&mut self, topic: &str, queue_id: QueueId) -> Result<Arc<ConsumeQueue>> {
        let i = queue_id.index();
        if let Some(Some(cq)) = self.cache.get(topic).and_then(|v| v.get(i)) {
            return Ok(Arc::clone(cq));
        }
        let cq = self.table.find_or_create(topic, queue_id)?;
        let v = self.cache.entry(topic.to_owned()).or_default();
        if v.len() <= i {
            v.resize(i + 1, None);
        }
        v[i] = Some(Arc::clone(&cq));
        Ok(cq)
    }
}

/// Where the queue directories of a store live.
pub(crate) fn dir_of(root: &Path) -> PathBuf {
    root.join("consumequeue")
}
