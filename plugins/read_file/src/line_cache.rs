//! Line indexes of large text files already read once, kept per file identity and change stamp, so the next
//! window of the unchanged file reads from the checkpoint nearest its start and stops at its end, instead of
//! counting every line of the file again for the footer.
//!
//! A stamp can only vouch for bytes that can no longer change under the same stamp: a file written twice
//! within one tick of the file system's clock, to the same size, keeps its stamp. So an index is kept only for
//! a file that was last changed [`SETTLED`] before the read began (git's "racy clean" rule): any later write
//! gives it a change time past the one recorded.

use crate::window::LineIndex;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Smaller files are counted whole each time: they cost less than a millisecond.
const MIN_BYTES: u64 = 4 << 20;
/// How many files' indexes are kept (each is ~16 bytes per 256 KiB of the file); the oldest goes first.
const ENTRIES: usize = 8;
/// How long before the read a file must have last changed for its index to be kept (see the module docs).
const SETTLED: Duration = Duration::from_secs(2);

/// Which file, in which state: its identity, size and both change times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether an index of this file is worth keeping and safe to trust later, for a read that began at `began`.
    pub fn worth_keeping(&self, began: SystemTime) -> bool {
        let Ok(now) = began.duration_since(SystemTime::UNIX_EPOCH) else {
            return false;
        };
        let settled = now.saturating_sub(SETTLED);
        let at = |(secs, nanos): (i64, i64)| {
            u64::try_from(secs).ok().map(|secs| Duration::new(secs, u32::try_from(nanos).unwrap_or(0)))
        };
        self.len >= MIN_BYTES && [self.mtime, self.ctime].into_iter().all(|t| at(t).is_some_and(|t| t <= settled))
    }
}

static CACHE: Mutex<Vec<(Stamp, Arc<LineIndex>)>> = Mutex::new(Vec::new());

/// The index kept for this exact file state, if any.
pub fn lookup(stamp: &Stamp) -> Option<Arc<LineIndex>> {
    let cache = CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    cache.iter().find(|(kept, _)| kept == stamp).map(|(_, index)| Arc::clone(index))
}

/// Keeps `index` for `stamp`, replacing any index of an earlier state of the same file.
pub fn store(stamp: Stamp, index: LineIndex) {
    let mut cache = CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    cache.retain(|(kept, _)| (kept.dev, kept.ino) != (stamp.dev, stamp.ino));
    if cache.len() >= ENTRIES {
        cache.remove(0);
    }
    cache.push((stamp, Arc::new(index)));
}
