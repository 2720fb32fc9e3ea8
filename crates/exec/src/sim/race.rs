//! Race detection on shared memory: who touched each word since the last
//! barrier.
//!
//! Each word records the threads that wrote it (up to four) and up to two
//! distinct threads that read it, stamped with the barrier interval ("epoch") they
//! belong to; a barrier starts a new epoch, so it forgets every record at
//! once. Two readers are enough: a writer conflicts with a reader other than
//! itself, and of two distinct readers at least one is not the writer.
//!
//! Two threads writing the same value to a word is not reported: the word
//! holds that value whichever lands last, as in a copy into shared memory
//! that every thread of a block does in full (a loop not bound to threads).
//! `compute-sanitizer --tool racecheck` reports such a hazard as a warning,
//! and an error only when the values differ; so does this table. A thread
//! that wrote such a word reads it without a race (it holds the value the
//! thread wrote), as where tiles bound to threads overlap by a halo and
//! each computes the halo it reads; another thread's read still races.

const NONE: u32 = u32::MAX;

/// How many distinct writers of one word a record keeps: a 2-D halo's
/// corner is written by four neighbouring tiles.
const WRITERS: usize = 4;

#[derive(Clone, Copy)]
struct Word {
    epoch: u32,
    /// The threads that wrote the word in this epoch, all the same value
    /// (two different values are a race), up to `WRITERS` of them.
    writers: [u32; WRITERS],
    /// More threads wrote it than `writers` holds.
    overflow: bool,
    /// Two writes of this epoch wrote different values (one thread's
    /// included): a write may land after another thread's read.
    mixed: bool,
    /// A thread read it before this epoch's first write: that read saw the
    /// value from before, which any write then changes.
    read_stale: bool,
    readers: [u32; 2],
    /// What the writers wrote.
    value: f64,
}

const FRESH: Word = Word {
    epoch: 0,
    writers: [NONE; WRITERS],
    overflow: false,
    mixed: false,
    read_stale: false,
    readers: [NONE; 2],
    value: 0.0,
};

impl Word {
    fn written(&self) -> bool {
        self.writers[0] != NONE
    }

    /// Whether thread `t` is known to have written the word.
    fn wrote(&self, t: u32) -> bool {
        self.writers.contains(&t)
    }

    /// A writer other than `t`, if any.
    fn other_writer(&self, t: u32) -> Option<u32> {
        self.writers.iter().copied().find(|&w| w != NONE && w != t)
    }

    fn add_writer(&mut self, t: u32) {
        if self.wrote(t) {
            return;
        }
        match self.writers.iter_mut().find(|w| **w == NONE) {
            Some(slot) => *slot = t,
            None => self.overflow = true,
        }
    }
}

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

    /// Forgets the record of one word: a write that every access before
    /// and after it is ordered with otherwise than by a barrier (a bulk
    /// tensor copy, which mbarriers order).
    pub(super) fn forget(&mut self, addr: usize) {
        if let Some(w) = self.words.get_mut(addr) {
            *w = FRESH;
        }
    }

    /// Records a read by thread `t` in `epoch` (never 0), or returns the
    /// earlier write of another thread in the same epoch that it races
    /// with. A thread that wrote the word itself reads its own value even
    /// where others wrote the same value (overlapping halos of tiles).
    #[inline]
    pub(super) fn read(&mut self, addr: usize, t: u32, epoch: u32) -> Result<(), Conflict> {
        let w = &mut self.words[addr];
        if w.epoch != epoch {
            *w = Word { epoch, ..FRESH };
        }
        if let Some(other) = w.other_writer(t) {
            if !w.wrote(t) || w.mixed {
                return Err(Conflict { thread: other, wrote: true });
            }
        }
        if !w.written() {
            w.read_stale = true;
        }
        if w.readers[0] == NONE {
            w.readers[0] = t;
        } else if w.readers[0] != t && w.readers[1] == NONE {
            w.readers[1] = t;
        }
        Ok(())
    }

    /// Records a write of `value` by thread `t` in `epoch`, or returns the
    /// earlier access of another thread in the same epoch that it races
    /// with: a write of another value, or a read by another thread of a
    /// word this write changes.
    #[inline]
    pub(super) fn write(&mut self, addr: usize, t: u32, value: f64, epoch: u32) -> Result<(), Conflict> {
        let w = &mut self.words[addr];
        if w.epoch != epoch {
            *w = Word { epoch, ..FRESH };
        }
        let same = w.written() && value.to_bits() == w.value.to_bits();
        if let Some(other) = w.other_writer(t) {
            if !same {
                return Err(Conflict { thread: other, wrote: true });
            }
        }
        if w.written() && !same {
            w.mixed = true;
        }
        // Rewriting the value that every write of this epoch wrote changes
        // nothing a reader could see, unless one read before the first.
        if !same || w.mixed || w.read_stale {
            if let Some(&r) = w.readers.iter().find(|&&r| r != NONE && r != t) {
                return Err(Conflict { thread: r, wrote: false });
            }
        }
        w.add_writer(t);
        w.value = value;
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
        assert_eq!(t.write(0, 7, 2.5, 1), Err(Conflict { thread: 5, wrote: true }));
        // A read by a third thread still races with the writes.
        assert_eq!(t.read(0, 8, 1), Err(Conflict { thread: 5, wrote: true }));
    }

    #[test]
    fn a_writer_of_one_value_reads_its_own_word() {
        // Tiles whose halos overlap: both threads write the same value,
        // each reads what it wrote.
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.write(0, 0, 3.0, 1), Ok(()));
        assert_eq!(t.write(0, 1, 3.0, 1), Ok(()));
        assert_eq!(t.read(0, 0, 1), Ok(()));
        assert_eq!(t.read(0, 1, 1), Ok(()));
        // Another write of the same value after their reads changes nothing.
        assert_eq!(t.write(0, 2, 3.0, 1), Ok(()));
        // A different value does.
        assert_eq!(t.write(0, 3, 4.0, 1), Err(Conflict { thread: 0, wrote: true }));
    }

    #[test]
    fn past_the_recorded_writers_a_reader_races() {
        let mut t = RaceTable::default();
        t.reset(1);
        for w in 0..=WRITERS as u32 {
            assert_eq!(t.write(0, w, 1.0, 1), Ok(()));
        }
        // The last writer was not recorded: its read is reported.
        assert_eq!(t.read(0, WRITERS as u32, 1), Err(Conflict { thread: 0, wrote: true }));
        assert_eq!(t.read(0, 1, 1), Ok(()));
    }

    #[test]
    fn a_writer_of_two_values_makes_a_later_reader_race() {
        // Thread 0 writes 1 then 2; thread 32 writes 2 and reads: thread
        // 0's first store may land between thread 32's store and its load.
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.write(0, 0, 1.0, 1), Ok(()));
        assert_eq!(t.write(0, 0, 2.0, 1), Ok(()));
        assert_eq!(t.write(0, 32, 2.0, 1), Ok(()));
        assert_eq!(t.read(0, 32, 1), Err(Conflict { thread: 0, wrote: true }));
    }

    #[test]
    fn a_same_value_write_after_a_stale_read_races() {
        // Thread 32 reads the old value, then writes 2; thread 0's write of
        // 2 may land before thread 32's read.
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.read(0, 32, 1), Ok(()));
        assert_eq!(t.write(0, 32, 2.0, 1), Ok(()));
        assert_eq!(t.write(0, 0, 2.0, 1), Err(Conflict { thread: 32, wrote: false }));
    }

    #[test]
    fn a_write_over_a_read_of_the_old_value_races() {
        // The reader saw the value from before this epoch's first write.
        let mut t = RaceTable::default();
        t.reset(1);
        assert_eq!(t.read(0, 1, 1), Ok(()));
        assert_eq!(t.write(0, 2, 1.0, 1), Err(Conflict { thread: 1, wrote: false }));
    }
}
