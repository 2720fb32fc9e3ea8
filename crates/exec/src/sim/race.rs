//! Race detection on shared memory: who touched each word since the last
//! barrier.
//!
//! Each word records the thread that wrote it and up to two distinct
//! threads that read it, stamped with the barrier interval ("epoch") they
//! belong to; a barrier starts a new epoch, so it forgets every record at
//! once. Two readers are enough: a writer conflicts with a reader other than
//! itself, and of two distinct readers at least one is not the writer.
//!
//! Two threads writing the same value to a word is not reported: the word
//! holds that value whichever lands last, as in a copy into shared memory
//! that every thread of a block does in full (a loop not bound to threads).
//! `compute-sanitizer --tool racecheck` reports such a hazard as a warning,
//! and an error only when the values differ; so does this table.

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Word {
    epoch: u32,
    writer: u32,
    readers: [u32; 2],
    /// What the writer wrote.
    value: f64,
}

const FRESH: Word = Word { epoch: 0, writer: NONE, readers: [NONE; 2], value: 0.0 };

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

    /// Records a read by thread `t` in `epoch` (never 0), or returns the
    /// earlier write of another thread in the same epoch that it races
    /// with.
    #[inline]
    pub(super) fn read(&mut self, addr: usize, t: u32, epoch: u32) -> Result<(), Conflict> {
        self.touch(addr, t, None, epoch)
    }

    /// Records a write of `value` by thread `t` in `epoch`, or returns the
    /// earlier access of another thread in the same epoch that it races
    /// with.
    #[inline]
    pub(super) fn write(&mut self, addr: usize, t: u32, value: f64, epoch: u32) -> Result<(), Conflict> {
        self.touch(addr, t, Some(value), epoch)
    }

    #[inline]
    fn touch(&mut self, addr: usize, t: u32, write: Option<f64>, epoch: u32) -> Result<(), Conflict> {
        let w = &mut self.words[addr];
        if w.epoch != epoch {
            *w = Word { epoch, ..FRESH };
        }
        if w.writer != NONE && w.writer != t {
            let same = write.is_some_and(|v| v.to_bits() == w.value.to_bits());
            if !same {
                return Err(Conflict { thread: w.writer, wrote: true });
            }
        }
        if let Some(v) = write {
            if let Some(&r) = w.readers.iter().find(|&&r| r != NONE && r != t) {
                return Err(Conflict { thread: r, wrote: false });
            }
            w.writer = t;
            w.value = v;
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
        assert_eq!(t.read(0, 1, 1), Ok(()));
        assert_eq!(t.read(0, 2, 1), Ok(()));
        assert_eq!(t.read(0, 3, 1), Ok(()));
        // The first reader that is not the writer is named.
        assert_eq!(t.write(0, 1, 0.0, 1), Err(Conflict { thread: 2, wrote: false }));
        assert_eq!(t.write(0, 2, 0.0, 1), Err(Conflict { thread: 1, wrote: false }));
    }

    #[test]
    fn a_thread_may_reread_and_rewrite_its_own_word() {
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.read(0, 5, 1), Ok(()));
        assert_eq!(t.write(0, 5, 1.0, 1), Ok(()));
        assert_eq!(t.read(0, 5, 1), Ok(()));
        assert_eq!(t.read(0, 6, 1), Err(Conflict { thread: 5, wrote: true }));
    }

    #[test]
    fn a_new_epoch_forgets_the_last() {
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.write(0, 5, 1.0, 1), Ok(()));
        assert_eq!(t.write(0, 6, 2.0, 2), Ok(()));
        assert_eq!(t.read(0, 7, 3), Ok(()));
    }

    #[test]
    fn two_writes_of_one_value_are_benign_and_of_two_values_a_race() {
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.write(0, 5, 1.5, 1), Ok(()));
        assert_eq!(t.write(0, 6, 1.5, 1), Ok(()));
        assert_eq!(t.write(0, 7, 2.5, 1), Err(Conflict { thread: 6, wrote: true }));
        // A read by a third thread still races with the writes.
        assert_eq!(t.read(0, 8, 1), Err(Conflict { thread: 6, wrote: true }));
    }
}
