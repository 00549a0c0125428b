//! Request bodies over HTTP/2 keep the same pace as over HTTP/1 (`body_pace.rs`), and one
//! stream whose body waits unread cannot stall another stream of the same connection
//! (`serve.rs` sizes the connection's flow-control window to hold every stream's).

use crate::protocol::{plain_app, token_for};
use axum::body::Bytes;
use axum::http::{Request, StatusCode};
use std::time::Duration;

/// An HTTP/2 connection with prior knowledge to the plain listener (as behind a proxy).
async fn connect(address: &str) -> h2::client::SendRequest<Bytes> {
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Opens a POST stream of a JSON body, sent by the caller.
async fn open_post(
    client: &h2::client::SendRequest<Bytes>,
    path: &str,
    token: Option<&str>,
) -> (h2::client::ResponseFuture, h2::SendStream<Bytes>) {
    let mut request = Request::post(format!("http://lector{path}"))
        .header("x-forwarded-proto", "https")
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut client = client.clone().ready().await.expect("a stream to open");
    client
        .send_request(request.body(()).unwrap(), false)
        .expect("the stream opens")
}

/// The status and body of an answer.
async fn answer_of(response: h2::client::ResponseFuture) -> (StatusCode, String) {
    let response = response.await.expect("an answer");
    let status = response.status();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("the answer's body");
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// Posts a whole JSON body on a stream of its own and answers the status and body.
async fn post(client: &h2::client::SendRequest<Bytes>, path: &str, token: &str, body: String) -> (StatusCode, String) {
    let (response, mut stream) = open_post(client, path, Some(token)).await;
    stream.send_data(Bytes::from(body), true).unwrap();
    answer_of(response).await
}

/// `count` documents of about a hundred bytes each, as `upload_documents` takes them.
fn documents(count: usize) -> String {
    let documents: Vec<_> = (0..count)
        .map(|i| serde_json::json!({"id": i, "text": format!("Document {i} says the delivery came late again, {}.", "x".repeat(40))}))
        .collect();
    serde_json::Value::from(documents).to_string()
}

async fn project(client: &h2::client::SendRequest<Bytes>, token: &str, name: &str) -> i64 {
    let (status, body) = post(
        client,
        "/projects",
        token,
        serde_json::json!({"name": name, "type": "CLASS"}).to_string(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    serde_json::from_str::<serde_json::Value>(&body).unwrap()["id"]
        .as_i64()
        .unwrap()
}

/// A body trickled over HTTP/2 is cut off as over HTTP/1: 408 once the grace has run out.
/// Before, HTTP/2 bodies were not paced at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_http2_bodies_are_cut_off() {
    let (_app, address) = plain_app(|h| {
        h.min_body_bytes_per_sec = 1000;
        h.body_grace_secs = 1;
    })
    .await;
    let client = connect(&address).await;
    let (response, mut stream) = open_post(&client, "/auth/login", None).await;
    stream.send_data(Bytes::from_static(b"{\"email\": \""), false).unwrap();
    let trickle = async {
        // Ten bytes a second against a floor of a thousand.
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if stream.send_data(Bytes::from_static(b"a"), false).is_err() {
                return;
            }
        }
    };
    let answer = async {
        let (answer, ()) = tokio::join!(answer_of(response), trickle);
        answer
    };
    let (status, body) = tokio::time::timeout(Duration::from_secs(4), answer)
        .await
        .expect("the slow body is cut off within the grace and a little more");
    assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{body}");
    assert!(body.contains("\"code\":\"request_timeout\""), "{body}");
    // The connection serves on: only the slow stream ended.
    let (response, mut stream) = open_post(&client, "/auth/login", None).await;
    stream.send_data(Bytes::from_static(b"{}"), true).unwrap();
    let (status, body) = answer_of(response).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

/// Ada's first upload holds her turn while its body arrives at pace; her second waits for the
/// turn with as much of its body sent as the server lets it; Bob's upload on the same
/// connection is read and answered meanwhile. Before, the waiting stream's window (1 MiB) was
/// the whole connection's: nothing more could arrive on the connection, Ada's first body and
/// Bob's stalled for no fault of the client's and fell behind the pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_http2_stream_does_not_stall_the_others() {
    let (app, address) = plain_app(|h| {
        h.min_body_bytes_per_sec = 1000;
        h.body_grace_secs = 1;
        h.requests_per_caller = 1;
    })
    .await;
    let ada = token_for(&app, "ada@example.org").await;
    let bob = token_for(&app, "bob@example.org").await;
    let client = connect(&address).await;
    let ada_project = project(&client, &ada, "Ada's").await;
    let bob_project = project(&client, &bob, "Bob's").await;
    let upload = |project: i64| format!("/projects/{project}/upload-documents");

    // Ada's first upload: 15 KB at 2,500 bytes a second, six seconds in all (room for a
    // loaded machine to answer Bob meanwhile).
    let (first, mut first_body) = open_post(&client, &upload(ada_project), Some(&ada)).await;
    let slow = Bytes::from(documents(150));
    let trickle = tokio::spawn(async move {
        for piece in slow.chunks(500) {
            first_body.send_data(slow.slice_ref(piece), false).unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        first_body.send_data(Bytes::new(), true).unwrap();
    });
    let in_hand = async {
        while app.state.turns.callers() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), in_hand)
        .await
        .expect("Ada's first upload is in hand");

    // Her second: 1.2 MB, sent at once, left unread until her turn comes.
    let (second, mut second_body) = open_post(&client, &upload(ada_project), Some(&ada)).await;
    second_body.send_data(Bytes::from(documents(12_000)), true).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Bob's upload: 600 KB, more than one stream's window, read while Ada's second waits.
    let (status, body) = tokio::time::timeout(
        Duration::from_secs(10),
        post(&client, &upload(bob_project), &bob, documents(6_000)),
    )
    .await
    .expect("Bob is answered");
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert!(
        !trickle.is_finished(),
        "Bob was answered while Ada's first body was still arriving"
    );

    let (status, body) = answer_of(first).await;
    assert_eq!(status, StatusCode::ACCEPTED, "Ada's first: {body}");
    let (status, body) = answer_of(second).await;
    assert_eq!(status, StatusCode::ACCEPTED, "Ada's second: {body}");
    trickle.await.unwrap();
}
