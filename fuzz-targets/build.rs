//! Link setting for the replay test, as for the fuzz binaries (`fuzz/build.rs`): each plugin rlib exports the
//! same `abi_stable` root-module symbol (a plugin library has exactly one), and whether the object holding it
//! is pulled into a binary that links several plugins depends on how the compiler splits each crate into
//! codegen units, which any change to a plugin may move. Nothing here loads a plugin through that symbol, so
//! any one definition will do.
fn main() {
    println!("cargo:rustc-link-arg-tests=-Wl,--allow-multiple-definition");
}
