//! Race detection on shared memory: who touched each word since the last
//! barrier.
//!
//! Each word records the thread that wrote it and up to two distinct
//! threads that read it, stamped with the barrier interval ("epoch") they
//! belong to; a barrier starts a new epoch, so it forgets every record at
//! once. Two readers are enough: a writer conflicts with a reader other than
//! itself, and of two distinct readers at least one is not the writer.

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Word {
    epoch: u32,
    writer: u32,
    readers: [u32; 2],
}

const FRESH: Word = Word { epoch: 0, writer: NONE, readers: [NONE; 2] };

/// Another thread's access that conflicts with this one.
#[derive(Debug, PartialEq)]
pub(super) struct Conflict {
    pub thread: u32,
    /// The other thread wrote the word (else it read it).
    pub wrote: bool,
}

#[derive(Default)]
pub(super) struct RaceTable {
    words: Vec<Word>,
}

impl RaceTable {
    /// Forgets every record, for a memory of `len` words.
    pub(super) fn reset(&mut self, len: usize) {
        self.words.clear();
        self.words.resize(len, FRESH);
    }

    /// Records an access by thread `t` in `epoch` (never 0), or returns the
    /// earlier access of another thread in the same epoch that it races
    /// with.
    #[inline]
    pub(super) fn touch(&mut self, addr: usize, t: u32, write: bool, epoch: u32) -> Result<(), Conflict> {
        let w = &mut self.words[addr];
        if w.epoch != epoch {
            *w = Word { epoch, ..FRESH };
        }
        if w.writer != NONE && w.writer != t {
            return Err(Conflict { thread: w.writer, wrote: true });
        }
        if write {
            if let Some(&r) = w.readers.iter().find(|&&r| r != NONE && r != t) {
                return Err(Conflict { thread: r, wrote: false });
            }
            w.writer = t;
        } else if w.readers[0] == NONE {
            w.readers[0] = t;
        } else if w.readers[0] != t && w.readers[1] == NONE {
            w.readers[1] = t;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_after_reads_by_others_is_a_race() {
        let mut t = RaceTable::default();
        t.reset(4);
        assert_eq!(t.touch(0, 1, false, 1), Ok(()));
        assert_eq!(t.touch(0, 2, false, 1), Ok(()));
        assert_eq!(t.touch(0, 3, false, 1), Ok(()));
        // The first reader that is not the writer is named.
        assert_eq!(t.touch(0, 1, true, 1), Err(Conflict { thread: 2, wrote: false }));
        assert_eq!(t.touch(0, 2, true, 1), Err(Conflict { thread: 1, wrote: false }));
    }

    #[test]
    fn a_thread_may_reread_and_rewrite_its_own_word() {
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.touch(0, 5, false, 1), Ok(()));
        assert_eq!(t.touch(0, 5, true, 1), Ok(()));
        assert_eq!(t.touch(0, 5, false, 1), Ok(()));
        assert_eq!(t.touch(0, 6, false, 1), Err(Conflict { thread: 5, wrote: true }));
    }

    #[test]
    fn a_new_epoch_forgets_the_last() {
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.touch(0, 5, true, 1), Ok(()));
        assert_eq!(t.touch(0, 6, true, 2), Ok(()));
        assert_eq!(t.touch(0, 7, false, 3), Ok(()));
    }
}
