//! The commit gate (issue 22): a call that was reported as failed never writes afterwards.

use super::Empty;
use serde::{Deserialize, Serialize};

services! {
    /// `call.commit`: an edit tool asks it right before its first write. The host moves the call from running to
    /// committing and answers `committed: true`, unless the call already timed out or was cancelled: then it
    /// answers `committed: false` (or the `Cancelled` error every service gives then) and the tool must not
    /// write. A call that committed is waited for when its timeout passes, so its result reports what it wrote.
    /// A tool whose every write goes through the gate declares [`crate::capability::COMMITS_WRITES`].
    CallCommit(CALL_COMMIT) = "call.commit": Empty => CommitResponse;
}

/// Response of [`CallCommit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitResponse {
    /// Whether the call may write now.
    pub committed: bool,
}
