//! `http.request` in a build without the `web` feature: no client, policy or connector is compiled, and
//! every request answers so (web_fetch and web_search report it as their error). `web.settings` still
//! answers from `[web]`.

use super::HttpService;
use crate::task::Cancels;
use toolshed_plugin_api::services::{HttpReply, HttpRequest};
use toolshed_plugin_api::{ServiceError, ServiceErrorKind};

impl HttpService {
    /// Refuses every request: this build has no HTTP client.
    pub fn request(&self, _request: HttpRequest, _cancels: &Cancels<'_>) -> Result<HttpReply, ServiceError> {
        Err(ServiceError::new(
            ServiceErrorKind::Failed,
            "this build of Toolshed has no HTTP client (the `web` feature)",
        ))
    }
}
