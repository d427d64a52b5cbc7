//! `oxpi_ai::Models` over real HTTP: keys resolved per provider as pi 1.6 does it (request
//! key, stored credential, key variables, ambient variables), from an injected environment and
//! a credential store; custom providers beside the built-ins; the errors for a provider that is
//! unknown, not configured, or behind a ChatGPT login.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use oxpi_ai::collection::{
    CredentialKind, Env, InMemoryCredentialStore, Models, Provider, ProviderAuth,
    SimpleStreamOptions,
};
use oxpi_ai::faux::{FauxProvider, FauxReply};
use oxpi_ai::{
    Context, Credential, CredentialStore, Message, Model, StopReason, StreamOptions, ThinkingLevel,
};
use oxpi_testkit::{Reply, TestServer};
use serde_json::json;

fn context() -> Context {
    Context::new("Be terse.").with_message(Message::user("hi"))
}

/// A Chat Completions stream answering `text`.
fn answer(text: &str) -> Reply {
    let chunk = json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let end = json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    Reply::sse([
        format!("data: {chunk}\n\n"),
        format!("data: {end}\n\n"),
        "data: [DONE]\n\n".to_string(),
    ])
}

fn options() -> StreamOptions {
    StreamOptions::default()
        .with_timeout(Duration::from_secs(20))
        .with_max_retries(0)
}

/// The catalogue's groq model, pointed at `server`.
fn groq_at(server: &TestServer) -> Model {
    let mut model =
        oxpi_ai::models::get_model("groq", "llama-3.3-70b-versatile").expect("in the catalogue");
    model.base_url = format!("{}/v1", server.base_url());
    model
}

#[tokio::test]
async fn a_builtin_provider_takes_its_key_from_the_environment_and_the_store_wins() {
    let server = TestServer::start(vec![answer("one"), answer("two"), answer("three")])
        .await
        .unwrap();
    let model = groq_at(&server);
    let env = Env::from_pairs([("GROQ_API_KEY", "gsk-from-env")]);
    let store = Arc::new(InMemoryCredentialStore::new());
    let models = Models::builder()
        .env(env)
        .shared_credentials(store.clone())
        .build();

    // From the environment.
    let reply = models.complete(&model, &context(), options()).await;
    assert_eq!(
        (reply.stop_reason, reply.text()),
        (StopReason::Stop, "one".into())
    );
    // A stored key owns the provider.
    store
        .modify("groq", &mut |_| Some(Credential::api_key("gsk-stored")))
        .unwrap();
    let reply = models.complete(&model, &context(), options()).await;
    assert_eq!(reply.text(), "two");
    // The request's own key wins over both.
    let reply = models
        .complete(&model, &context(), options().with_api_key("gsk-request"))
        .await;
    assert_eq!(reply.text(), "three");

    let keys: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect();
    assert_eq!(
        keys,
        [
            "Bearer gsk-from-env",
            "Bearer gsk-stored",
            "Bearer gsk-request"
        ]
    );
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn an_unconfigured_provider_fails_at_once_naming_its_variables() {
    let server = TestServer::start(vec![answer("never")]).await.unwrap();
    let models = Models::builder()
        .env(Env::from_pairs::<&str, &str>([]))
        .build();
    let reply = models
        .complete(&groq_at(&server), &context(), options())
        .await;
    assert_eq!(reply.stop_reason, StopReason::Error);
    assert_eq!(
        reply.error_message.as_deref(),
        Some(
            "Provider is not configured: groq (set GROQ_API_KEY or a key in the credential store)"
        )
    );
    assert_eq!(reply.failure_kind, Some(oxpi_ai::FailureKind::Auth));
    assert!(server.requests().is_empty(), "nothing was sent");
    assert_eq!(models.check_auth("groq"), Ok(None));

    // A provider the collection does not hold, without a server to send to, is unknown.
    let mut stranger = groq_at(&server);
    stranger.provider = "nobody".into();
    stranger.base_url = String::new();
    let reply = models.complete(&stranger, &context(), options()).await;
    assert_eq!(
        reply.error_message.as_deref(),
        Some("Unknown provider: nobody")
    );
}

/// Issue 39, trap 6: a model built by hand for a server of one's own streams through `Models`.
#[tokio::test]
async fn a_model_with_its_own_url_streams_through_the_collection() {
    let server = TestServer::start(vec![answer("hello")]).await.unwrap();
    let models = Models::builder()
        .env(Env::from_pairs::<&str, &str>([]))
        .build();
    let model = Model::openai_compatible(format!("{}/v1", server.base_url()), "local");
    let reply = models.complete(&model, &context(), options()).await;
    assert_eq!(reply.error_message, None);
    assert_eq!(reply.stop_reason, StopReason::Stop);
    assert_eq!(reply.text(), "hello");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn stored_keys_may_name_variables_and_oauth_entries_are_refused_clearly() {
    let env = Env::from_pairs([("TEAM_KEY", "sk-team"), ("MISTRAL_API_KEY", "sk-env")]);
    let store = InMemoryCredentialStore::new()
        .with("groq", Credential::api_key("${TEAM_KEY}"))
        .with("openai", Credential::api_key("!op read openai"))
        .with(
            "mistral",
            serde_json::from_value(
                json!({"type": "oauth", "access": "a", "refresh": "r", "expires": 1}),
            )
            .unwrap(),
        );
    let models = Models::builder().env(env).credentials(store).build();
    assert_eq!(
        models.check_auth("groq").unwrap().map(|c| c.source),
        Some("stored credential".to_string())
    );
    let openai = models.check_auth("openai").unwrap_err().to_string();
    assert!(openai.contains("shell command"), "{openai}");
    // A stored credential owns the provider: MISTRAL_API_KEY is not used in its place.
    let mistral = models.check_auth("mistral").unwrap_err().to_string();
    assert_eq!(
        mistral,
        "the stored credential of mistral is an OAuth login, which oxpi cannot use yet (store an API key for it, or use pi)"
    );

    let server = TestServer::start(vec![answer("ok")]).await.unwrap();
    let reply = models
        .complete(&groq_at(&server), &context(), options())
        .await;
    assert_eq!(reply.text(), "ok");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-team")
    );
}

#[test]
fn ambient_credentials_configure_bedrock_and_available_lists_configured_providers() {
    let env = Env::from_pairs([("AWS_ACCESS_KEY_ID", "AKIA"), ("GROQ_API_KEY", "gsk")]);
    let models = Models::builder().env(env.clone()).build();
    // One variable of the pair is not enough.
    assert_eq!(models.check_auth("amazon-bedrock"), Ok(None));
    let env = Env::from_fn(move |name| {
        env.get(name)
            .or_else(|| (name == "AWS_SECRET_ACCESS_KEY").then(|| "secret".to_string()))
    });
    let models = Models::builder()
        .env(env)
        .provider(
            Provider::new("local")
                .with_model(Model::openai_compatible("http://127.0.0.1:1/v1", "qwen")),
        )
        .build();
    let check = models.check_auth("amazon-bedrock").unwrap().unwrap();
    assert_eq!(check.source, "AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY");
    let groq = models.check_auth("groq").unwrap().unwrap();
    assert_eq!(
        (groq.source.as_str(), groq.kind),
        ("GROQ_API_KEY", CredentialKind::ApiKey)
    );
    let available = models.available(None).unwrap();
    let mut providers: Vec<&str> = available.iter().map(|m| m.provider.as_str()).collect();
    providers.dedup();
    assert_eq!(providers, ["amazon-bedrock", "groq", "local"]);
    assert_eq!(
        models.available(Some("groq")).unwrap().len(),
        models.models(Some("groq")).len()
    );
    assert!(models.available(Some("openai")).unwrap().is_empty());
}

#[tokio::test]
async fn custom_providers_on_one_api_live_side_by_side() {
    let server_a = TestServer::start(vec![answer("from a")]).await.unwrap();
    let server_b = TestServer::start(vec![answer("from b")]).await.unwrap();
    let provider = |id: &str, server: &TestServer, var: &str| {
        Provider::new(id)
            .with_base_url(format!("{}/v1", server.base_url()))
            .with_auth(ProviderAuth::api_key_env([var]))
            .with_model(Model::openai_compatible("", "same-model"))
    };
    let models = Models::builder()
        .env(Env::from_pairs([("A_KEY", "key-a"), ("B_KEY", "key-b")]))
        .provider(provider("gateway-a", &server_a, "A_KEY"))
        .provider(provider("gateway-b", &server_b, "B_KEY"))
        .build();
    assert!(models.provider("groq").is_some(), "the built-ins stay");
    let a = models.get_model("gateway-a", "same-model").unwrap();
    let b = models.get_model("gateway-b", "same-model").unwrap();
    let ctx = context();
    let (reply_a, reply_b) = tokio::join!(
        models.complete(a, &ctx, options()),
        models.complete(b, &ctx, options())
    );
    assert_eq!(
        (reply_a.text(), reply_b.text()),
        ("from a".into(), "from b".into())
    );
    assert_eq!(reply_a.provider, "gateway-a");
    assert_eq!(
        server_a.requests()[0].header("authorization"),
        Some("Bearer key-a")
    );
    assert_eq!(
        server_b.requests()[0].header("authorization"),
        Some("Bearer key-b")
    );

    // Two providers bringing their own implementation of one custom API: each keeps its own.
    let one = FauxProvider::new();
    one.push(FauxReply::text("faux one"));
    let two = FauxProvider::new();
    two.push(FauxReply::text("faux two"));
    let custom = |id: &str, faux: &FauxProvider| {
        Provider::new(id)
            .with_model(faux.model())
            .with_api(faux.clone())
    };
    let models = Models::builder()
        .builtins(false)
        .provider(custom("one", &one))
        .provider(custom("two", &two))
        .build();
    let (one_id, two_id) = (one.model().id, two.model().id);
    let two_model = models.get_model("two", &two_id).unwrap();
    let one_model = models.get_model("one", &one_id).unwrap();
    let reply = models.complete(two_model, &context(), options()).await;
    assert_eq!(reply.text(), "faux two");
    let reply = models.complete(one_model, &context(), options()).await;
    assert_eq!(reply.text(), "faux one");
    assert_eq!((one.call_count(), two.call_count()), (1, 1));
}

#[tokio::test]
async fn stream_simple_sends_the_thinking_level_as_the_apis_reasoning_setting() {
    let server = TestServer::start(vec![answer("thought"), answer("plain")])
        .await
        .unwrap();
    let mut model = oxpi_ai::models::get_model("groq", "openai/gpt-oss-120b").unwrap();
    model.base_url = format!("{}/v1", server.base_url());
    assert!(model.reasoning);
    let models = Models::builder()
        .env(Env::from_pairs([("GROQ_API_KEY", "gsk")]))
        .build();
    let options = SimpleStreamOptions::new()
        .with_reasoning(ThinkingLevel::High)
        .with_options(options());
    let reply = models.complete_simple(&model, &context(), options).await;
    assert_eq!(reply.text(), "thought");
    let reply = models
        .complete_simple(&model, &context(), self::options())
        .await;
    assert_eq!(reply.text(), "plain");
    let requests = server.requests();
    assert_eq!(requests[0].json()["reasoning_effort"], "high");
    assert_ne!(requests[1].json()["reasoning_effort"], "high");
}

#[tokio::test]
async fn codex_models_need_a_chatgpt_access_token() {
    let model = oxpi_ai::models::builtin_models()
        .iter()
        .find(|m| m.api == "openai-codex-responses")
        .expect("the catalogue lists Codex models")
        .clone();
    // Through the free function: no key at all, then a key that is no ChatGPT access token
    // (the account id is read from its JWT payload), end before any request.
    let reply = oxpi_ai::complete(&model, &context(), options()).await;
    assert_eq!(
        (reply.stop_reason, reply.error_message.as_deref()),
        (
            StopReason::Error,
            Some("No API key for provider: openai-codex")
        )
    );
    let reply = oxpi_ai::complete(&model, &context(), options().with_api_key("sk-x")).await;
    assert_eq!(
        (reply.stop_reason, reply.error_message.as_deref()),
        (
            StopReason::Error,
            Some("Failed to extract accountId from token")
        )
    );
    // Through the collection: the provider is not configured, and the text says why.
    let models = Models::builder()
        .env(Env::from_pairs::<&str, &str>([]))
        .build();
    let reply = models.complete(&model, &context(), options()).await;
    assert_eq!(
        reply.error_message.as_deref(),
        Some("openai-codex needs a ChatGPT login (OAuth), which oxpi does not do yet")
    );
}
