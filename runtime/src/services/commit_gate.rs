//! The commit gate of one call: the plugin asks to commit right before its first write (`call.commit`), the
//! runtime closes the gate when the call times out or is cancelled, and whichever comes first wins. So a call
//! reported as failed never writes afterwards, and a call that committed is waited for and reports what it
//! wrote.

use std::sync::atomic::{AtomicU8, Ordering};

const RUNNING: u8 = 0;
const COMMITTING: u8 = 1;
const CLOSED: u8 = 2;

/// The state of one call's writes: running (nothing written yet), committing (writing), or closed (the call
/// was given up and may not write).
#[derive(Debug, Default)]
pub(crate) struct CommitGate(AtomicU8);

impl CommitGate {
    /// The plugin's side: whether it may write now. Asking again after a commit answers yes.
    pub fn commit(&self) -> bool {
        match self.0.compare_exchange(RUNNING, COMMITTING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(state) => state == COMMITTING,
        }
    }

    /// The runtime's side, when it stops waiting: `true` when the call can no longer commit, `false` when it
    /// already did and is writing (the runtime then waits for its answer).
    pub fn close(&self) -> bool {
        match self.0.compare_exchange(RUNNING, CLOSED, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(state) => state == CLOSED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_side_wins() {
        let gate = CommitGate::default();
        assert!(gate.commit() && gate.commit());
        assert!(!gate.close());
        let gate = CommitGate::default();
        assert!(gate.close() && gate.close());
        assert!(!gate.commit());
    }

    #[test]
    fn racing_threads_never_both_win() {
        for _ in 0..1000 {
            let gate = std::sync::Arc::new(CommitGate::default());
            let other = std::sync::Arc::clone(&gate);
            let committer = std::thread::spawn(move || other.commit());
            let closed = gate.close();
            let committed = committer.join().unwrap_or(false);
            assert_ne!(closed, committed);
        }
    }
}
