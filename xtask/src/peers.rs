//! The real MCP peers the host tests talk to, installed into `target/test-peers/` when missing: pinned npm
//! servers (`node/`) and a Python virtualenv with the pinned `mcp` client (`py/`). An install that is
//! already there is kept, so a machine without network still runs the tests it has peers for.

use crate::{cmd, root};
use anyhow::{Context as _, Result};
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
    let present = |name: &str| std::process::Command::new(name).arg("-V").output().is_ok_and(|o| o.status.success());
    if present("strace") {
        return Ok(());
    }
    // As root (containers, CI) apt-get runs directly; otherwise through sudo.
    let root_user = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let (program, prefix): (&str, &[&str]) = if root_user { ("apt-get", &[]) } else { ("sudo", &["apt-get"]) };
    let run = |args: &[&str]| {
        let mut all = prefix.to_vec();
        all.extend(args);
        cmd(program, &all, &[])
    };
    if run(&["install", "-y", "strace"]).is_err() {
        run(&["update"]).context("apt-get update, to install strace")?;
        run(&["install", "-y", "strace"]).context("installing strace (apt-get install -y strace)")?;
    }
    Ok(())
}
