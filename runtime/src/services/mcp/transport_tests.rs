//! The checked MCP transports against a scripted peer on an in-memory pipe.

use super::*;
use rmcp::model::{ClientRequest, NumberOrString, PingRequest};
use tokio::io::AsyncReadExt as _;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn fault_of(line: &[u8]) -> String {
    match decode(line) {
        Decoded::Fault(reason) => reason,
        other => panic!("expected a fault for {:?}, got {other:?}", String::from_utf8_lossy(line)),
    }
}

#[test]
fn lines_rmcp_would_drop_are_faults_and_stray_output_is_told_apart() {
    let deep = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":{}{}}}}}"#, "[".repeat(200), "]".repeat(200));
    assert_eq!(fault_of(deep.as_bytes()), "sent JSON nested deeper than 128 levels");
    let mut invalid = br#"{"jsonrpc":"2.0","id":1,"result":{"text":""#.to_vec();
    invalid.extend_from_slice(b"\xff\xfe\"}}\n");
    assert!(fault_of(&invalid).starts_with("sent a message that is not valid UTF-8"));
    assert!(fault_of(br#"{"jsonrpc":"2.0","id":1,"result":{"#).starts_with("sent a message that is not valid JSON"));
    assert!(fault_of(br#"{"id":1,"result":{}}"#).starts_with("sent a response that is not a valid JSON-RPC message"));
    assert_eq!(
        fault_of(br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#),
        "sent a JSON-RPC batch, which MCP does not allow"
    );
    assert!(matches!(decode(b"\r\n"), Decoded::Skip));
    for stray in [&b"Server listening on stdio\n"[..], br#"{"level":"info","msg":"ready"}"#] {
        assert!(matches!(decode(stray), Decoded::Stray(_)), "{}", String::from_utf8_lossy(stray));
    }
    assert!(matches!(decode(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n"), Decoded::Message(_)));
}

/// A client transport over an in-memory pipe, and the server's ends.
fn pipe(
    max: usize,
) -> (
    Checked<Lines<tokio::io::DuplexStream, tokio::io::DuplexStream>>,
    Fault,
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
) {
    let (client_read, server_write) = tokio::io::duplex(1 << 16);
    let (server_read, client_write) = tokio::io::duplex(1 << 16);
    let fault = Fault::default();
    let transport = Checked::new(Lines::new(client_read, client_write, None, max, fault.clone()), fault.clone());
    (transport, fault, server_write, server_read)
}

fn ping(id: i64) -> TxJsonRpcMessage<RoleClient> {
    JsonRpcMessage::request(ClientRequest::PingRequest(PingRequest::default()), NumberOrString::Number(id))
}

#[test]
fn answers_to_ids_never_sent_end_the_connection() {
    runtime().block_on(async {
        let (mut transport, fault, mut server_write, mut server_read) = pipe(1 << 20);
        transport.send(ping(1)).await.unwrap();
        let mut sent = vec![0; 64];
        let n = server_read.read(&mut sent).await.unwrap();
        assert!(String::from_utf8_lossy(&sent[..n]).contains(r#""id":1"#));
        server_write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").await.unwrap();
        assert!(transport.receive().await.is_some());
        // Answered twice, then an id nobody asked for: the second answer already ends it.
        server_write.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").await.unwrap();
        assert!(transport.receive().await.is_none());
        assert_eq!(fault.get().unwrap(), "answered request id 1, which it was never sent or had answered already");
    });
}

#[test]
fn a_line_over_the_cap_ends_the_connection_before_it_is_buffered() {
    runtime().block_on(async {
        let (mut transport, fault, mut server_write, _server_read) = pipe(1000);
        let writer = tokio::spawn(async move {
            // Endless: the reader must stop on its own.
            while server_write.write_all(&[b'x'; 512]).await.is_ok() {}
        });
        assert!(transport.receive().await.is_none());
        assert_eq!(
            fault.get().unwrap(),
            "sent a message longer than 1000 bytes (the limit is [mcp] max_message_bytes = 1000)"
        );
        drop(transport);
        writer.await.unwrap();
    });
}

#[test]
fn a_message_split_across_reads_arrives_whole() {
    runtime().block_on(async {
        let (mut transport, fault, mut server_write, _server_read) = pipe(1 << 20);
        transport.send(ping(7)).await.unwrap();
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n";
        let writer = tokio::spawn(async move {
            for byte in line {
                server_write.write_all(&[*byte]).await.unwrap();
                tokio::task::yield_now().await;
            }
            server_write
        });
        assert!(transport.receive().await.is_some());
        assert_eq!(fault.get(), None);
        drop(writer.await.unwrap());
        // The server's end closed: the connection ends without a fault.
        assert!(transport.receive().await.is_none());
        assert_eq!(fault.get(), None);
    });
}
