//! Hot reload: plugins dropped into, rebuilt in and removed from a watched directory, through the public API
//! and `toolshed watch`; broken builds that must never replace a working one; the bounded cost of reloads;
//! and a plugin made by `cargo xtask new-plugin` outside the workspace.

use crate::util::*;
use serde_json::json;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use toolshed::{Config, PluginEvent, PluginEvents, Runtime, ToolUse};

/// How long any one expected event may take: generous, since it only bounds a failure.
const PATIENCE: Duration = Duration::from_secs(60);

fn variant_b() -> PathBuf {
    fixtures().join("variants").join(lib("fixture_reload"))
}

/// A runtime over `dir` with a short debounce (events are awaited, never timed).
fn watched(dir: &Path) -> (Runtime, PluginEvents) {
    let config = Config::from_toml_str("[timeouts]\nwatch_debounce_ms = 30\n").unwrap();
    let runtime = Runtime::builder().config(config).plugin_dir(dir).build().unwrap();
    let events = runtime.events();
    runtime.watch().unwrap();
    (runtime, events)
}

fn next(events: &mut PluginEvents) -> PluginEvent {
    events.recv_timeout(PATIENCE).expect("no plugin event within the bound")
}

/// Writes `bytes` to `to` in place (truncate, then write), as a build or `cp` does.
fn write(to: &Path, bytes: &[u8]) {
    std::fs::write(to, bytes).unwrap();
}

fn probe(runtime: &Runtime, ws: &Path) -> String {
    let result = call(&task_in(runtime, ws), "reload_probe", json!({}));
    assert!(!result.is_error(), "{result:?}");
    text(&result)
}

#[test]
fn a_rebuilt_plugin_serves_new_calls_while_calls_in_flight_finish_on_the_old_code_then_is_unloaded() {
    let dir = workspace();
    let ws = workspace();
    let (file, hash_a) = variant_a_of_its_own(dir.path());
    let (runtime, mut events) = watched(dir.path());
    assert_eq!(probe(&runtime, ws.path()), "variant A");

    // A call in flight: it has resolved its route and is running when the new build lands.
    let (mark, release) = (ws.path().join("started"), ws.path().join("release"));
    let task = task_in(&runtime, ws.path());
    let slow = {
        let (task, mark, release) = (task.clone(), mark.clone(), release.clone());
        std::thread::spawn(move || {
            let input = json!({"mark": mark, "wait_for": release});
            text(&block_on(task.execute(ToolUse::new("slow", "reload_probe", input))))
        })
    };
    // A streamed tool use whose first block arrived before the swap.
    block_on(task.partial("streamed", "reload_probe", json!({})));
    let deadline = std::time::Instant::now() + PATIENCE;
    while !mark.exists() {
        assert!(std::time::Instant::now() < deadline, "the slow call never started");
        std::thread::sleep(Duration::from_millis(5));
    }

    write(&file, &std::fs::read(variant_b()).unwrap());
    match next(&mut events) {
        PluginEvent::Reloaded { file: f, plugin, tools, removed, .. } => {
            assert_eq!((f, plugin.as_str()), (file.clone(), "fixture_reload"));
            assert_eq!((tools, removed), (vec!["reload_probe".to_owned()], vec![]));
        }
        other => panic!("expected a reload, got {other}"),
    }
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    let streamed = block_on(task.execute(ToolUse::new("streamed", "reload_probe", json!({}))));
    assert_eq!(text(&streamed), "variant A", "a streamed tool use keeps the generation it started on");
    // The slow call still runs on variant A: its copy stays.
    let stats = runtime.reload_stats();
    assert_eq!((stats.reloads, stats.old_copies), (1, 1), "{stats:?}");
    assert!(stats.old_bytes > 0 && mapped(&hash_a), "{stats:?}");
    std::fs::write(&release, "").unwrap();
    assert_eq!(slow.join().unwrap(), "variant A");
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    // Its last call finished: variant A is unloaded, unmapped from the process.
    let deadline = std::time::Instant::now() + PATIENCE;
    while runtime.reload_stats().old_copies > 0 || mapped(&hash_a) {
        assert!(std::time::Instant::now() < deadline, "variant A stayed mapped: {:?}", runtime.reload_stats());
        std::thread::sleep(Duration::from_millis(5));
    }

    // Removed: its tools are gone.
    std::fs::remove_file(&file).unwrap();
    match next(&mut events) {
        PluginEvent::Unloaded { file: f, tools } => assert_eq!((f, tools), (file, vec!["reload_probe".to_owned()])),
        other => panic!("expected an unload, got {other}"),
    }
    let gone = call(&task_in(&runtime, ws.path()), "reload_probe", json!({}));
    assert!(gone.is_error() && text(&gone).contains("Tool 'reload_probe' does not exist"), "{gone:?}");
    assert!(runtime.tools().is_empty());
}

/// A plugin that starts scoped threads, on its caller's thread (an inline tool) and on a worker, leaves exit work
/// of its own copy of std on those threads (a thread's handle, the scope's threads still on their way out when
/// the scope returns). The runtime, and with it the library's last holder, goes while a host thread that ran the
/// plugin still lives and its workers are retiring; those threads then end, round after round, and the process
/// lives on (a pooled lane that changed when workers ended, relative to the unload, once crashed a whole
/// host-suite run with a worker executing in an unmapped library).
#[test]
fn a_plugin_s_threads_end_after_its_runtime_is_dropped_and_nothing_runs_in_an_unmapped_library() {
    let dir = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    // Content of its own, so its shadow copies are this test's alone.
    let file = dir.path().join(lib("fixture_tools"));
    let mut bytes = std::fs::read(fixtures().join(lib("fixture_tools"))).unwrap();
    bytes.extend_from_slice(format!("\0{}", file.display()).as_bytes());
    write(&file, &bytes);
    for round in 0..8 {
        let runtime = Runtime::builder().plugin_file(&file).yes(true).build().unwrap();
        let task = task_in(&runtime, ws.path());
        let (answered, answers) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let host_thread = std::thread::spawn(move || {
            for tool in ["scoped_inline", "scoped_pooled"] {
                answered.send((tool, text(&call(&task, tool, json!({}))))).unwrap();
            }
            drop(task);
            // Lives on past the runtime, as an embedding host's threads do.
            released.recv().unwrap();
        });
        for tool in ["scoped_inline", "scoped_pooled"] {
            assert_eq!(
                answers.recv_timeout(PATIENCE).unwrap(),
                (tool, "another thread: true".to_owned()),
                "round {round}"
            );
        }
        drop(runtime);
        release.send(()).unwrap();
        host_thread.join().unwrap();
    }
    // A runtime loaded afterwards (its load and the unloads it triggers find no stale thread) still answers.
    let runtime = Runtime::builder().plugin_file(&file).yes(true).build().unwrap();
    assert_eq!(text(&call(&task_in(&runtime, ws.path()), "scoped_pooled", json!({}))), "another thread: true");
}

/// Variant A in `dir` with content of its own (trailing bytes an ELF loader ignores), so its shadow copies are
/// this test's alone; returns the file and its content hash.
fn variant_a_of_its_own(dir: &Path) -> (PathBuf, String) {
    let file = dir.join(lib("fixture_reload"));
    let mut bytes = std::fs::read(fixture("fixture_reload")).unwrap();
    bytes.extend_from_slice(format!("\0{}", file.display()).as_bytes());
    write(&file, &bytes);
    let hash = toolshed::load_plugin(&file).unwrap().identity.content_hash.clone();
    (file, hash)
}

/// Whether the library whose identity is `hash` is mapped in this process from a copy: a shadow copy named
/// by its content hash, or the private copy a library leased in place was moved to when its file was written.
fn mapped(hash: &str) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.contains(&format!("/{}-", &hash[..16])) || maps.contains(&format!("/moved-{hash}-"))
}

#[test]
fn with_unloading_off_a_replaced_version_stays_mapped() {
    let dir = workspace();
    let ws = workspace();
    let (file, hash_a) = variant_a_of_its_own(dir.path());
    let config = Config::from_toml_str("[plugins]\nunload = false\n").unwrap();
    let runtime = Runtime::builder().config(config).plugin_dir(dir.path()).build().unwrap();
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    write(&file, &std::fs::read(variant_b()).unwrap());
    assert!(matches!(block_on(runtime.rescan()).as_slice(), [PluginEvent::Reloaded { .. }]));
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    let stats = runtime.reload_stats();
    assert_eq!((stats.reloads, stats.old_copies), (1, 1), "kept for good: {stats:?}");
    assert!(mapped(&hash_a));
}

/// Runs a command as a test's set-up step; false when it cannot run or fails (no privilege for it here).
fn privileged(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).stderr(Stdio::null()).status().is_ok_and(|status| status.success())
}

/// Whether `file` (its own inode, not a shadow copy) is mapped in this process.
fn mapped_in_place(file: &Path) -> bool {
    let path = file.canonicalize().unwrap().display().to_string();
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().any(|line| line.ends_with(&path))
}

/// Clears the immutable attribute when the test ends, however it ends, so its directory can be removed.
struct Mutable(PathBuf);

impl Drop for Mutable {
    fn drop(&mut self) {
        privileged("chattr", &["-i", &self.0.to_string_lossy()]);
    }
}

#[test]
fn a_library_nobody_can_overwrite_in_place_is_loaded_from_its_own_file_and_replaced_by_a_rename() {
    let dir = workspace();
    let ws = workspace();
    let (file, _) = variant_a_of_its_own(dir.path());
    let immutable = privileged("chattr", &["+i", &file.to_string_lossy()]);
    let mutable = Mutable(file.clone());
    // Not watched: every step below is a rescan's. A watcher would race it, as each change is an inotify event
    // (`IN_ATTRIB` for the attribute, a move for the rename) that it reloads on after its debounce, and the rescan
    // that came second found nothing to do (a CI run failed so).
    let runtime = Runtime::builder().plugin_dir(dir.path()).build().unwrap();
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    if !immutable {
        // No CAP_LINUX_IMMUTABLE, or a file system without the attribute: the library was copied as ever.
        assert!(!mapped_in_place(&file), "a writable library must be loaded from a copy");
        return;
    }
    assert!(mapped_in_place(&file), "an immutable library is mapped as it is, with no copy");
    assert!(std::fs::write(&file, b"overwritten").is_err(), "the kernel refuses to write it in place");
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    // Nothing changed, so a rescan finds nothing to do (its identity is its stamp, which did not move).
    assert_eq!(block_on(runtime.rescan()), vec![]);
    // Clearing the attribute makes it writable in place. The next rescan sees a new identity and loads the same bytes again, from a copy (or under
    // a read lease where `lease_poll_ms` is set), so a later write in place cannot reach the mapping.
    drop(mutable);
    assert!(matches!(block_on(runtime.rescan()).as_slice(), [PluginEvent::Reloaded { .. }]));
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    // Updating it: rename a new build over it (as install(1) and package managers do).
    let staged = dir.path().join("staged.tmp");
    std::fs::copy(variant_b(), &staged).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    assert!(matches!(block_on(runtime.rescan()).as_slice(), [PluginEvent::Reloaded { .. }]));
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    // The new file, writable, overwritten in place: the leased mapping moves to a private copy first, and keeps
    // serving variant B.
    write(&file, b"not a library at all");
    assert_eq!(probe(&runtime, ws.path()), "variant B");
}

#[test]
fn a_library_on_a_read_only_mount_of_a_writable_file_system_is_not_trusted_to_stay_as_it_is() {
    let dir = workspace();
    let ws = workspace();
    let mount = dir.path().join("ro");
    std::fs::create_dir(&mount).unwrap();
    let mount_arg = mount.to_string_lossy().into_owned();
    let mounted = privileged("mount", &["-t", "tmpfs", "-o", "size=64m", "toolshed-test", &mount_arg]);
    struct Unmount(String, bool);
    impl Drop for Unmount {
        fn drop(&mut self) {
            if self.1 {
                privileged("umount", &["-l", &self.0]);
            }
        }
    }
    let _unmount = Unmount(mount_arg.clone(), mounted);
    let file = mount.join(lib("fixture_reload"));
    std::fs::copy(fixture("fixture_reload"), &file).unwrap();
    let _read_only = mounted && privileged("mount", &["-o", "remount,ro", &mount_arg]);
    let runtime = Runtime::builder().plugin_dir(&mount).build().unwrap();
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    // tmpfs can be written: a read-only mount of it may be a view of files another mount writes (here the
    // remount is the only mount, but the loader cannot know that), so the mount is not what vouches for the
    // file: it is a writable library like any other, leased (a lease is the file's, whichever mount writes it).
    let identity = block_on(runtime.rescan());
    assert_eq!(identity, vec![], "nothing changed");
    let loaded = toolshed::load_plugin(&file).unwrap();
    assert!(!loaded.identity.content_hash.starts_with("fixed-"), "{:?}", loaded.identity);
    drop(runtime);
}

/// A runtime over `dir` that checks its leases every 2 ms, so a writer in a test waits little.
fn leasing(dir: &Path) -> Runtime {
    let config = Config::from_toml_str("[plugins]\nlease_poll_ms = 2\n").unwrap();
    Runtime::builder().config(config).plugin_dir(dir).build().unwrap()
}

/// Variant A in a directory of its own, loaded by a leasing runtime: mapped from its own file, no copy.
struct Leased {
    dir: tempfile::TempDir,
    ws: tempfile::TempDir,
    file: PathBuf,
    runtime: Runtime,
}

fn leased_variant_a() -> Leased {
    let dir = workspace();
    let ws = workspace();
    let (file, _) = variant_a_of_its_own(dir.path());
    let runtime = leasing(dir.path());
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    assert!(mapped_in_place(&file), "loaded in place, no copy");
    Leased { dir, ws, file, runtime }
}

#[test]
fn a_writable_library_mapped_in_place_moves_to_a_copy_before_a_writer_truncates_or_overwrites_it() {
    let Leased { dir: _dir, ws, file, runtime } = leased_variant_a();
    let moved_copy = || std::fs::read_to_string("/proc/self/maps").unwrap().contains("/moved-leased-");
    let identity = "moved";

    // A call in flight on the library's code while its file is truncated, then filled with other bytes: a
    // mapped page past a file's end is SIGBUS, and a page whose bytes change runs them.
    let (mark, release) = (ws.path().join("started"), ws.path().join("release"));
    let slow = {
        let (task, mark, release) = (task_in(&runtime, ws.path()), mark.clone(), release.clone());
        std::thread::spawn(move || {
            let input = json!({"mark": mark, "wait_for": release});
            text(&block_on(task.execute(ToolUse::new("slow", "reload_probe", input))))
        })
    };
    let deadline = std::time::Instant::now() + PATIENCE;
    while !mark.exists() {
        assert!(std::time::Instant::now() < deadline, "the slow call never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let moved = runtime.reload_stats().moved_off_leases;
    // The open for writing waits until the library has moved.
    let truncated = std::fs::OpenOptions::new().write(true).truncate(true).open(&file).unwrap();
    assert!(runtime.reload_stats().moved_off_leases > moved, "the writer got in before the library moved");
    assert!(moved_copy(), "the library runs from its private copy ({identity})");
    drop(truncated);
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    write(&file, &vec![0xCC; 64 << 10]);
    std::fs::write(&release, "").unwrap();
    assert_eq!(slow.join().unwrap(), "variant A", "the call in flight finished on the same code");
    assert_eq!(probe(&runtime, ws.path()), "variant A");

    // The file is no library now: the rescan fails it, and the moved version keeps serving.
    match block_on(runtime.rescan()).as_slice() {
        [PluginEvent::Failed { reason, .. }] => assert!(reason.contains("previous version keeps serving"), "{reason}"),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    // A real build written in place again. Variant A, still serving, still counts as mapped from this file
    // (device and inode), which the dynamic loader would hand back for it: variant B is loaded from a copy.
    write(&file, &std::fs::read(variant_b()).unwrap());
    assert!(matches!(block_on(runtime.rescan()).as_slice(), [PluginEvent::Reloaded { .. }]));
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    assert!(!mapped_in_place(&file), "nothing maps the file itself now");
}

#[test]
fn a_leased_library_whose_file_was_only_chmodded_or_touched_still_moves_before_a_writer() {
    // A `chmod` (a rename, a new link) moves the file's change time, and `touch` its modification time, without
    // breaking the lease or touching its bytes: a writer after them must still find the library moved, not wait
    // out the break time and write under it.
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let Leased { dir: _dir, ws, file, runtime } = leased_variant_a();
    let before = std::fs::metadata(&file).unwrap().ctime_nsec();
    for mode in [0o755, 0o700, 0o755, 0o700].into_iter().cycle().take(400) {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        if std::fs::metadata(&file).unwrap().ctime_nsec() != before {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_ne!(std::fs::metadata(&file).unwrap().ctime_nsec(), before, "the change time moved");
    // `touch -d`: new times through a read-only descriptor (the owner may), so no open for writing.
    let yesterday = std::time::SystemTime::now() - Duration::from_secs(86_400);
    std::fs::File::open(&file).unwrap().set_modified(yesterday).unwrap();
    let moved = runtime.reload_stats().moved_off_leases;
    let writer = std::fs::OpenOptions::new().write(true).truncate(true).open(&file).unwrap();
    assert!(runtime.reload_stats().moved_off_leases > moved, "the writer got in before the library moved");
    drop(writer);
    write(&file, &std::fs::read(variant_b()).unwrap());
    assert!(!mapped_in_place(&file));
    assert_eq!(probe(&runtime, ws.path()), "variant A", "no rescan: the moved library keeps serving");
}

/// The name the dynamic loader knows the library mapped from `file` by, read from its list of loaded objects:
/// the one whose load address is the lowest address `/proc/self/maps` maps `file` at.
fn loaded_name(file: &Path) -> std::ffi::CString {
    let path = file.canonicalize().unwrap().display().to_string();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let base = maps
        .lines()
        .filter(|line| line.ends_with(&path))
        .filter_map(|line| usize::from_str_radix(line.split('-').next()?, 16).ok())
        .min()
        .expect("the file is mapped");
    struct Search(usize, Option<std::ffi::CString>);
    unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _: libc::size_t, data: *mut libc::c_void) -> libc::c_int {
        // SAFETY: the dynamic loader passes a valid entry, and `data` is the `Search` below.
        let (info, search) = unsafe { (&*info, &mut *data.cast::<Search>()) };
        if info.dlpi_addr as usize == search.0 && !info.dlpi_name.is_null() {
            // SAFETY: a non-null name is a C string the loader owns for the call.
            search.1 = Some(unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_owned());
            return 1;
        }
        0
    }
    let mut search = Search(base, None);
    // SAFETY: `visit` only reads what the loader passes it.
    unsafe { libc::dl_iterate_phdr(Some(visit), std::ptr::addr_of_mut!(search).cast()) };
    search.1.expect("the dynamic loader lists the library")
}

#[test]
fn a_leased_library_still_mapped_after_its_close_moves_off_its_file_and_is_never_handed_back_for_it() {
    // A library whose unmapping `dlclose` defers (a thread-local destructor it registered has not run yet) stays
    // mapped after the runtime closes it, and any thread's later `dlclose` may unmap it. Another handle to it, as
    // a host's own `dlopen` would hold, stands in for that here.
    let Leased { dir, ws, file, runtime } = leased_variant_a();
    let name = loaded_name(&file);
    // SAFETY: RTLD_NOLOAD only looks the name up.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
    assert!(!handle.is_null(), "the loaded library is found by its name");
    drop(runtime);
    // Still mapped, so moved to a private copy before its lease went with its descriptor: writing the file in
    // place neither waits for a lease nor reaches the mapping.
    assert!(!mapped_in_place(&file), "a library left mapped after its close no longer maps its file");
    write(&file, &std::fs::read(variant_b()).unwrap());
    // The file has the same device and inode as the library still mapped, which the dynamic loader would hand
    // back for it: it is loaded from a copy instead.
    let runtime = leasing(dir.path());
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    assert!(!mapped_in_place(&file));
    drop(runtime);
    // SAFETY: the handle taken above, closed once.
    unsafe { libc::dlclose(handle) };
}

#[test]
fn a_library_someone_has_open_for_writing_is_copied_not_leased() {
    let dir = workspace();
    let (file, _) = variant_a_of_its_own(dir.path());
    let writer = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    let runtime = leasing(dir.path());
    assert!(!runtime.tools().is_empty());
    assert!(!mapped_in_place(&file), "a file being written is never mapped as it is");
    drop(writer);
    // Nobody writes it now: its identity is the leased one, so the next rescan loads it again, in place.
    assert!(matches!(block_on(runtime.rescan()).as_slice(), [PluginEvent::Reloaded { .. }]));
    assert!(mapped_in_place(&file));
}

#[test]
fn with_lease_poll_off_a_writable_library_is_copied() {
    let dir = workspace();
    let ws = workspace();
    let (file, _) = variant_a_of_its_own(dir.path());
    let config = Config::from_toml_str("[plugins]\nlease_poll_ms = 0\n").unwrap();
    let runtime = Runtime::builder().config(config).plugin_dir(dir.path()).build().unwrap();
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    assert!(!mapped_in_place(&file), "copied");
    write(&file, b"overwritten");
    assert_eq!(probe(&runtime, ws.path()), "variant A");
}

#[test]
fn a_plugin_dropped_in_is_loaded_and_identical_content_is_not_reloaded() {
    let dir = workspace();
    let ws = workspace();
    let runtime = Runtime::builder().plugin_dir(dir.path()).build().unwrap();
    let mut events = runtime.events();
    assert!(runtime.tools().is_empty());
    let file = dir.path().join(lib("fixture_reload"));
    std::fs::copy(fixture("fixture_reload"), &file).unwrap();
    let loaded = block_on(runtime.rescan());
    match loaded.as_slice() {
        [PluginEvent::Loaded { file: f, tools, .. }] => {
            assert_eq!((f, tools), (&file, &vec!["reload_probe".to_owned()]))
        }
        other => panic!("expected one load, got {other:?}"),
    }
    assert_eq!(events.try_recv().as_ref(), loaded.first(), "subscribers see what rescan returns");
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    // The same bytes written again: nothing to do.
    write(&file, &std::fs::read(fixture("fixture_reload")).unwrap());
    assert_eq!(block_on(runtime.rescan()), vec![]);
    assert_eq!(runtime.reload_stats().reloads, 0);
    assert_eq!(events.try_recv(), None);
}

#[test]
fn broken_builds_never_replace_a_working_version() {
    let dir = workspace();
    let ws = workspace();
    let file = dir.path().join(lib("fixture_reload"));
    let good = std::fs::read(fixture("fixture_reload")).unwrap();
    std::fs::copy(fixture("fixture_reload"), &file).unwrap();
    let (runtime, mut events) = watched(dir.path());
    let mut failure = |bytes: &[u8], at: &Path| -> String {
        write(at, bytes);
        match next(&mut events) {
            PluginEvent::Failed { file: f, reason } => {
                assert_eq!(f, at);
                assert!(!reason.contains('\n'), "{reason}");
                reason
            }
            other => panic!("expected a failure, got {other}"),
        }
    };

    // A build cut short, a text file with a library's name, a plugin built against another interface.
    let variant_b = std::fs::read(variant_b()).unwrap();
    let truncated = failure(&variant_b[..variant_b.len() / 2], &file);
    assert!(truncated.starts_with("the file is cut short"), "{truncated}");
    assert!(truncated.ends_with("the previous version keeps serving"), "{truncated}");
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    let text_file = failure(b"this is not a library\n", &file);
    assert!(text_file.starts_with("not a loadable library"), "{text_file}");
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    let foreign = failure(&std::fs::read(foreign().join(lib("fixture_api_v2"))).unwrap(), &file);
    assert!(foreign.starts_with("incompatible plugin interface layout"), "{foreign}");
    assert_eq!(probe(&runtime, ws.path()), "variant A");

    // A build that loads but whose tool cannot be registered: its name is taken by another file.
    let twin = dir.path().join(lib("fixture_reload_twin"));
    let mut copy = good;
    copy.extend_from_slice(b"\0twin");
    let clash = failure(&copy, &twin);
    assert!(clash.contains("tool name 'reload_probe' is already registered by"), "{clash}");
    assert_eq!(probe(&runtime, ws.path()), "variant A");
    // A new version of the file that would lose its tool and whose own tools are refused (invalid and
    // reserved names) is refused whole: the old version keeps serving.
    let refused = failure(&std::fs::read(fixture("fixture_clash")).unwrap(), &file);
    assert!(refused.starts_with("not reloaded, the previous version keeps serving: "), "{refused}");
    assert!(refused.contains("'bad name!'") || refused.contains("bad name!"), "{refused}");
    assert_eq!(probe(&runtime, ws.path()), "variant A");

    // A good build still goes in after all that.
    write(&file, &variant_b);
    assert!(matches!(next(&mut events), PluginEvent::Reloaded { .. }));
    assert_eq!(probe(&runtime, ws.path()), "variant B");
    let stats = runtime.reload_stats();
    assert_eq!(stats.reloads, 1, "{stats:?}");
}

/// The `toolshed watch` child and its output lines.
struct Watching {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watching {
    fn start(home: &Path, plugins: &Path) -> Self {
        let mut child = Command::new(toolshed_bin())
            .args(["--plugins", &plugins.to_string_lossy(), "watch"])
            .current_dir(home)
            .env("HOME", home)
            .env_remove("TOOLSHED_PLUGINS")
            .env("TOOLSHED_TIMEOUTS_WATCH_DEBOUNCE_MS", "30")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Self { child, lines }
    }

    /// The next line that starts with `prefix`; lines before it are returned too, for the failure message.
    fn until(&self, prefix: &str) -> String {
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(PATIENCE) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(line) => seen.push(line),
                Err(_) => panic!("no `{prefix}` line from toolshed watch; it printed {seen:?}"),
            }
        }
    }

    /// Resident memory of the child, and the part of it that is not file-backed, in bytes.
    fn rss(&self) -> (u64, u64) {
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.child.id())).unwrap();
        let pages: Vec<u64> = statm.split_whitespace().map(|n| n.parse().unwrap()).collect();
        (pages[1] * 4096, (pages[1] - pages[2]) * 4096)
    }

    /// Closes its standard input: it stops and exits 0.
    fn stop(mut self) -> String {
        drop(self.child.stdin.take());
        let line = self.until("stopped");
        assert!(self.child.wait().unwrap().success());
        line
    }
}

#[test]
fn fifty_reloads_unload_their_old_copies_and_memory_stays_flat() {
    let home = workspace();
    let dir = workspace();
    let file = dir.path().join(lib("fixture_reload"));
    let good = std::fs::read(fixture("fixture_reload")).unwrap();
    std::fs::copy(fixture("fixture_reload"), &file).unwrap();
    let watch = Watching::start(home.path(), dir.path());
    assert_eq!(watch.until("loaded"), format!("loaded {} tools=reload_probe", file.display()));
    watch.until("watching");

    // Distinct contents without distinct builds: an ELF loader ignores bytes after the image.
    let reload = |i: usize| {
        let mut bytes = good.clone();
        bytes.extend_from_slice(format!("\0reload {i}").as_bytes());
        // Written beside, then renamed in: what a careful build tool does.
        let staged = dir.path().join(format!(".staged-{i}"));
        std::fs::write(&staged, &bytes).unwrap();
        std::fs::rename(&staged, &file).unwrap();
        let line = watch.until("reloaded");
        assert!(line.contains("tools=reload_probe removed=-"), "{line}");
        watch.until("reload-stats")
    };
    reload(0);
    let before = watch.rss();
    let mut stats = String::new();
    for i in 1..=50 {
        stats = reload(i);
    }
    let after = watch.rss();
    // Each reload retires the version before it (the start-up copy, then reloads 0 to 49), and nothing runs
    // on it, so it is unloaded: at most the serving copy and one on its way out stay mapped.
    let field = |name: &str| -> u64 {
        let value =
            stats.split(' ').find_map(|kv| kv.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("{stats}"));
        value.parse().unwrap()
    };
    assert_eq!(field("reloads"), 51, "{stats}");
    assert!(field("old_copies") <= 1 && field("mapped") <= 2 && field("unloaded") >= 50, "{stats}");
    let per_reload = after.0.saturating_sub(before.0) / 50;
    let anon_per_reload = after.1.saturating_sub(before.1) / 50;
    eprintln!(
        "50 reloads: RSS {} → {} KiB ({} KiB per reload), of which not file-backed {} → {} KiB ({} KiB per reload)",
        before.0 / 1024,
        after.0 / 1024,
        per_reload / 1024,
        before.1 / 1024,
        after.1 / 1024,
        anon_per_reload / 1024
    );
    // Unloaded copies give back their pages. Measured here: 2 KiB per reload (allocator noise); before
    // unloading, 1.18 MiB per reload stayed (the old copies' pages).
    assert!(anon_per_reload <= 64 << 10, "{anon_per_reload} bytes of anonymous memory per reload");
    assert!(per_reload <= 128 << 10, "{per_reload} bytes of RSS per reload");
    assert_eq!(watch.stop(), "stopped (end of input)");
}

#[test]
fn a_plugin_made_by_new_plugin_outside_the_workspace_is_picked_up_by_toolshed_watch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let xtask = root.join("target/debug/xtask");
    assert!(xtask.is_file(), "{} not found: run `cargo xtask test`", xtask.display());
    let outside = tempfile::tempdir().unwrap();
    let made = Command::new(&xtask)
        .args(["new-plugin", "hello_tool", "--dir", &outside.path().to_string_lossy()])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let crate_dir = outside.path().join("hello_tool");
    // One shared target directory, so the dependencies are built once across runs.
    let target = root.join("target/new-plugin");
    let built = Command::new("cargo")
        .args(["build", "--offline", "--quiet"])
        .current_dir(&crate_dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", stderr(&built));

    let home = workspace();
    let plugins = workspace();
    let watch = Watching::start(home.path(), plugins.path());
    watch.until("watching");
    let library = plugins.path().join(lib("hello_tool"));
    std::fs::copy(target.join("debug").join(lib("hello_tool")), &library).unwrap();
    let line = watch.until("loaded");
    assert!(line.starts_with(&format!("loaded {} plugin=hello_tool version=0.1.0", library.display())), "{line}");
    assert!(line.ends_with("tools=hello_tool"), "{line}");
    assert_eq!(watch.stop(), "stopped (end of input)");

    let ws = workspace();
    let out = toolshed(
        home.path(),
        ws.path(),
        &["--plugins", &plugins.path().to_string_lossy(), "call", "--yes", "hello_tool", r#"{"name":"Ada"}"#],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[hello_tool] Result:\nHello, Ada!\n");
}
