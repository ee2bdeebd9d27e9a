//! Stream-ordered recycling of the engine's result and scratch buffers.
//!
//! Every operation allocates its result (and key switching its scratch) in stream order.
//! `cuMemAllocAsync` costs host time before the operation's first launch can be submitted,
//! so on a one-launch operation it adds directly to the call's latency. The engine therefore
//! keeps the buffers that come back through `GpuCiphertext::free_async` /
//! `GpuPlaintext::free_async` and its own scratch frees, keyed by the stream
//! they were freed on and their length, and hands one to the next allocation of the same
//! length on the same stream.
//!
//! Why reuse on the same stream needs no synchronisation: the buffer was freed after every
//! piece of work that uses it had been enqueued on that stream (the contract of `free_async`,
//! the same one `cuMemFreeAsync` has), and the next user is enqueued on the same stream later,
//! so the stream runs it after them: exactly the reuse rule of CUDA's own stream-ordered pool.
//! A buffer is never handed to another stream. A stream handle can only come back (a new
//! stream created at the same address) after the old stream was destroyed and its resources
//! released, which the driver does only once its work has completed.
//!
//! The bins are bounded ([`RECYCLE_MAX_BUFFERS`] buffers, [`RECYCLE_MAX_WORDS`] words); a
//! buffer beyond that goes back to the pool. `FHELIUM_CKKS_RECYCLE=0` or
//! `CudaEngine::set_recycling(false)` turns recycling off (every free goes to the pool, every
//! allocation comes from it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// At most this many buffers wait in an engine's bins.
pub(crate) const RECYCLE_MAX_BUFFERS: usize = 32;
/// At most this many 64-bit words (64 MiB) wait in an engine's bins.
pub(crate) const RECYCLE_MAX_WORDS: usize = 8 << 20;

/// Something the bins can hold: a length in words.
pub(crate) trait Sized64 {
    fn words(&self) -> usize;
}

/// The bins: (stream key, buffer), most recently freed last.
#[derive(Debug)]
pub(crate) struct Bins<B> {
    on: AtomicBool,
    free: Mutex<Vec<(usize, B)>>,
}

impl<B: Sized64> Bins<B> {
    /// Empty bins, recycling on unless `on` is false.
    pub(crate) fn new(on: bool) -> Self {
        Self {
            on: AtomicBool::new(on),
            free: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Turns recycling on or off; off also empties the bins (returned, for the caller to free).
    pub(crate) fn set_enabled(&self, on: bool) -> Vec<(usize, B)> {
        self.on.store(on, Ordering::Relaxed);
        if on {
            return Vec::new();
        }
        self.free
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }

    /// The most recently freed buffer of `words` words freed on stream `key`, if any.
    pub(crate) fn take(&self, key: usize, words: usize) -> Option<B> {
        if !self.enabled() {
            return None;
        }
        let mut free = self.free.lock().ok()?;
        let i = free
            .iter()
            .rposition(|(k, b)| *k == key && b.words() == words)?;
        Some(free.remove(i).1)
    }

    /// Keeps `buf` for stream `key`; gives it back (`Err`) when recycling is off or the bins
    /// are full, for the caller to free.
    pub(crate) fn put(&self, key: usize, buf: B) -> Result<(), B> {
        if !self.enabled() {
            return Err(buf);
        }
        let Ok(mut free) = self.free.lock() else {
            return Err(buf);
        };
        let held: usize = free.iter().map(|(_, b)| b.words()).sum();
        if free.len() >= RECYCLE_MAX_BUFFERS || held + buf.words() > RECYCLE_MAX_WORDS {
            return Err(buf);
        }
        free.push((key, buf));
        Ok(())
    }

    /// Every buffer waiting for stream `key` (out of the bins).
    pub(crate) fn take_all(&self, key: usize) -> Vec<B> {
        let Ok(mut free) = self.free.lock() else {
            return Vec::new();
        };
        let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut *free)
            .into_iter()
            .partition(|(k, _)| *k == key);
        *free = rest;
        mine.into_iter().map(|(_, b)| b).collect()
    }

    /// Buffers waiting.
    pub(crate) fn len(&self) -> usize {
        self.free.lock().map(|f| f.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Eq)]
    struct Fake(usize, u32);
    impl Sized64 for Fake {
        fn words(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn a_buffer_comes_back_only_for_its_stream_and_length() {
        let bins = Bins::new(true);
        assert!(bins.put(1, Fake(100, 7)).is_ok());
        assert!(bins.put(1, Fake(200, 8)).is_ok());
        assert_eq!(bins.take(2, 100), None, "another stream");
        assert_eq!(bins.take(1, 150), None, "another length");
        assert_eq!(bins.take(1, 100), Some(Fake(100, 7)));
        assert_eq!(bins.take(1, 100), None, "taken once");
        assert_eq!(bins.len(), 1);
    }

    #[test]
    fn the_most_recently_freed_buffer_is_taken_first() {
        let bins = Bins::new(true);
        for tag in 0..3 {
            assert!(bins.put(5, Fake(64, tag)).is_ok());
        }
        assert_eq!(bins.take(5, 64), Some(Fake(64, 2)));
        assert_eq!(bins.take(5, 64), Some(Fake(64, 1)));
    }

    #[test]
    fn take_all_takes_one_streams_buffers_and_leaves_the_others() {
        let bins = Bins::new(true);
        assert!(bins.put(1, Fake(8, 0)).is_ok());
        assert!(bins.put(2, Fake(8, 1)).is_ok());
        assert!(bins.put(1, Fake(16, 2)).is_ok());
        assert_eq!(bins.take_all(1), vec![Fake(8, 0), Fake(16, 2)]);
        assert_eq!(bins.len(), 1);
        assert_eq!(bins.take(2, 8), Some(Fake(8, 1)));
        assert!(bins.take_all(1).is_empty());
    }

    #[test]
    fn full_bins_give_the_buffer_back() {
        let bins = Bins::new(true);
        for tag in 0..RECYCLE_MAX_BUFFERS {
            assert!(bins.put(1, Fake(1, tag as u32)).is_ok());
        }
        assert_eq!(bins.put(1, Fake(1, 99)), Err(Fake(1, 99)), "count bound");
        let bins = Bins::new(true);
        assert!(bins.put(1, Fake(RECYCLE_MAX_WORDS - 10, 0)).is_ok());
        assert_eq!(bins.put(1, Fake(11, 1)), Err(Fake(11, 1)), "word bound");
        assert!(bins.put(1, Fake(10, 2)).is_ok(), "exactly at the bound");
    }

    #[test]
    fn turning_recycling_off_empties_the_bins_and_refuses_buffers() {
        let bins = Bins::new(true);
        assert!(bins.put(3, Fake(8, 1)).is_ok());
        let drained = bins.set_enabled(false);
        assert_eq!(drained, vec![(3, Fake(8, 1))]);
        assert_eq!(bins.put(3, Fake(8, 2)), Err(Fake(8, 2)));
        assert_eq!(bins.take(3, 8), None);
        assert!(bins.set_enabled(true).is_empty());
        assert!(bins.put(3, Fake(8, 3)).is_ok());
        assert_eq!(bins.take(3, 8), Some(Fake(8, 3)));
    }

    #[test]
    fn a_poisoned_lock_falls_back_to_the_pool() {
        let bins = std::sync::Arc::new(Bins::new(true));
        let b2 = bins.clone();
        let _ = std::thread::spawn(move || {
            let _g = b2.free.lock().unwrap();
            panic!("poison the lock");
        })
        .join();
        assert_eq!(bins.put(1, Fake(4, 0)), Err(Fake(4, 0)));
        assert_eq!(bins.take(1, 4), None);
        assert!(bins.take_all(1).is_empty());
        assert_eq!(bins.len(), 0);
    }
}
