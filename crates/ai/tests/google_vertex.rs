//! `google-vertex`: Gemini on Vertex AI. Express mode (an API key) needs no feature; application
//! default credentials need oxpi-ai's feature `vertex` (gcp_auth). Both run against a local
//! server that is at once the OAuth token endpoint and a Gemini-format stream.

#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
mod common;

use std::time::Duration;

use common::{run, user_context};
use oxpi_ai::providers::google_generative_ai::vertex::GoogleVertexProvider;
use oxpi_ai::{Model, ProviderRegistry, StopReason, StreamOptions, API_GOOGLE_VERTEX};
use oxpi_testkit::{Recorded, Reply, TestServer};

const STREAM: &str = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello from Vertex\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":5,\"candidatesTokenCount\":3,\"totalTokenCount\":8},\"responseId\":\"v-1\"}\n\n";

fn respond(request: &Recorded) -> Reply {
    if request.path == "/token" {
        return Reply::Respond {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: vec![oxpi_testkit::Part::Bytes(
                br#"{"access_token":"ya29.vertex-test-token","expires_in":3599,"token_type":"Bearer"}"#.to_vec(),
            )],
        };
    }
    Reply::sse([STREAM])
}

fn model(server: &TestServer) -> Model {
    let mut model = Model::openai_compatible(server.base_url(), "gemini-2.5-flash");
    model.api = API_GOOGLE_VERTEX.into();
    model.provider = "google-vertex".to_string();
    model
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_max_retries(0)
        .with_timeout(Duration::from_secs(10))
}

#[tokio::test]
async fn express_mode_sends_the_key_in_a_header_to_the_publisher_path() {
    let server = TestServer::start_fn(respond).await.unwrap();
    let options = options().with_api_key("vertex-express-key");
    let (_, message) = run(&model(&server), &user_context("hi"), options).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    assert_eq!(message.text(), "Hello from Vertex");
    assert_eq!(message.api, API_GOOGLE_VERTEX);
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("vertex-express-key"));
    assert_eq!(request.header("authorization"), None);
    // The Gemini body.
    assert_eq!(request.json()["contents"][0]["parts"][0]["text"], "hi");
}

#[tokio::test]
async fn pis_credentials_marker_is_not_taken_for_a_key() {
    let server = TestServer::start_fn(respond).await.unwrap();
    let options = options().with_api_key("gcp-vertex-credentials");
    let registry = {
        let mut registry = ProviderRegistry::new();
        registry.register(GoogleVertexProvider::new().with_location("us-central1"));
        registry
    };
    let mut stream = registry.stream(&model(&server), &user_context("hi"), options);
    let mut last = None;
    while let Some(event) = futures::StreamExt::next(&mut stream).await {
        last = event.final_message().cloned();
    }
    let message = last.unwrap();
    // Not sent as a key: it asks for a project (or, with the feature and a project, credentials).
    assert_eq!(message.stop_reason, StopReason::Error);
    if std::env::var("GOOGLE_CLOUD_PROJECT").is_err() && std::env::var("GCLOUD_PROJECT").is_err() {
        assert!(
            message
                .error_message
                .as_deref()
                .unwrap()
                .starts_with("Vertex AI requires a project ID"),
            "{:?}",
            message.error_message
        );
    }
    assert!(server.requests().is_empty());
}

#[cfg(feature = "vertex")]
mod adc {
    use super::*;
    use base64::Engine;
    use std::sync::Arc;

    fn service_account(server: &TestServer) -> gcp_auth::CustomServiceAccount {
        let json = include_str!("fixtures/vertex-test-service-account.json")
            .replace("TOKEN_URI", &format!("{}/token", server.base_url()));
        gcp_auth::CustomServiceAccount::from_json(&json).unwrap()
    }

    fn registry(server: &TestServer) -> ProviderRegistry {
        let provider = GoogleVertexProvider::new()
            .with_project("oxpi-test")
            .with_location("europe-west4")
            .with_token_provider(Arc::new(service_account(server)));
        let mut registry = ProviderRegistry::new();
        registry.register(provider);
        registry
    }

    async fn run_on(registry: &ProviderRegistry, model: &Model) -> oxpi_ai::AssistantMessage {
        let mut stream = registry.stream(model, &user_context("hi"), options());
        let mut last = None;
        while let Some(event) = futures::StreamExt::next(&mut stream).await {
            last = event.final_message().cloned();
        }
        last.unwrap()
    }

    #[tokio::test]
    async fn a_service_account_token_reaches_the_project_path() {
        let server = TestServer::start_fn(respond).await.unwrap();
        let registry = registry(&server);
        let message = run_on(&registry, &model(&server)).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{:?}",
            message.error_message
        );
        assert_eq!(message.text(), "Hello from Vertex");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "a token, then the stream");

        // The token request: a JWT bearer grant signed with the service account's key.
        let token_request = &requests[0];
        assert_eq!(token_request.path, "/token");
        let form: Vec<(String, String)> = url_pairs(&token_request.body);
        assert_eq!(
            form.iter().find(|(k, _)| k == "grant_type").unwrap().1,
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
        let jwt = &form.iter().find(|(k, _)| k == "assertion").unwrap().1;
        let claims = jwt_claims(jwt);
        assert_eq!(claims["iss"], "oxpi-test@oxpi-test.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], format!("{}/token", server.base_url()));
        assert_eq!(
            claims["scope"],
            "https://www.googleapis.com/auth/cloud-platform"
        );
        verify_signature(jwt);

        let request = &requests[1];
        assert_eq!(
            request.path,
            "/v1/projects/oxpi-test/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            request.header("authorization"),
            Some("Bearer ya29.vertex-test-token")
        );
        assert_eq!(request.header("x-goog-api-key"), None);

        // The token is cached for its lifetime: a second request asks for none.
        let again = run_on(&registry, &model(&server)).await;
        assert_eq!(again.stop_reason, StopReason::Stop);
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test]
    async fn a_refused_token_is_a_clear_error_and_nothing_is_streamed() {
        let server = TestServer::start_fn(|request| {
            if request.path == "/token" {
                Reply::json_error(
                    400,
                    r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#,
                )
            } else {
                Reply::sse([STREAM])
            }
        })
        .await
        .unwrap();
        let message = run_on(&registry(&server), &model(&server)).await;
        assert_eq!(message.stop_reason, StopReason::Error);
        let text = message.error_message.unwrap();
        assert!(
            text.starts_with("Could not get a Google access token for Vertex AI"),
            "{text}"
        );
        assert!(server.requests().iter().all(|r| r.path == "/token"));
    }

    #[tokio::test]
    async fn vertex_errors_and_throttling_end_as_clear_errors() {
        for (status, body, expected) in [
            (
                403,
                r#"{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied on resource","status":"PERMISSION_DENIED"}}"#,
                "403 Permission 'aiplatform.endpoints.predict' denied on resource",
            ),
            (
                429,
                r#"{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}"#,
                "429 Resource exhausted. Please try again later.",
            ),
        ] {
            let server = TestServer::start_fn(move |request| {
                if request.path == "/token" {
                    respond(request)
                } else {
                    Reply::json_error(status, body)
                }
            })
            .await
            .unwrap();
            let message = run_on(&registry(&server), &model(&server)).await;
            assert_eq!(message.stop_reason, StopReason::Error);
            assert_eq!(message.error_message.as_deref(), Some(expected));
            // The token never shows in an error.
            assert!(!format!("{message:?}").contains("ya29.vertex-test-token"));
        }
    }

    fn url_pairs(body: &[u8]) -> Vec<(String, String)> {
        String::from_utf8_lossy(body)
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (decode(k), decode(v)))
            .collect()
    }

    fn decode(s: &str) -> String {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    }

    fn jwt_claims(jwt: &str) -> serde_json::Value {
        let payload = jwt.split('.').nth(1).unwrap();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Checks the RS256 signature with the public half of the fixture's key (ring, independently
    /// of gcp_auth's signer).
    fn verify_signature(jwt: &str) {
        let (message, signature) = jwt.rsplit_once('.').unwrap();
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature.trim_end_matches('='))
            .unwrap();
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("fixtures/vertex-test-service-account.json"))
                .unwrap();
        let pem = fixture["private_key"].as_str().unwrap();
        let der: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(der)
            .unwrap();
        let pair = ring::signature::RsaKeyPair::from_pkcs8(&der).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            ring::signature::KeyPair::public_key(&pair)
                .as_ref()
                .to_vec(),
        );
        public.verify(message.as_bytes(), &signature).unwrap();
    }
}
