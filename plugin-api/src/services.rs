//! The host services every Toolshed host offers: one type per service, carrying its name and the JSON shapes of
//! its request and response. Plugins reach them through [`crate::HostClient::call`]:
//!
//! ```no_run
//! # use toolshed_plugin_api::{services::{PathResolve, ResolveRequest}, HostClient, ServiceError};
//! # fn f(host: &HostClient<'_>) -> Result<(), ServiceError> {
//! let resolved = host.call::<PathResolve>(&ResolveRequest { path: "src/main.rs".to_owned() })?;
//! println!("{}", resolved.absolute);
//! # Ok(())
//! # }
//! ```
//!
//! The wire format is the service's name and its request and response as JSON text: a type here only names
//! what both sides already exchange, so the compiler checks each call against it.

use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// A host service: its name on the wire and the types of its request and response.
///
/// Implemented by uninhabited marker types (`enum PathResolve {}`): a service is a name and two shapes, never a
/// value. Services that take nothing take [`Empty`].
pub trait Service {
    /// The service's name, as the host registers it.
    const NAME: &'static str;
    /// What the plugin sends.
    type Request: Serialize + DeserializeOwned;
    /// What the host answers.
    type Response: Serialize + DeserializeOwned;
}

/// Declares service markers, `Marker(CONSTANT) = "name": Request => Response;`, each with its documentation.
/// `CONSTANT` is the bare name, which the host's dispatch still matches on.
macro_rules! services {
    ($($(#[$doc:meta])* $marker:ident($constant:ident) = $name:literal: $request:ty => $response:ty;)+) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $marker {}

        impl $crate::services::Service for $marker {
            const NAME: &'static str = $name;
            type Request = $request;
            type Response = $response;
        }

        #[doc = concat!("The name of [`", stringify!($marker), "`].")]
        pub const $constant: &str = $name;
    )+};
}

mod browser;
mod commit;
mod conversation;
mod isolate;
mod mcp;
mod paths;
mod process;
mod state;
mod subagents;
mod web;

pub use browser::*;
pub use commit::*;
pub use conversation::*;
pub use isolate::*;
pub use mcp::*;
pub use paths::*;
pub use process::*;
pub use state::*;
pub use subagents::*;
pub use web::*;

/// The empty request of services that take nothing, and the empty response of services that answer nothing.
/// It reads from any JSON value (`{}`, `null`, anything else), as hosts always accepted: plugins built before a
/// service took a typed request keep working.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Empty {}

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Empty {})
    }
}
