//! The contract between Toolshed and its tool plugins: the frozen `abi_stable` interface, the JSON protocol
//! that grows instead of the vtable, and the SDK plugin authors write against.
//!
//! A plugin is a `cdylib` crate that depends on this crate and on `abi_stable` (the macro that exports the
//! root module names `::abi_stable` itself). It implements [`Tool`] for each tool and exports them with
//! [`export_plugin!`]:
//!
//! ```
//! use toolshed_plugin_api::services::{PathResolve, ResolveRequest};
//! use toolshed_plugin_api::{export_plugin, result, Failure, HostClient, Outcome, Tool, ToolCall, ToolDeclaration, ToolInit};
//!
//! #[derive(serde::Deserialize)]
//! pub struct WhereArgs {
//!     path: String,
//! }
//!
//! /// Says where a path the model names lies.
//! pub struct Where;
//!
//! impl Tool for Where {
//!     type Args = WhereArgs;
//!     fn declaration() -> ToolDeclaration {
//!         toolshed_plugin_api::declare("where", "Resolves a path.", &[("path", true, "The path to resolve.")])
//!     }
//!     fn new(_: &ToolInit<'_>) -> Result<Option<Self>, String> {
//!         Ok(Some(Where))
//!     }
//!     fn execute(&self, call: &ToolCall<WhereArgs>, host: &HostClient<'_>) -> Result<Outcome, Failure> {
//!         // A failed service call becomes the tool error the model reads.
//!         let resolved = host.call::<PathResolve>(&ResolveRequest { path: call.input.path.clone() })?;
//!         if !resolved.inside_workspace {
//!             return Err(Failure::mistake(format!("{} is outside the workspace", resolved.display)));
//!         }
//!         Ok(result::text(resolved.absolute))
//!     }
//! }
//!
//! export_plugin! { name: "where", version: "0.1.0", tools: [Where] }
//! ```
//!
//! [`Tool::prepare`] and [`Tool::execute`] return `Result`, so `?` works on service errors (see
//! [`Failure`]). Each host service is a type in [`services`], called with [`HostClient::call`].
//!
//! Two versions: the crate's ([`API_VERSION`]) grows with the SDK; the frozen interface has its own
//! [`ABI_VERSION`], which the loader checks, so a new SDK release does not force a rebuild of every plugin.
//!
//! Rules the SDK enforces for you: every boundary call runs under `catch_unwind` (a panic reaching an
//! `extern "C"` boundary would end the host process), and the plugin's own panic hook is quiet. Never
//! build plugins with `panic = "abort"`.
#![deny(missing_docs)]

mod abi;
mod protocol;
pub mod sdk;
pub mod services;
#[cfg(feature = "testing")]
pub mod testing;

pub use abi::{
    Host, HostRef, Host_TO, PluginMod, PluginModRef, ToolHandler, ToolHandlerBox, ToolHandler_TO, ABI_VERSION,
};
pub use protocol::{
    call_layout, capability, json_string, log_level, AliasDeclaration, ApprovalRequest, Block, Outcome, ParamSpec,
    PartialBlock, PluginDeclaration, Prepared, Risk, ServiceError, ServiceErrorKind, TaskInfo, ToolCall,
    ToolDeclaration, ToolError, ToolSpec, WorkspaceRoot, TASK_PROGRESS_INSTRUCTION,
};
pub use sdk::{result, Failure, HostClient, Tool, ToolInit};

/// Re-exported so [`export_plugin!`] names the exact `abi_stable` this interface was built with.
pub use abi_stable;

/// The version of this crate, which grows with the SDK; the frozen interface has its own [`ABI_VERSION`].
pub const API_VERSION: &str = match option_env!("TOOLSHED_PLUGIN_API_VERSION") {
    Some(version) => version,
    // Compiled without the build script (the foreign-interface test fixtures): the package's own version.
    None => env!("CARGO_PKG_VERSION"),
};

/// A tool declaration with one `generic` spec, for the common case. `params` are
/// `(name, required, description)`, all strings.
pub fn declare(name: &str, description: &str, params: &[(&str, bool, &str)]) -> ToolDeclaration {
    let spec = ToolSpec {
        id: name.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: params.iter().map(|&(pname, required, pdesc)| ParamSpec::new(pname, required, pdesc)).collect(),
        context_requirements: Vec::new(),
    };
    ToolDeclaration {
        name: name.to_owned(),
        aliases: Vec::new(),
        capabilities: Vec::new(),
        display: None,
        specs: [("generic".to_owned(), spec)].into_iter().collect(),
        checks_parameters: false,
        param_aliases: std::collections::BTreeMap::new(),
    }
}

/// Exports a plugin's root module: its name, version, tool declarations and handler factory.
///
/// `export_plugin! { name: "read_file", version: env!("CARGO_PKG_VERSION"), tools: [ReadFile] }`
///
/// The generated constructor installs the SDK's quiet panic hook; the generated functions run every call under
/// the SDK's panic guard.
#[macro_export]
macro_rules! export_plugin {
    (name: $name:expr, version: $version:expr, tools: [$($tool:ty),+ $(,)?] $(,)?) => {
        #[doc(hidden)]
        #[$crate::abi_stable::export_root_module]
        pub fn toolshed_root_module() -> $crate::PluginModRef {
            use $crate::abi_stable::prefix_type::PrefixTypeTrait;
            $crate::sdk::install_panic_hook();
            $crate::PluginMod {
                api_version: $crate::abi_stable::std_types::RStr::from_str($crate::ABI_VERSION),
                name: $crate::abi_stable::std_types::RStr::from_str($name),
                version: $crate::abi_stable::std_types::RStr::from_str($version),
                declarations: __toolshed_declarations,
                new_handler: __toolshed_new_handler,
            }
            .leak_into_prefix()
        }

        extern "C" fn __toolshed_declarations(
        ) -> $crate::abi_stable::std_types::RResult<
            $crate::abi_stable::std_types::RString,
            $crate::abi_stable::std_types::RString,
        > {
            $crate::sdk::guard(|| {
                $crate::sdk::exported_declarations_json(vec![$(<$tool as $crate::Tool>::declaration()),+])
            })
        }

        extern "C" fn __toolshed_new_handler(
            tool: $crate::abi_stable::std_types::RStr<'_>,
            config: $crate::abi_stable::std_types::RStr<'_>,
        ) -> $crate::abi_stable::std_types::RResult<
            $crate::abi_stable::std_types::ROption<$crate::ToolHandlerBox>,
            $crate::abi_stable::std_types::RString,
        > {
            $crate::sdk::guard(|| {
                $(
                    if let Some(handler) = $crate::sdk::construct::<$tool>(tool.as_str(), config.as_str())? {
                        return Ok($crate::sdk::into_abi(Some(handler)));
                    }
                )+
                Ok($crate::sdk::into_abi(None))
            })
        }
    };
}
