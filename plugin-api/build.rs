//! Stamps the frozen interface with the ABI version instead of the crate's version.
//!
//! `abi_stable` records `CARGO_PKG_VERSION` in the layout of every type it derives (`PluginMod`, the vtables)
//! and refuses a library whose layouts carry an incompatible version (for 0.x, another minor). Left alone,
//! that would make every release of this crate, even one that only adds an SDK helper, a new ABI that no
//! plugin built before it loads. So the crate is compiled with `CARGO_PKG_VERSION` set to `ABI_VERSION` (read
//! from `src/abi.rs`, its one definition), and the crate's own version is passed on as
//! `TOOLSHED_PLUGIN_API_VERSION` for `API_VERSION`.

use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=src/abi.rs");
    let source = match std::fs::read_to_string("src/abi.rs") {
        Ok(source) => source,
        Err(e) => return fail(&format!("cannot read src/abi.rs: {e}")),
    };
    let marker = "pub const ABI_VERSION: &str = \"";
    let Some(version) = source.split_once(marker).and_then(|(_, rest)| rest.split_once('"')).map(|(v, _)| v) else {
        return fail("src/abi.rs defines no `pub const ABI_VERSION: &str = \"…\";`");
    };
    let crate_version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!("cargo:rustc-env=TOOLSHED_PLUGIN_API_VERSION={crate_version}");
    println!("cargo:rustc-env=CARGO_PKG_VERSION={version}");
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("toolshed-plugin-api build script: {message}");
    ExitCode::FAILURE
}
