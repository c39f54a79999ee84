//! TransientStorePool: a few page-aligned, `mlock`ed buffers, each one CommitLog file in size.
//! With `transientStorePoolEnable`, the appender writes into a buffer (memory that is never
//! swapped and never page-faults on a file), a commit thread copies it into the mapped file,
//! and the flush thread syncs the file. Readers see only committed bytes.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{IoContext, Result};
use crate::mmap::AnonBuffer;

/// The pool of write buffers.
pub struct TransientStorePool {
    available: Mutex<VecDeque<Arc<AnonBuffer>>>,
    pool_size: usize,
    locked: bool,
}

impl TransientStorePool {
    /// Allocate `pool_size` buffers of `file_size` bytes. When the OS refuses `mlock`
    /// (RLIMIT_MEMLOCK), the buffers still work unlocked and a warning says how to fix it.
    ///
    /// # Errors
    /// When memory cannot be mapped at all.
    pub fn new(pool_size: usize, file_size: usize) -> Result<Self> {
        let mut available = VecDeque::with_capacity(pool_size);
        let mut locked = true;
        for _ in 0..pool_size {
            let (buf, err) = AnonBuffer::new(file_size)
                .ctx(|| format!("allocating a {file_size}-byte transient store pool buffer"))?;
            if let Some(e) = err {
                if locked {
                    log::warn!(
                        "mlock of the transient store pool was refused ({e}); the \
                         pool works but its memory may be swapped. Raise RLIMIT_MEMLOCK (ulimit -l) \
                         to at least {} KiB or set transientStorePoolEnable=false.",
                        pool_size * file_size / 1024
                    );
                }
                locked = false;
            }
            available.push_back(Arc::new(buf));
        }
        Ok(Self {
            available: Mutex::new(available),
            pool_size,
            locked,
        })
    }

    /// Whether every buffer is locked in RAM.
    #[must_use]
    pub fn is_locked(&self) -> bool {
        self.locked
    }

    /// Take a buffer, or `None` when all are lent out.
    pub(crate) fn borrow_buffer(&self) -> Option<Arc<AnonBuffer>> {
        let mut q = self
            .available
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let b = q.pop_front();
        if b.is_some() && q.len() * 10 < self.pool_size * 4 {
            log::warn!(
                "transient store pool is low: {} of {} buffers free",
                q.len(),
                self.pool_size
            );
        }
        b
    }

    /// Give a buffer back once its file is fully committed.
    pub(crate) fn return_buffer(&self, buf: Arc<AnonBuffer>) {
        buf.rewind_for_reuse();
        self.available
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_front(buf);
    }

    /// Buffers free now.
    #[must_use]
    pub fn available_buffer_nums(&self) -> usize {
        self.available
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
