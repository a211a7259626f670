//! A fixture plugin built against an older interface layout: the host must refuse it cleanly.

use abi_stable::{
    export_root_module,
    prefix_type::PrefixTypeTrait,
    std_types::{RStr, RString},
};
use toolshed_plugin_api::{PluginMod, PluginModRef};

extern "C" fn run(input: RStr<'_>) -> RString {
    RString::from(input.as_str())
}

#[export_root_module]
pub fn root() -> PluginModRef {
    PluginMod { name: RStr::from_str("fixture_old_layout"), run }.leak_into_prefix()
}
