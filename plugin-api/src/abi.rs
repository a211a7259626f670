//! The frozen binary interface: the root module a plugin exports, the tool handler vtable and the host object.
//!
//! Nothing here may change once released: a host whose vtable grew rejects every plugin built before it
//! ("too many fields"). New capabilities arrive as new host service names and new JSON fields instead.
#![allow(non_local_definitions, missing_docs)]

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, ROption, RResult, RStr, RString, RVec},
    StableAbi,
};

/// The version of the frozen interface: the root module, the vtables and the host object in this file.
///
/// It changes only when that interface does (a field or a method added, removed or changed), never for the
/// SDK or the JSON protocol, which grow without it. Plugins built against any `toolshed-plugin-api` whose
/// ABI version is compatible (for 0.x, the same minor) load without a rebuild. The build script stamps
/// `abi_stable`'s layouts with it, so it is the version the loader and `abi_stable` both check.
pub const ABI_VERSION: &str = "0.1.0";

/// The root module every plugin library exports (one per library; it may declare several tools).
///
/// All data crosses as JSON text; see [`crate::protocol`] for the shapes.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModRef)))]
#[sabi(missing_field(panic))]
pub struct PluginMod {
    /// The [`ABI_VERSION`] the plugin was compiled against (plugins built before it existed wrote the crate
    /// version here, which was the same number).
    pub api_version: RStr<'static>,
    /// The plugin's own name (its crate name for shipped plugins).
    pub name: RStr<'static>,
    /// The plugin's own version.
    pub version: RStr<'static>,
    /// The plugin's [`crate::PluginDeclaration`] as JSON, or an error message.
    pub declarations: extern "C" fn() -> RResult<RString, RString>,
    /// The handler factory: a handler for the tool named `tool` (a declared primary name), built with the
    /// plugin's configuration JSON; `RNone` when the plugin declines the tool; `RErr` when construction failed.
    #[sabi(last_prefix_field)]
    pub new_handler: extern "C" fn(tool: RStr<'_>, config: RStr<'_>) -> RResult<ROption<ToolHandlerBox>, RString>,
}

impl RootModule for PluginModRef {
    declare_root_module_statics! {PluginModRef}
    const BASE_NAME: &'static str = "toolshed_plugin";
    const NAME: &'static str = "toolshed_plugin";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION);
}

/// A tool handler: stateless, shared by every task and by every alias of its tool.
///
/// `call` is a [`crate::ToolCall`] as JSON. `Ok` carries the phase's JSON answer ([`crate::Prepared`] for
/// `prepare`, [`crate::Outcome`] for `execute`, anything for `partial`); `Err` means the boundary itself
/// failed (a caught panic, unserialisable output) and carries a one-line message.
#[sabi_trait]
pub trait ToolHandler: Send + Sync {
    /// The tool's own validation, ending in an approval request, `proceed`, or an error.
    fn prepare(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString>;
    /// Does the work.
    fn execute(&self, call: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString>;
    /// Sees a streamed, incomplete tool use; drives UI through host services, never produces a tool result.
    #[sabi(last_prefix_field)]
    fn partial(&self, block: RStr<'_>, host: HostRef<'_>) -> RResult<RString, RString>;
}

/// An owned handler as the factory returns it.
pub type ToolHandlerBox = ToolHandler_TO<'static, RBox<()>>;

/// The host as a plugin sees it during one call. Every capability is a named service taking and returning JSON.
#[sabi_trait]
pub trait Host: Send + Sync {
    /// Calls the service `name` with a JSON request; `Err` carries a [`crate::ServiceError`] as JSON.
    fn service(&self, name: RStr<'_>, request: RStr<'_>) -> RResult<RString, RString>;
    /// The names of the services this host offers.
    fn services(&self) -> RVec<RString>;
    /// Whether the call was cancelled or timed out; long work should check it and stop.
    fn is_cancelled(&self) -> bool;
    /// Writes to the host's log; `level` is one of the [`crate::log_level`] constants.
    #[sabi(last_prefix_field)]
    fn log(&self, level: u8, message: RStr<'_>);
}

/// The borrowed host object passed to every handler call.
pub type HostRef<'a> = Host_TO<'a, abi_stable::sabi_types::RRef<'a, ()>>;
