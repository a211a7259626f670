//! Link setting for the fuzz binaries. Each plugin rlib exports the same `abi_stable` root-module symbol
//! (a plugin library has exactly one), and the fuzz build's single codegen unit per crate puts it in the
//! object the linker must load anyway, so linking three plugins into one binary defines it three times.
//! Nothing here loads a plugin through that symbol, so any one definition will do.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--allow-multiple-definition");
}
