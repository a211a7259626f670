//! The real MCP peers the host tests talk to, installed into `target/test-peers/` when missing: pinned npm
//! servers (`node/`) and a Python virtualenv with the pinned `mcp` client (`py/`). An install that is
//! already there is kept, so a machine without network still runs the tests it has peers for.

use crate::{cmd, root};
use anyhow::{bail, Context as _, Result};
use std::path::PathBuf;

/// The npm servers, pinned.
const NPM_PACKAGES: [&str; 3] = [
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    // The Inspector's CLI (`mcp-inspector --cli`) drives `toolshed serve` in host-tests/tests/serve_listing.rs.
    // Its engines field asks for Node 22; the CLI runs on the machine's Node 20 (its web clients, which the
    // skipped postinstall would set up, are not used).
    "@modelcontextprotocol/inspector@2.12.0",
];
/// The Python MCP SDK, pinned.
const PY_PACKAGE: &str = "mcp==2.3.0";

/// Where the peers are.
pub struct Peers {
    /// The npm prefix (holds `node_modules/`): `TOOLSHED_TEST_NODE_PEERS`.
    pub node: PathBuf,
    /// The virtualenv's python: `TOOLSHED_TEST_PY`.
    pub python: PathBuf,
}

/// Installs what is missing and returns the paths.
pub fn install() -> Result<Peers> {
    strace()?;
    let base = root().join("target/test-peers");
    let node = base.join("node");
    let installed = |package: &str| {
        let name = package.rsplit_once('@').map_or(package, |(name, _)| name);
        let version = package.rsplit_once('@').map_or("", |(_, v)| v);
        std::fs::read_to_string(node.join("node_modules").join(name).join("package.json"))
            .is_ok_and(|json| json.contains(&format!("\"version\": \"{version}\"")))
    };
    if !NPM_PACKAGES.iter().all(|p| installed(p)) {
        std::fs::create_dir_all(&node).with_context(|| format!("creating {}", node.display()))?;
        let prefix = node.to_string_lossy().into_owned();
        let mut args = vec!["install", "--prefix", &prefix, "--no-audit", "--no-fund", "--no-save"];
        args.extend(NPM_PACKAGES);
        cmd("npm", &args, &[]).context("installing the npm MCP test servers (needs npm and the npm registry)")?;
    }
    let venv = base.join("py");
    let python = venv.join("bin/python");
    let has_mcp = std::process::Command::new(&python)
        .args(["-c", "import importlib.metadata as m; assert m.version('mcp') == '2.3.0'"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_mcp {
        let dir = venv.to_string_lossy().into_owned();
        cmd("python3", &["-m", "venv", &dir], &[]).context("creating the Python virtualenv for the MCP tests")?;
        let py = python.to_string_lossy().into_owned();
        cmd(&py, &["-m", "pip", "install", "--quiet", PY_PACKAGE], &[])
            .context("installing the Python `mcp` test client (needs PyPI)")?;
    }
    Ok(Peers { node, python })
}

/// strace, which the differential command-permission target (`fuzz-targets/src/exec.rs`) runs every allowed
/// command under, from the system's packages when it is missing: its replay is part of the suite.
pub fn strace() -> Result<()> {
    system_package("strace", "-V", "strace")
}

/// Debian's Chromium, which the host's `browser.*` services drive (browser_action), from the system's packages
/// when it is missing: the browser tests, the demo and the bench row run it, and none of them skips without
/// it. Returns its path on `PATH` (`/usr/bin/chromium`), for `TOOLSHED_TEST_CHROMIUM`.
pub fn chromium() -> Result<PathBuf> {
    system_package("chromium", "--version", "chromium")?;
    on_path("chromium").context("`chromium` answers `--version` but is not found on PATH")
}

/// Installs the system package `package` with apt-get unless `binary version_flag` already runs and succeeds:
/// as root (containers, CI) apt-get runs directly, otherwise through sudo; when the install fails, the package
/// lists are updated (`apt-get update`) and it is tried once more. Fails when `binary` still does not run.
pub fn system_package(binary: &str, version_flag: &str, package: &str) -> Result<()> {
    let present = || std::process::Command::new(binary).arg(version_flag).output().is_ok_and(|o| o.status.success());
    if present() {
        return Ok(());
    }
    let root_user = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let (program, prefix): (&str, &[&str]) = if root_user { ("apt-get", &[]) } else { ("sudo", &["apt-get"]) };
    let run = |args: &[&str]| {
        let mut all = prefix.to_vec();
        all.extend(args);
        cmd(program, &all, &[])
    };
    if run(&["install", "-y", package]).is_err() {
        run(&["update"]).with_context(|| format!("apt-get update, to install {package}"))?;
        run(&["install", "-y", package])
            .with_context(|| format!("installing {package} (apt-get install -y {package})"))?;
    }
    if !present() {
        bail!("`{binary} {version_flag}` still fails after `apt-get install -y {package}`");
    }
    Ok(())
}

/// The first executable file named `binary` in the directories of `PATH`, as `which` finds it.
pub fn on_path(binary: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(binary)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}
