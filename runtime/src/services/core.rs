//! The services every call has, whatever the host: paths and `.clineignore`, the read cache, UI messages,
//! the task's state, and the commit gate.

use crate::services::host::{failed, CallHost, Router};
use toolshed_plugin_api::services::{
    CallCommit, CheckCommandResponse, CheckResponse, CommitResponse, Empty, PathCheck, PathCheckCommand, PathResolve,
    ReadCacheForget, ReadCacheRecord, RecordReadResponse, Say, StateGet, StateGetResponse, StateSet, TaskInfoGet,
};

/// Registers the task-bound services.
pub(crate) fn register(router: &mut Router) {
    router.register::<PathResolve>(|call, req| Ok(call.task.workspace.resolve(&req.path)));
    router.register::<PathCheck>(|call, req| {
        let workspace = &call.task.workspace;
        let allowed = if req.write { workspace.writes_allowed(&req.paths) } else { workspace.allows_all(&req.paths) };
        Ok(CheckResponse { allowed })
    });
    router.register::<PathCheckCommand>(|call: &CallHost, req| {
        let cwd = req.cwd.as_deref().map(std::path::Path::new);
        Ok(CheckCommandResponse { blocked: call.task.workspace.check_command_in(&req.command, cwd) })
    });
    router.register::<ReadCacheRecord>(|call, req| {
        Ok(RecordReadResponse { read_count: call.task.record_read(&req.path, req.mtime_ns) })
    });
    router.register::<ReadCacheForget>(|call, req| {
        call.task.forget_reads(&req.paths);
        Ok(Empty {})
    });
    router.register::<Say>(|call, req| {
        call.task.say(call.tool, call.call_id, req);
        Ok(Empty {})
    });
    // Asked once per task by a handler that takes its task by reference: the very info this call's key names.
    // It only reads, so a call that starts after its cancellation still learns its task and answers in its own
    // words, as it would have with the task sent by value.
    router.register::<TaskInfoGet>(|call, _| serde_json::from_str(&call.task_json.text).map_err(failed)).after_cancel();
    router.register::<StateGet>(|call, req| {
        Ok(StateGetResponse { value: call.task.state.get(&req.key).map(|v| v.clone()) })
    });
    router.register::<StateSet>(|call, req| {
        match req.value {
            Some(value) => call.task.state.insert(req.key, value),
            None => call.task.state.remove(&req.key).map(|(_, v)| v),
        };
        Ok(Empty {})
    });
    router.register::<CallCommit>(|call, _| Ok(CommitResponse { committed: call.commit.commit() }));
}
