//! An HTTP receiver on loopback for the outbound calls the server makes (HITL review events,
//! workflows' http_request steps): it answers what the test says and hands each request over.

/// A request a receiver took: its request line, headers (lower-case names) and body.
pub struct Received {
    pub request_line: String,
    pub headers: std::collections::HashMap<String, String>,
    pub body: Vec<u8>,
}

/// A receiver on loopback; `answer(n)` is the raw HTTP answer to its n-th request (from 1).
/// Every request it takes comes out of the channel.
pub async fn receiver(
    answer: impl Fn(usize) -> Vec<u8> + Send + 'static,
) -> (std::net::SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Received>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (sender, received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut taken = 0;
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut data = Vec::new();
            let mut buffer = [0u8; 4096];
            let (head, body) = loop {
                let n = stream.read(&mut buffer).await.unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                data.extend_from_slice(&buffer[..n]);
                if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&data[..end]).to_string();
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    let mut body = data[end + 4..].to_vec();
                    while body.len() < length {
                        let n = stream.read(&mut buffer).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        body.extend_from_slice(&buffer[..n]);
                    }
                    break (head, body);
                }
            };
            let request_line = head.lines().next().unwrap_or_default().to_owned();
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_owned()))
                .collect();
            taken += 1;
            let _ = stream.write_all(&answer(taken)).await;
            let _ = sender.send(Received {
                request_line,
                headers,
                body,
            });
        }
    });
    (address, received)
}

/// The receiver's next request, within a minute.
pub async fn next(received: &mut tokio::sync::mpsc::UnboundedReceiver<Received>) -> Received {
    let within = std::time::Duration::from_secs(60);
    tokio::time::timeout(within, received.recv())
        .await
        .expect("a delivery in time")
        .expect("the receiver runs")
}
