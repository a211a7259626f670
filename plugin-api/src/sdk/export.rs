//! The plumbing [`crate::export_plugin!`] expands to: the handler adapter between a typed [`Tool`] and the
//! vtable, the factory step, and the panic containment around every boundary call. Hidden from the docs:
//! plugin authors never call it.

use super::jobs::run_job;
use super::{Failure, HostClient, Tool, ToolInit};
use crate::abi::{HostRef, ToolHandler, ToolHandlerBox, ToolHandler_TO};
use crate::call_layout::CallParts;
use crate::protocol::{Outcome, PartialBlock, Prepared, ToolCall, ToolDeclaration, ToolError};
use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{ROption, RResult, RStr, RString},
};
use serde::{de::DeserializeOwned, Serialize};
use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};

// No thread-local here may need dropping: a thread-local destructor registered on a host thread keeps the
// library mapped until that thread ends, so the host could not unload a replaced version (see the runtime's
// loader). State lives in globals and in the handler instead.

thread_local! {
    // Only its address is used: it tells the threads apart without `std::thread::current()`, which would
    // register a destructor.
    static THREAD_KEY: u8 = const { 0 };
}

/// Panic messages the hook recorded, by thread, until `guard` on that thread takes them. A few at most:
/// panics are rare and each is taken at once; ones on threads no guard runs on age out.
static PANICS: std::sync::Mutex<Vec<(usize, String)>> = std::sync::Mutex::new(Vec::new());

/// Panics recorded but not yet taken kept at most (the oldest go first).
const KEPT_PANICS: usize = 16;

fn thread_key() -> usize {
    THREAD_KEY.with(|key| std::ptr::from_ref(key) as usize)
}

fn panics() -> std::sync::MutexGuard<'static, Vec<(usize, String)>> {
    PANICS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Installs the plugin's quiet panic hook: it records the message and location for the boundary guard and
/// prints nothing. It never symbolises a backtrace unless `TOOLSHED_PLUGIN_BACKTRACE` is set, because one
/// symbolised backtrace costs ~100 ms and ~35 MB of RSS per panic. Called once from the root-module
/// constructor; each cdylib has its own `std`, so this is the plugin's hook, not the host's.
pub fn install_panic_hook() {
    let want_backtrace = std::env::var_os("TOOLSHED_PLUGIN_BACKTRACE").is_some();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "Box<dyn Any>".to_owned());
        let mut text = match info.location() {
            Some(loc) => format!("panicked at {}:{}: {message}", loc.file(), loc.line()),
            None => format!("panicked: {message}"),
        };
        if want_backtrace {
            text.push_str(&format!("\n{}", std::backtrace::Backtrace::force_capture()));
        }
        let key = thread_key();
        let mut recorded = panics();
        recorded.retain(|(thread, _)| *thread != key);
        if recorded.len() >= KEPT_PANICS {
            recorded.remove(0);
        }
        recorded.push((key, text));
    }));
}

/// Runs `f` and turns a panic into an error message, so no unwind ever reaches the `extern "C"` boundary.
pub fn guard<T>(f: impl FnOnce() -> Result<T, String>) -> RResult<T, RString> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => RResult::ROk(value),
        Ok(Err(message)) => RResult::RErr(message.into()),
        Err(payload) => {
            let key = thread_key();
            let recorded = {
                let mut recorded = panics();
                let at = recorded.iter().position(|(thread, _)| *thread == key);
                at.map(|at| recorded.remove(at).1)
            };
            let message = recorded.unwrap_or_else(|| {
                payload
                    .downcast_ref::<&str>()
                    .map(|s| format!("panicked: {s}"))
                    .or_else(|| payload.downcast_ref::<String>().map(|s| format!("panicked: {s}")))
                    .unwrap_or_else(|| "panicked".to_owned())
            });
            // Dropping the payload could itself panic (a payload with a panicking Drop); contain that too.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            RResult::RErr(message.into())
        }
    }
}

fn to_json<T: Serialize>(value: &T) -> Result<RString, String> {
    for_abi(serde_json::to_string(value))
}

/// A serialised answer as the ABI returns it.
fn for_abi(json: Result<String, serde_json::Error>) -> Result<RString, String> {
    json.map(RString::from).map_err(|e| format!("could not serialise the answer: {e}"))
}

/// A call as it arrives, its task still raw or by reference: every call of a task carries the same task, so it is
/// parsed once per handler and task rather than once per phase (it was most of a small call's parsing cost).
#[derive(serde::Deserialize)]
struct RawCall<'a, A> {
    #[serde(borrow)]
    tool: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Cow<'a, str>,
    input: A,
    #[serde(borrow, default)]
    task: Option<&'a serde_json::value::RawValue>,
    /// The task's key, sent instead of `task` to tools declaring [`crate::capability::TASK_BY_REF`].
    #[serde(borrow, default)]
    task_ref: Option<&'a str>,
    #[serde(default)]
    approved: bool,
}

impl<'a, A> RawCall<'a, A> {
    /// What the call's task is cached under: its key, or its JSON text (a key is digits, a text starts with `{`).
    fn task_key(&self) -> Option<&'a str> {
        self.task_ref.or_else(|| self.task.map(serde_json::value::RawValue::get))
    }
}

/// The task infos a handler parsed last, by their key or JSON text: every call of a task carries the same task,
/// so it is parsed (or asked for) once per task rather than once per phase.
/// Kept in the handler, not in a thread-local, so it goes with the handler (see `THREAD_KEY`).
///
/// A call borrows its task's slot for as long as it runs and gives it back after ([`TaskCache::give_back`]),
/// so no call copies the task (its strings and maps are a dozen allocations); a second call of the same task
/// running meanwhile parses its own. The task is swapped between the slot and the call in place (moved whole,
/// its few hundred bytes were copied at every step), and so are the strings the call's tool name and id are
/// written into: two allocations and two frees fewer on every call.
///
/// The slot the last call gave back is taken and given back without a lock, one atomic swap each way: nearly
/// every call is of the task the call before it was. The other tasks' slots wait under a lock.
#[derive(Default)]
struct TaskCache {
    last: crossbeam_utils::atomic::AtomicCell<Option<Box<Slot>>>,
    rest: std::sync::Mutex<Slots>,
}

/// Slots boxed as [`TaskCache::last`] holds them (a pointer fits an atomic swap): a slot moves between the two
/// without being copied.
#[allow(clippy::vec_box)]
type Slots = Vec<Box<Slot>>;

/// One cached task, with the name strings of the last call that had it.
struct Slot {
    /// Its key or JSON text.
    key: String,
    task: crate::protocol::TaskInfo,
    tool: String,
    id: String,
}

/// Tasks a handler remembers: more than a host usually runs at once on one tool.
const CACHED_TASKS: usize = 8;
/// The longest name string kept for the next call (a tool name or an id is short; a huge id is not kept for
/// the handler's lifetime).
const SPARE_NAME_BYTES: usize = 256;

impl TaskCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.rest.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Fills in `call`'s task, from its slot when it is cached and not lent out, else parsed from the call's
    /// `task`, or asked of the host when the call carries only its key (`key`); and its tool name and id. The
    /// slot, to give back with the call.
    fn lend<A>(
        &self,
        key: Option<&str>,
        task: Option<&serde_json::value::RawValue>,
        (tool, id): (&str, &str),
        call: &mut ToolCall<A>,
        host: &HostClient<'_>,
    ) -> Result<Option<Box<Slot>>, ToolError> {
        let slot = key.and_then(|key| self.take(key));
        let slot = match slot {
            Some(mut slot) => {
                std::mem::swap(&mut slot.task, &mut call.task);
                std::mem::swap(&mut slot.tool, &mut call.tool);
                std::mem::swap(&mut slot.id, &mut call.id);
                Some(slot)
            }
            None => {
                if key.is_some() {
                    call.task = Self::parse_task(task, host)?;
                }
                None
            }
        };
        call.tool.clear();
        call.tool.push_str(tool);
        call.id.clear();
        call.id.push_str(id);
        Ok(slot)
    }

    /// The slot of `key`, taken out of the cache.
    fn take(&self, key: &str) -> Option<Box<Slot>> {
        let last = self.last.take();
        if last.as_ref().is_some_and(|last| last.key == key) {
            return last;
        }
        let mut rest = self.lock();
        let found = rest.iter().position(|slot| slot.key == key).map(|at| rest.remove(at));
        if let Some(last) = last {
            Self::keep(&mut rest, last);
        }
        found
    }

    /// Puts a slot among the others, one per key, the oldest going first past the bound.
    fn keep(rest: &mut Slots, slot: Box<Slot>) {
        rest.retain(|kept| kept.key != slot.key);
        if rest.len() >= CACHED_TASKS - 1 {
            rest.remove(0);
        }
        rest.push(slot);
    }

    /// The task of a call that was not in the cache.
    fn parse_task(
        task: Option<&serde_json::value::RawValue>,
        host: &HostClient<'_>,
    ) -> Result<crate::protocol::TaskInfo, ToolError> {
        match task {
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| invalid_input(&super::json_error(&e))),
            // Not the model's mistake: the host could not answer for the task it named.
            None => host.call::<crate::services::TaskInfoGet>(&crate::services::Empty {}).map_err(|e| ToolError {
                message: format!("the host did not say which task this call is in: {}", e.message),
                mistake: false,
            }),
        }
    }

    /// Returns a call's task to the cache once the call is over, in the slot it was lent (a new one for a task
    /// that was not cached), under the key or JSON text it came by, with the strings its tool name and id were
    /// in when they are short. The slot becomes the last one given back.
    fn give_back<A>(&self, key: Option<&str>, call: &mut ToolCall<A>, slot: Option<Box<Slot>>) {
        let Some(key) = key else { return };
        let mut slot = slot.unwrap_or_else(|| {
            Box::new(Slot {
                key: key.to_owned(),
                task: crate::protocol::TaskInfo::default(),
                tool: String::new(),
                id: String::new(),
            })
        });
        std::mem::swap(&mut slot.task, &mut call.task);
        let short = |name: &String| name.capacity() <= SPARE_NAME_BYTES;
        if short(&call.tool) && short(&call.id) {
            std::mem::swap(&mut slot.tool, &mut call.tool);
            std::mem::swap(&mut slot.id, &mut call.id);
        }
        // A slot of the same task given back meanwhile (by a call that ran while this one held the task) is
        // the same task: one is enough.
        if let Some(previous) = self.last.swap(Some(slot)).filter(|previous| previous.key != key) {
            Self::keep(&mut self.lock(), previous);
        }
    }

    /// The cached slots' keys and task ids, the last one given back first.
    #[cfg(test)]
    fn cached(&self) -> Vec<(String, String)> {
        let last = self.last.take();
        let cached: Vec<_> =
            last.iter().chain(self.lock().iter()).map(|s| (s.key.clone(), s.task.task_id.clone())).collect();
        if let Some(last) = last {
            self.last.store(Some(last));
        }
        cached
    }
}

/// A call in the host's own layout (nearly every call; see [`CallParts`]), read from its parts without the
/// general parse: `None` when it is not in that layout, or its input is not one JSON value the general parse
/// would take, which the general parse then reads (and words the error of).
fn fast_call<A: DeserializeOwned>(call: &str) -> Option<RawCall<'_, A>> {
    let parts = CallParts::read(call)?;
    // serde_json allows 128 levels of nesting in a document; the input alone would get the level the call's own
    // object takes, and pass at a depth the general parse refuses. An input with fewer than 127 openers cannot
    // be 127 levels deep; the rare one with more goes the general way. (Counted only where it could be: each
    // level takes two bytes.)
    let openers = |input: &str| input.bytes().filter(|&b| b == b'[' || b == b'{').count();
    if parts.input.len() >= 2 * (MAX_NESTING - 1) && openers(parts.input) >= MAX_NESTING - 1 {
        return None;
    }
    let input = serde_json::from_str(parts.input).ok()?;
    Some(RawCall {
        tool: Cow::Borrowed(parts.tool),
        id: Cow::Borrowed(parts.id),
        input,
        task: None,
        task_ref: Some(parts.task_ref),
        approved: parts.approved,
    })
}

/// The nesting serde_json allows in one document.
const MAX_NESTING: usize = 128;

/// Parses a call: [`fast_call`] when it can, else the derive, which also words every error.
fn read_call<A: DeserializeOwned>(call: &str) -> Result<RawCall<'_, A>, ToolError> {
    fast_call(call).map_or_else(|| general_call(call), Ok)
}

/// Parses a call by the derive.
fn general_call<A: DeserializeOwned>(call: &str) -> Result<RawCall<'_, A>, ToolError> {
    serde_json::from_str(call).map_err(|e| invalid_input(&super::json_error(&e)))
}

/// Runs `run` on a call as read (or the error reading it gave), with its task, and gives the task back to the
/// cache.
fn with_call<A: DeserializeOwned, R>(
    raw: Result<RawCall<'_, A>, ToolError>,
    tasks: &TaskCache,
    host: &HostClient<'_>,
    run: impl FnOnce(&ToolCall<A>) -> R,
) -> Result<R, ToolError> {
    let raw = raw?;
    let key = raw.task_key();
    let mut call = ToolCall {
        tool: String::new(),
        id: String::new(),
        input: raw.input,
        task: crate::protocol::TaskInfo::default(),
        approved: raw.approved,
    };
    let slot = tasks.lend(key, raw.task, (&raw.tool, &raw.id), &mut call, host)?;
    let answer = run(&call);
    tasks.give_back(key, &mut call, slot);
    Ok(answer)
}

/// Connects a typed [`Tool`] to the [`ToolHandler`] vtable.
struct Adapter<T> {
    tool: T,
    tasks: TaskCache,
}

impl<T: Tool> ToolHandler for Adapter<T> {
    fn prepare(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        guard(|| {
            let host = HostClient::new(host);
            let answer = with_call(read_call::<T::Args>(call.as_str()), &self.tasks, &host, |call| {
                self.tool.prepare(call, &host)
            })
            .map_or_else(Prepared::Error, Failure::prepared);
            to_json(&answer)
        })
    }

    fn execute(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        guard(|| {
            let host = HostClient::new(host);
            // A call read in the host's layout has exactly its four keys, so it names no job: only a call in the
            // general shape can (`{"tool":…,"job":…}`), and only one of those is looked at for one.
            let fast = fast_call::<T::Args>(call.as_str());
            // (No `let` chain: this crate is also built as edition 2021, the foreign-version fixture.)
            let job = match fast {
                None => run_job(&self.tool, call.as_str(), &host),
                Some(_) => None,
            };
            if let Some(answer) = job {
                return to_json(&answer);
            }
            let raw = fast.map_or_else(|| general_call(call.as_str()), Ok);
            let answer = with_call(raw, &self.tasks, &host, |call| self.tool.execute(call, &host))
                .map_or_else(Outcome::Error, Failure::outcome);
            for_abi(answer.to_json())
        })
    }

    fn partial(&self, block: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString> {
        guard(|| {
            let host = HostClient::new(host);
            // A streamed block is parsed like a call (its input partial, any JSON), its task from the cache.
            let _ = with_call(read_call::<serde_json::Value>(block.as_str()), &self.tasks, &host, |call| {
                let block = PartialBlock {
                    tool: call.tool.clone(),
                    id: call.id.clone(),
                    input: call.input.clone(),
                    task: call.task.clone(),
                };
                self.tool.partial(&block, &host);
            });
            Ok(RString::from("{}"))
        })
    }
}

fn invalid_input(error: &str) -> ToolError {
    ToolError { message: format!("Invalid tool input: {error}"), mistake: true }
}

/// The factory step of [`crate::export_plugin!`] for one tool type: `Ok(None)` when `name` is not its name.
pub fn construct<T: Tool>(name: &str, config: &str) -> Result<Option<ToolHandlerBox>, String> {
    if T::declaration().name != name {
        return Ok(None);
    }
    let tool = T::new(&ToolInit { name, config })?;
    Ok(tool.map(|tool| ToolHandler_TO::from_value(Adapter { tool, tasks: TaskCache::default() }, TD_Opaque)))
}

/// Converts the factory's answer for the ABI.
pub fn into_abi(handler: Option<ToolHandlerBox>) -> ROption<ToolHandlerBox> {
    handler.map_or(ROption::RNone, ROption::RSome)
}

/// Serialises the declarations of a plugin's tools, as they are.
pub fn declarations_json(tools: Vec<ToolDeclaration>) -> Result<RString, String> {
    to_json(&crate::protocol::PluginDeclaration { tools })
}

/// Serialises the declarations of the tools [`crate::export_plugin!`] exports through this SDK's handler, each
/// declaring [`crate::capability::TASK_BY_REF`]: that handler resolves a task reference itself (`TaskCache`).
/// A hand-written root module with its own handler uses [`declarations_json`] instead.
pub fn exported_declarations_json(mut tools: Vec<ToolDeclaration>) -> Result<RString, String> {
    for tool in &mut tools {
        if !tool.capabilities.iter().any(|c| c == crate::capability::TASK_BY_REF) {
            tool.capabilities.push(crate::capability::TASK_BY_REF.to_owned());
        }
    }
    to_json(&crate::protocol::PluginDeclaration { tools })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{Host, Host_TO};
    use abi_stable::std_types::RVec;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn call(task_id: &str) -> String {
        format!(r#"{{"tool":"t","id":"1","input":{{}},"task":{{"task_id":"{task_id}","cwd":"/w","mode":"act"}}}}"#)
    }

    fn call_by_ref(key: &str) -> String {
        format!(r#"{{"tool":"t","id":"1","input":{{}},"task_ref":"{key}"}}"#)
    }

    /// A host whose `task.info` answers the task `task_id` (or offers no such service), counting the requests.
    struct TaskHost {
        task_id: Option<&'static str>,
        asked: AtomicUsize,
    }

    impl Host for TaskHost {
        fn service(&self, name: RStr<'_>, _request: RStr<'_>) -> RResult<RString, RString> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            match (name.as_str(), self.task_id) {
                (crate::services::TASK_INFO, Some(id)) => RResult::ROk(format!(r#"{{"task_id":"{id}"}}"#).into()),
                _ => RResult::RErr(r#"{"kind":"unknown_service","message":"no such service"}"#.into()),
            }
        }
        fn services(&self) -> RVec<RString> {
            RVec::new()
        }
        fn is_cancelled(&self) -> bool {
            false
        }
        fn log(&self, _level: u8, _message: RStr<'_>) {}
    }

    fn host(task_id: Option<&'static str>) -> TaskHost {
        TaskHost { task_id, asked: AtomicUsize::new(0) }
    }

    fn run<R>(text: &str, tasks: &TaskCache, host: &TaskHost, f: impl FnOnce(&ToolCall) -> R) -> Result<R, ToolError> {
        with_call(read_call::<serde_json::Value>(text), tasks, &HostClient::new(Host_TO::from_ptr(host, TD_Opaque)), f)
    }

    /// A call's parts as `read_call` gives them, or its error: what the fast reader and the derive must agree on.
    type Read = Result<(String, String, serde_json::Value, Option<String>, Option<String>, bool), String>;

    fn parts(raw: Result<RawCall<'_, serde_json::Value>, ToolError>) -> Read {
        raw.map(|raw| {
            (
                raw.tool.into_owned(),
                raw.id.into_owned(),
                raw.input,
                raw.task.map(|t| t.get().to_owned()),
                raw.task_ref.map(str::to_owned),
                raw.approved,
            )
        })
        .map_err(|e| e.message)
    }

    #[test]
    fn a_call_reads_as_the_derive_reads_it_in_every_layout() {
        let heads = [
            r#"{"tool":"#,
            r#"{"approved":true,"tool":"#,
            r#"{"approved":false,"tool":"#,
            r#"{ "tool":"#,
            r#"{"tool" :"#,
        ];
        let strings = [
            r#""t""#,
            r#""""#,
            r#""a\"b""#,
            r#""a\\""#,
            r#""\u0041""#,
            "\"a\u{1}b\"",
            "\"\u{7f}é😀\"",
            r#""a"b""#,
            r#""a"#,
            r#""a","tool":"b""#,
            "1",
            "null",
        ];
        let ids = [r#","id":"#, r#", "id":"#, r#","ID":"#];
        let inputs = [
            "{}",
            "[]",
            "1",
            "12",
            r#""x""#,
            r#"{"a":[1,{"b":null}]}"#,
            " {} ",
            "{} ",
            r#"{"a":1},"tool":"x""#,
            r#"1,"id":"2""#,
            "}",
            "",
            "{",
            r#"{"task_ref":"1"}"#,
            "1 2",
            r#""a\"}""#,
        ];
        let tails = [
            r#","task_ref":"1"}"#,
            r#","task_ref":"123"}"#,
            r#","task_ref":""}"#,
            r#","task_ref":"a"}"#,
            r#","task_ref":"1a"}"#,
            r#","task_ref":"1" }"#,
            r#","task_ref":"1"} "#,
            r#","task_ref":1}"#,
            r#","task":{"task_id":"x"}}"#,
            r#","task_ref":"1","task_ref":"2"}"#,
            r#","task_ref":"1","approved":true}"#,
            "}",
            r#","task_ref":"\u0031"}"#,
            r#""task_ref":"1"}"#,
        ];
        let mut fast = 0;
        for head in heads {
            for tool in strings {
                for id_key in ids {
                    for id in strings {
                        for input in inputs {
                            for tail in tails {
                                let call = format!(r#"{head}{tool}{id_key}{id},"input":{input}{tail}"#);
                                let general = parts(
                                    serde_json::from_str::<RawCall<'_, serde_json::Value>>(&call)
                                        .map_err(|e| invalid_input(&crate::sdk::json_error(&e))),
                                );
                                assert_eq!(parts(read_call(&call)), general, "{call}");
                                fast += usize::from(crate::call_layout::CallParts::read(&call).is_some());
                            }
                        }
                    }
                }
            }
        }
        // The layout the host writes took the short path, and not only it: the comparison covered both.
        assert!(fast > 500, "{fast}");
        let noop = crate::call_layout::CallParts::read(r#"{"tool":"noop","id":"","input":{},"task_ref":"7"}"#);
        assert_eq!(
            noop,
            Some(crate::call_layout::CallParts { tool: "noop", id: "", input: "{}", task_ref: "7", approved: false })
        );
    }

    #[test]
    fn a_deeply_nested_input_is_refused_by_either_reader_at_the_same_depth() {
        let mut took_fast = 0;
        for depth in [1, 60, 125, 126, 127, 128, 129, 300] {
            let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let objects = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
            let mixed = format!("{}{}", r#"[{"a":"#.repeat(depth / 2), "}]".repeat(depth / 2));
            // Openers inside strings count too: the count only decides which reader reads, never the answer.
            let quoted = format!(r#"{{"s":"{}"}}"#, "[".repeat(depth));
            for input in [arrays, objects, mixed, quoted] {
                let call = format!(r#"{{"tool":"t","id":"i","input":{input},"task_ref":"1"}}"#);
                let general = parts(
                    serde_json::from_str::<RawCall<'_, serde_json::Value>>(&call)
                        .map_err(|e| invalid_input(&crate::sdk::json_error(&e))),
                );
                assert_eq!(parts(read_call(&call)), general, "depth {depth}: {input}");
                took_fast += usize::from(fast_call::<serde_json::Value>(&call).is_some());
            }
        }
        assert!(took_fast > 0);
    }

    /// Answers job `j` and executes anything else.
    struct Jobs;

    impl Tool for Jobs {
        type Args = serde_json::Value;
        fn declaration() -> ToolDeclaration {
            crate::declare("jobs", "Runs jobs.", &[])
        }
        fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
            Ok(Some(Jobs))
        }
        fn execute(&self, _: &ToolCall, _: &HostClient<'_>) -> Result<Outcome, Failure> {
            Ok(crate::result::text("executed"))
        }
        fn job(&self, name: &str, _: serde_json::Value, _: &HostClient<'_>) -> Result<serde_json::Value, String> {
            Ok(serde_json::Value::from(format!("job {name}")))
        }
    }

    #[test]
    fn a_call_that_names_a_job_runs_it_whatever_its_layout() {
        let adapter = Adapter { tool: Jobs, tasks: TaskCache::default() };
        let task_host = host(Some("a"));
        let answer = |call: &str| match adapter.execute(RStr::from_str(call), Host_TO::from_ptr(&task_host, TD_Opaque))
        {
            RResult::ROk(text) => text.into_string(),
            RResult::RErr(e) => panic!("{e}"),
        };
        for call in [
            r#"{"tool":"jobs","input":{},"job":"j"}"#,
            // Laid out as the host lays out a call up to its input, with more keys after it.
            r#"{"tool":"jobs","id":"","input":{},"job":"j","task_ref":"1"}"#,
            r#"{"tool":"jobs","id":"","input":{} ,"job":"j","task_ref":"1"}"#,
        ] {
            assert!(answer(call).contains("job j"), "{call}: {}", answer(call));
        }
        assert!(answer(r#"{"tool":"jobs","id":"","input":{"job":"j"},"task_ref":"1"}"#).contains("executed"));
    }

    #[test]
    fn the_strings_of_one_call_hold_the_next_calls_names_and_only_short_ones_are_kept() {
        let (tasks, host) = (TaskCache::default(), host(Some("a")));
        let long = "x".repeat(SPARE_NAME_BYTES + 1);
        for (tool, id) in [("read_file", "toolu_0123456789"), ("t", ""), ("a\"b", "é\n"), ("t", &long), ("t", "1")] {
            let text = format!(
                r#"{{"tool":{},"id":{},"input":{{}},"task_ref":"7"}}"#,
                serde_json::to_string(tool).unwrap(),
                serde_json::to_string(id).unwrap()
            );
            let seen = run(&text, &tasks, &host, |c| (c.tool.clone(), c.id.clone())).unwrap();
            assert_eq!(seen, (tool.to_owned(), id.to_owned()));
            let last = tasks.last.take().expect("the task's slot is given back");
            assert!(last.tool.capacity() <= SPARE_NAME_BYTES && last.id.capacity() <= SPARE_NAME_BYTES);
            // Kept from this call, or empty after a call whose strings were too long to keep.
            let kept = (last.tool.as_str(), last.id.as_str());
            assert!(kept == (tool, id) || (id == long && kept == ("", "")), "{kept:?}");
            tasks.last.store(Some(last));
        }
    }

    #[test]
    fn a_call_borrows_its_task_and_gives_it_back() {
        let (tasks, host) = (TaskCache::default(), host(None));
        let ids = |tasks: &TaskCache| tasks.cached().into_iter().map(|(_, id)| id).collect::<Vec<_>>();
        let first = run(&call("a"), &tasks, &host, |c| c.task.task_id.clone()).unwrap();
        assert_eq!(first, "a");
        assert_eq!(ids(&tasks), ["a"]);
        // While one call holds the task, another of the same task reads its own copy, and both come back.
        let nested = run(&call("a"), &tasks, &host, |outer| {
            assert!(tasks.cached().is_empty(), "lent out");
            let inner = run(&call("a"), &tasks, &host, |c| c.task.cwd.clone()).unwrap();
            (outer.task.mode.clone(), inner)
        });
        assert_eq!(nested.unwrap(), ("act".to_owned(), "/w".to_owned()));
        assert_eq!(ids(&tasks), ["a"], "one slot per task");
        // Another task's text is another slot; the cache stays bounded, and the last one given back is first.
        for i in 0..(CACHED_TASKS * 2) {
            let id = run(&call(&i.to_string()), &tasks, &host, |c| c.task.task_id.clone());
            assert_eq!(id.unwrap(), i.to_string());
            assert_eq!(ids(&tasks)[0], i.to_string());
        }
        assert_eq!(tasks.cached().len(), CACHED_TASKS);
        // Tasks taking turns each find their slot.
        for i in [3, 15, 14, 15, 14] {
            let id = run(&call(&i.to_string()), &tasks, &host, |c| c.task.task_id.clone());
            assert_eq!(id.unwrap(), i.to_string());
        }
        let cached = ids(&tasks);
        assert!(cached.len() <= CACHED_TASKS && cached[0] == "14", "{cached:?}");
        assert!(["15", "3"].iter().all(|id| cached.iter().any(|c| c == id)), "{cached:?}");
        assert_eq!(host.asked.load(Ordering::SeqCst), 0, "a task sent by value is never asked for");
    }

    #[test]
    fn a_task_sent_by_reference_is_asked_of_the_host_once() {
        let (tasks, host) = (TaskCache::default(), host(Some("by-ref")));
        for _ in 0..3 {
            assert_eq!(run(&call_by_ref("7"), &tasks, &host, |c| c.task.task_id.clone()).unwrap(), "by-ref");
        }
        assert_eq!(host.asked.load(Ordering::SeqCst), 1);
        // Another key is another task (a new mode is a new key): asked again.
        run(&call_by_ref("8"), &tasks, &host, |_| ()).unwrap();
        assert_eq!(host.asked.load(Ordering::SeqCst), 2);
        // A nested call of the same key while the entry is lent out asks for its own.
        run(&call_by_ref("8"), &tasks, &host, |_| run(&call_by_ref("8"), &tasks, &host, |_| ()).unwrap()).unwrap();
        assert_eq!(host.asked.load(Ordering::SeqCst), 3);
    }

    /// Threads calling one handler at once, of a few tasks in turn: every call sees its own task and names, and
    /// the cache stays bounded.
    #[test]
    fn calls_on_many_threads_each_see_their_own_task() {
        let (tasks, host) = (TaskCache::default(), host(None));
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let (tasks, host) = (&tasks, &host);
                scope.spawn(move || {
                    for i in 0..400 {
                        let task_id =
                            ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"][(i + thread) % (3 + thread * 2)];
                        let text = call(task_id).replace(r#""id":"1""#, &format!(r#""id":"{thread}-{i}""#));
                        let seen = run(&text, tasks, host, |c| (c.task.task_id.clone(), c.id.clone())).unwrap();
                        assert_eq!(seen, (task_id.to_owned(), format!("{thread}-{i}")));
                    }
                });
            }
        });
        assert!(tasks.cached().len() <= CACHED_TASKS);
    }

    #[test]
    fn a_reference_the_host_cannot_resolve_fails_the_call_with_a_reason() {
        let (tasks, host) = (TaskCache::default(), host(None));
        let error = run(&call_by_ref("7"), &tasks, &host, |_| ()).unwrap_err();
        assert!(error.message.starts_with("the host did not say which task this call is in"), "{error:?}");
        assert!(!error.mistake, "not the model's mistake");
        assert!(tasks.cached().is_empty());
    }

    #[test]
    fn a_call_that_panics_leaves_the_cache_usable() {
        let (tasks, host) = (TaskCache::default(), host(None));
        run(&call("a"), &tasks, &host, |_| ()).unwrap();
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            run(&call("a"), &tasks, &host, |_| panic!("boom")).unwrap();
        }));
        assert!(panicked.is_err());
        let id = run(&call("a"), &tasks, &host, |c| c.task.task_id.clone()).unwrap();
        assert_eq!(id, "a");
        assert_eq!(tasks.cached().len(), 1, "the task is cached again");
    }

    #[test]
    fn every_exported_declaration_takes_its_task_by_reference() {
        let plain = declarations_json(vec![crate::declare("t", "d", &[])]).unwrap();
        assert!(!plain.as_str().contains(crate::capability::TASK_BY_REF), "a hand-written module's, as given");
        let declared = exported_declarations_json(vec![crate::declare("t", "d", &[])]).unwrap();
        let parsed: crate::protocol::PluginDeclaration = serde_json::from_str(declared.as_str()).unwrap();
        assert_eq!(parsed.tools[0].capabilities, [crate::capability::TASK_BY_REF]);
    }
}
