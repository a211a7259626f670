//! Hot reloads under load: a thread that, every few seconds, lands a new version of one plugin library in the
//! watched directory, taking the plugins in turn. Each version is the shipped library with a distinct tail
//! appended (an ELF loader ignores trailing bytes, while the content hash changes), so every landing is a
//! real reload. Landings alternate between rewriting the file in place (the watcher must wait until the
//! write holds still) and renaming a finished copy over it (what an installer does).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The running reloader.
pub struct Reloads {
    stop: Arc<AtomicBool>,
    written: Arc<AtomicU64>,
    errors: Arc<std::sync::Mutex<Vec<String>>>,
    landed: Arc<std::sync::Mutex<BTreeMap<String, u64>>>,
    thread: Option<JoinHandle<()>>,
}

impl Reloads {
    /// Starts landing versions of `libraries` (file names) from `shipped` into `watched`, one every `every`.
    pub fn start(
        shipped: PathBuf,
        watched: PathBuf,
        staging: PathBuf,
        libraries: Vec<String>,
        every: Duration,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
        let landed = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let (stop_flag, count, error_list) = (Arc::clone(&stop), Arc::clone(&written), Arc::clone(&errors));
        let per_file = Arc::clone(&landed);
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now() + every;
            let mut n = 0u64;
            while !stop_flag.load(Ordering::Relaxed) {
                if Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                next += every;
                let Some(name) = libraries.get((n as usize) % libraries.len().max(1)) else { break };
                match land(&shipped, &watched, &staging, name, n) {
                    Ok(()) => {
                        count.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut map) = per_file.lock() {
                            *map.entry(name.clone()).or_insert(0) += 1;
                        }
                    }
                    Err(error) => {
                        if let Ok(mut list) = error_list.lock() {
                            list.push(format!("landing {name}: {error}"));
                        }
                    }
                }
                n += 1;
            }
        });
        Self { stop, written, errors, landed, thread: Some(thread) }
    }

    /// Versions landed so far.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Versions landed so far, per library file name.
    pub fn landed(&self) -> BTreeMap<String, u64> {
        self.landed.lock().map(|map| map.clone()).unwrap_or_default()
    }

    /// Stops landing versions; returns the errors met while landing them.
    pub fn stop(&mut self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.errors.lock().map(|list| list.clone()).unwrap_or_default()
    }
}

fn land(
    shipped: &std::path::Path,
    watched: &std::path::Path,
    staging: &std::path::Path,
    name: &str,
    n: u64,
) -> std::io::Result<()> {
    use std::io::Write;
    let mut bytes = std::fs::read(shipped.join(name))?;
    bytes.extend_from_slice(format!("\0toolshed-soak reload {n} {}", std::process::id()).as_bytes());
    let target = watched.join(name);
    if n.is_multiple_of(2) {
        let mut file = std::fs::File::create(&target)?;
        file.write_all(&bytes)?;
        file.sync_all()
    } else {
        let staged = staging.join(name);
        let mut file = std::fs::File::create(&staged)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&staged, &target)
    }
}
