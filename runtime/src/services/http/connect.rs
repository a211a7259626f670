//! Where reqwest meets the address policy: the direct client's DNS resolver, which hands the connector only
//! the addresses the policy let through, and a connector layer that judges the address each connection
//! actually reached before a byte of the request is written.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::policy::{AddressPolicy, Target};

/// The direct client's resolver: the system's lookup, then the deny list and the address policy on what it
/// returned; the connector gets only the addresses that passed.
pub(super) struct CheckedResolver(pub(super) Arc<AddressPolicy>);

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = Arc::clone(&self.0);
        Box::pin(async move {
            let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
            policy.check_denied(&Target::name(&host), &ips).await?;
            let addrs = policy.filter(&host, addrs)?;
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// A layer over the direct client's connector that judges the address each new connection actually
/// reached, before a byte of the request is written: the last word on every path to a host (an address in
/// the URL, a redirect, a name) that the checks before it judged by what it looked like.
#[derive(Clone)]
pub(super) struct PeerCheck(pub(super) Arc<AddressPolicy>);

impl<S> tower_layer::Layer<S> for PeerCheck {
    type Service = PeerChecked<S>;

    fn layer(&self, inner: S) -> PeerChecked<S> {
        PeerChecked { inner, policy: Arc::clone(&self.0) }
    }
}

/// The connector [`PeerCheck`] wraps.
#[derive(Clone)]
pub(super) struct PeerChecked<S> {
    inner: S,
    policy: Arc<AddressPolicy>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, R> tower_service::Service<R> for PeerChecked<S>
where
    S: tower_service::Service<R, Error = BoxError>,
    S::Response: hyper_util::client::legacy::connect::Connection + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let connecting = self.inner.call(request);
        let policy = Arc::clone(&self.policy);
        Box::pin(async move {
            let connection = connecting.await?;
            let mut extras = http::Extensions::new();
            hyper_util::client::legacy::connect::Connection::connected(&connection).get_extras(&mut extras);
            if let Some(info) = extras.get::<hyper_util::client::legacy::connect::HttpInfo>() {
                let peer = info.remote_addr().ip();
                policy.check_denied(&Target::Ip(peer), &[peer]).await?;
            }
            Ok(connection)
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::services::http::describe;
    use toolshed_plugin_api::services::HttpErrorKind;

    #[test]
    fn the_connector_judges_the_address_a_connection_reached() {
        use std::io::Read;
        // A client with the connector check alone: whatever a URL looked like, the peer decides.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            bytes
        });
        let policy = Arc::new(AddressPolicy::new(&[], &["localhost".to_owned()], true, None));
        let client = reqwest::Client::builder().no_proxy().connector_layer(PeerCheck(policy)).build().unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let error = runtime.block_on(client.get(format!("http://127.0.0.1:{port}/secret")).send()).unwrap_err();
        let (kind, message) = describe(&error);
        assert_eq!(kind, HttpErrorKind::RefusedAddress, "{message}");
        assert_eq!(message, "127.0.0.1 is an address of localhost, which is in [web] denied_hosts");
        drop(client);
        drop(runtime);
        assert_eq!(received.join().unwrap(), b"", "the request was written to a denied peer");
    }
}
