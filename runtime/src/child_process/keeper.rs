//! The keeper: every child of the runtime, and everything those start, ends when the host process ends,
//! however it ends — a SIGKILL of `toolshed` or of an embedding host included, where no code of ours runs.
//!
//! A small process, started before the first child, holds the read end of a pipe whose write end only the
//! host has (close-on-exec, so no child holds it): the host's end, whatever its cause, is the pipe's end of
//! file, and the keeper then ends the host's children:
//!
//! - where a cgroup v2 hierarchy is writable (root, or a systemd session's delegated cgroup), the runtime makes
//!   a cgroup of its own below its current one and moves the host itself into it, right after starting the
//!   keeper outside it: every child is born inside (no migration per child, which costs an RCU grace period
//!   each, about a millisecond), and whatever it starts stays inside, through `setsid`, double forks and
//!   dropped markers alike. The keeper kills the cgroup whole (`cgroup.kill`; the host is gone by then) and
//!   removes it;
//! - where none can be made, the keeper kills every process group it was told of (each child's, while its
//!   tree lives) and every process that carries the host's marker (`TOOLSHED_PROCESS=<host pid>:…`) with its
//!   group and session, and the runtime's own children (parser jobs, plugin children) have
//!   `PR_SET_PDEATHSIG`. What escapes this fallback is only a process that left for a session of its own
//!   *and* hid the marker (dropped it, or made itself non-dumpable), after the host's death.
//!
//! The keeper is outside the cgroup, in a session of its own, and ignores the stop signals, so neither
//! Ctrl-C nor the host's own stopping of its children ends it before it has done its work.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The keeper's program, for `/bin/sh -c`: `$1` the host's pid, `$2` the cgroup directory or empty. Its
/// input is lines `+ PGID` and `- PGID` (a group to end with the host, one not to any more); its end is the
/// host's. Without a cgroup, what carries the host's marker goes with its process group and its session (a
/// process in either that dropped the marker, `env -i`, too), and so does every group it was told of. Only
/// shell builtins read `/proc`: a fork per process would make the sweep slow on a busy machine.
const SCRIPT: &str = r#"trap '' INT TERM HUP QUIT
host=$1 cgroup=$2
live=" "
while read -r op g; do
  case $op in
    +) live="$live$g " ;;
    -) next=" "; for x in $live; do [ "$x" = "$g" ] || next="$next$x "; done; live=$next ;;
  esac
done
if [ -n "$cgroup" ]; then
  echo 1 > "$cgroup/cgroup.kill" 2>/dev/null || while read -r p; do kill -KILL "$p"; done < "$cgroup/cgroup.procs"
fi
groups=" " sessions=" "
for f in /proc/[0-9]*/environ; do
  if grep -qz "^TOOLSHED_PROCESS=$host:" "$f" 2>/dev/null; then
    d=${f%/environ}
    read -r stat < "$d/stat" 2>/dev/null || continue
    set -- ${stat##*) }
    [ "${3:-0}" -gt 1 ] && groups="$groups$3 "
    [ "${4:-0}" -gt 1 ] && sessions="$sessions$4 "
    kill -KILL "${d#/proc/}" 2>/dev/null
  fi
done
for g in $live $groups; do kill -KILL "-$g" 2>/dev/null; done
for d in /proc/[0-9]*; do
  read -r stat < "$d/stat" 2>/dev/null || continue
  set -- ${stat##*) }
  case "$sessions" in *" $4 "*) kill -KILL "${d#/proc/}" 2>/dev/null ;; esac
done
if [ -n "$cgroup" ]; then
  i=0
  while grep -q "populated 1" "$cgroup/cgroup.events" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
  rmdir "$cgroup" 2>/dev/null
fi
"#;

/// The keeper of this process, started before the first child.
struct Keeper {
    /// The keeper's pid, which the host's own stopping of its children spares.
    pid: u32,
    /// The write end of its pipe.
    pipe: Mutex<std::fs::File>,
    /// The cgroup the host and every child are in, if one could be made.
    cgroup: Option<PathBuf>,
}

static KEEPER: OnceLock<Option<Keeper>> = OnceLock::new();

fn keeper() -> Option<&'static Keeper> {
    KEEPER
        .get_or_init(|| match start() {
            Ok(keeper) => Some(keeper),
            Err(e) => {
                tracing::warn!(
                    "cannot start the process that ends this host's children when it ends ({e}): a child may \
                     outlive a host that is killed"
                );
                None
            }
        })
        .as_ref()
}

/// Starts the keeper (and moves the host into its cgroup) if that was not done yet: before any child starts.
pub(crate) fn ensure() {
    keeper();
}

/// The cgroup the host and its children are kept in, if one could be made (starts the keeper).
pub fn cgroup() -> Option<PathBuf> {
    keeper().and_then(|k| k.cgroup.clone())
}

/// The keeper's pid, if it was started (never starts it).
pub fn running() -> Option<u32> {
    KEEPER.get().and_then(Option::as_ref).map(|k| k.pid)
}

/// A child's process group the keeper ends with the host until this is dropped (after the child is reaped
/// and its tree gone, so the group id cannot name anyone else's group by then). Needed only without a
/// cgroup, where it is all the keeper knows of a child that dropped the marker.
pub(crate) struct Kept(i32);

/// Tells the keeper of the process group `pgid`.
pub(crate) fn keep(pgid: u32) -> Kept {
    let pgid = pgid as i32;
    tell('+', pgid);
    Kept(pgid)
}

impl Drop for Kept {
    fn drop(&mut self) {
        tell('-', self.0);
    }
}

fn tell(op: char, pgid: i32) {
    if let Some(keeper) = keeper().filter(|k| k.cgroup.is_none()) {
        let mut pipe = keeper.pipe.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(pipe, "{op} {pgid}");
    }
}

fn start() -> std::io::Result<Keeper> {
    let (reader, writer) = std::io::pipe()?;
    let dir = make_cgroup();
    let mut command = std::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(SCRIPT)
        .arg("toolshed-keeper")
        .arg(std::process::id().to_string())
        .arg(dir.as_deref().unwrap_or(Path::new("")))
        .stdin(reader)
        // Its tools from the system's own directories only, never from the host's `PATH` (which may hold the
        // working directory, a repository's `node_modules/.bin`, `/tmp`: places a confined command writes),
        // and nothing relative: it runs outside every sandbox.
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    super::clean::prepare_keeper(&mut command);
    let child = command.spawn()?;
    let pid = child.id();
    // Never waited for: it outlives the host by design. A host that ends first leaves it to init, which
    // reaps it; a host that lives on never sees it end, since it ends only with the pipe.
    std::mem::forget(child);
    // Only now, with the keeper outside, does the host move in: every child from here on is born inside.
    let cgroup = dir.and_then(|dir| match std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()) {
        Ok(()) => Some(dir),
        Err(e) => {
            tracing::debug!("cannot keep this host's children in the cgroup {}: {e}", dir.display());
            let _ = std::fs::remove_dir(&dir);
            None
        }
    });
    // Without a cgroup the script is told the directory anyway; it finds none and goes on.
    Ok(Keeper { pid, pipe: Mutex::new(std::fs::File::from(OwnedFd::from(writer))), cgroup })
}

/// Makes the host's cgroup below its current one in the cgroup v2 hierarchy, if it can.
fn make_cgroup() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // Fields: id parent major:minor root mount-point options ... - fstype source super-options.
    let mount = mounts.lines().find_map(|line| {
        let (head, tail) = line.split_once(" - ")?;
        (tail.split_whitespace().next()? == "cgroup2").then(|| head.split_whitespace().nth(4).map(PathBuf::from))?
    })?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = cgroups.lines().find_map(|line| line.strip_prefix("0::"))?;
    let dir = mount.join(own.trim_start_matches('/')).join(format!("toolshed-{}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    Some(dir)
}
