//! An older prototype of the plugin interface: same crate, version and type path, different root-module fields.
#![allow(non_local_definitions, missing_docs)]

mod abi {
    use abi_stable::{
        declare_root_module_statics, library::RootModule, package_version_strings, sabi_types::VersionStrings,
        std_types::{RStr, RString},
        StableAbi,
    };

    #[repr(C)]
    #[derive(StableAbi)]
    #[sabi(kind(Prefix(prefix_ref = PluginModRef)))]
    #[sabi(missing_field(panic))]
    pub struct PluginMod {
        pub name: RStr<'static>,
        #[sabi(last_prefix_field)]
        pub run: extern "C" fn(input: RStr<'_>) -> RString,
    }

    impl RootModule for PluginModRef {
        declare_root_module_statics! {PluginModRef}
        const BASE_NAME: &'static str = "toolshed_plugin";
        const NAME: &'static str = "toolshed_plugin";
        const VERSION_STRINGS: VersionStrings = package_version_strings!();
    }
}

pub use abi::{PluginMod, PluginModRef};
