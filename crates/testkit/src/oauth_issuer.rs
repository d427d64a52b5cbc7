//! Local fake OAuth authorization servers on 127.0.0.1, one per flow pi 1.6 uses, checking what
//! a real one checks:
//!
//! - [`Flavor::Anthropic`] and [`Flavor::Codex`]: the authorization endpoint checks the client
//!   id, `response_type=code`, the exact scopes, an S256 challenge, a state and an allowed
//!   redirect URI, then redirects (302) to the redirect URI with a code and the state (or, for
//!   Anthropic's copy-code redirect, shows `code#state`). The token endpoint (JSON for
//!   Anthropic, a form for Codex) takes a code once, with the same redirect URI (and for
//!   Anthropic the same state) and a verifier whose SHA-256 is the challenge.
//! - [`Flavor::Copilot`]: GitHub's device-code endpoint, its access-token endpoint answering
//!   `authorization_pending` until the code was polled [`IssuerState::pending_polls`] times,
//!   and the Copilot token endpoint taking the GitHub token as bearer.
//!
//! Every flavour issues access tokens living [`IssuerState::expires_in`] seconds, rotates
//! refresh tokens (Codex, Anthropic) and refuses a used one; [`FakeIssuer::accepts`] tells a
//! fake model server whether a bearer token is currently valid.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::{Part, Recorded, Reply, TestServer};

/// Which issuer to fake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Anthropic (Claude Pro/Max): `/oauth/authorize`, JSON `/v1/oauth/token`.
    Anthropic,
    /// OpenAI Codex: `/oauth/authorize`, form `/oauth/token`, JWT access tokens with a
    /// ChatGPT account id.
    Codex,
    /// GitHub Copilot: `/login/device/code`, `/login/oauth/access_token`,
    /// `/copilot_internal/v2/token`.
    Copilot,
}

/// A code the authorization endpoint handed out.
#[derive(Debug, Clone)]
struct Grant {
    challenge: String,
    redirect_uri: String,
    state: String,
    used: bool,
}

/// What the issuer knows and counts.
#[derive(Debug)]
pub struct IssuerState {
    /// The client id it accepts.
    pub client_id: String,
    /// The exact scope string it accepts.
    pub scope: String,
    /// The redirect URIs it accepts besides `http://localhost:<any port><callback_path>`.
    pub fixed_redirects: Vec<String>,
    /// The path of loopback redirect URIs.
    pub callback_path: String,
    /// Only this loopback port (Codex's client knows one); `None`: any.
    pub callback_port: Option<u16>,
    /// Lifetime of the access tokens it issues, in seconds.
    pub expires_in: u64,
    /// Copilot: how many polls of a device code answer `authorization_pending`.
    pub pending_polls: usize,
    /// The account id in Codex tokens.
    pub account_id: String,
    /// A pause before the body of a refresh's answer (a slow issuer, so that concurrent
    /// clients all find the token expired while the first refresh runs).
    pub refresh_delay: Option<Duration>,
    /// Token grants made by a refresh (code exchanges not counted).
    pub refreshes: usize,
    /// Codes exchanged.
    pub exchanges: usize,
    /// Why requests were refused, in order.
    pub refused: Vec<String>,
    codes: HashMap<String, Grant>,
    devices: HashMap<String, (usize, bool)>,
    refresh_tokens: HashSet<String>,
    access_tokens: HashMap<String, Instant>,
    next: usize,
}

/// A running fake issuer.
pub struct FakeIssuer {
    /// The server (its `base_url` is the origin to point a client at).
    pub server: TestServer,
    state: Arc<Mutex<IssuerState>>,
    flavor: Flavor,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn pairs(text: &str) -> HashMap<String, String> {
    text.trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// Percent-decoding with `+` as a space (`application/x-www-form-urlencoded`).
fn decode(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn json_reply(status: u16, body: Value) -> Reply {
    Reply::Respond {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: vec![Part::Bytes(body.to_string().into_bytes())],
    }
}

impl FakeIssuer {
    /// Starts an issuer of `flavor` for pi's client id and scopes of that provider.
    pub async fn start(flavor: Flavor) -> std::io::Result<Self> {
        let (client_id, scope, fixed, path, port) = match flavor {
            Flavor::Anthropic => (
                "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
                "org:create_api_key user:profile user:inference user:sessions:claude_code user:mcp_servers user:file_upload",
                vec!["https://platform.claude.com/oauth/code/callback".to_string()],
                "/callback",
                None,
            ),
            Flavor::Codex => (
                "app_EMoamEEZ73f0CkXaXp7hrann",
                "openid profile email offline_access",
                Vec::new(),
                "/auth/callback",
                None,
            ),
            Flavor::Copilot => ("Iv1.b507a08c87ecfe98", "read:user", Vec::new(), "", None),
        };
        let state = Arc::new(Mutex::new(IssuerState {
            client_id: client_id.into(),
            scope: scope.into(),
            fixed_redirects: fixed,
            callback_path: path.into(),
            callback_port: port,
            expires_in: 3600,
            pending_polls: 1,
            account_id: "acct-42".into(),
            refresh_delay: None,
            refreshes: 0,
            exchanges: 0,
            refused: Vec::new(),
            codes: HashMap::new(),
            devices: HashMap::new(),
            refresh_tokens: HashSet::new(),
            access_tokens: HashMap::new(),
            next: 0,
        }));
        let shared = state.clone();
        let server = TestServer::start_fn(move |request| {
            let mut state = shared.lock().unwrap_or_else(|p| p.into_inner());
            let reply = state.answer(flavor, request);
            if let Err(reason) = &reply {
                state.refused.push(reason.clone());
            }
            reply.unwrap_or_else(|reason| {
                json_reply(
                    400,
                    json!({"error": "invalid_grant", "error_description": reason}),
                )
            })
        })
        .await?;
        Ok(Self {
            server,
            state,
            flavor,
        })
    }

    /// The issuer's state, to change its settings or read its counts.
    pub fn state(&self) -> MutexGuard<'_, IssuerState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `token` is an access token it issued that has not expired (nor been revoked).
    pub fn accepts(&self, token: &str) -> bool {
        self.state()
            .access_tokens
            .get(token)
            .is_some_and(|until| Instant::now() < *until)
    }

    /// A shareable check of [`accepts`](Self::accepts) for a model server's closure.
    pub fn checker(&self) -> impl Fn(&str) -> bool + Send + Sync + 'static {
        let state = self.state.clone();
        move |token| {
            state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .access_tokens
                .get(token)
                .is_some_and(|until| Instant::now() < *until)
        }
    }

    /// Ends every access token's life now (time passing, without waiting for it).
    pub fn expire_access_tokens(&self) {
        self.state().access_tokens.clear();
    }

    /// Stores a refresh token as valid (a login made before the test).
    pub fn add_refresh_token(&self, token: &str) {
        self.state().refresh_tokens.insert(token.into());
    }

    /// Whether `token` is a currently valid refresh token.
    pub fn refresh_token_valid(&self, token: &str) -> bool {
        self.state().refresh_tokens.contains(token)
    }

    /// The flavour.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// Plays the browser: requests the authorization URL, and returns where the issuer sent
    /// it (the redirect URL with the code), or for a page that shows the code, that text.
    pub async fn authorize(url: &str) -> Result<String, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let response = client.get(url).send().await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        if status == 302 {
            return response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
                .ok_or_else(|| "a redirect without a location".to_string());
        }
        let text = response.text().await.map_err(|e| e.to_string())?;
        if status == 200 {
            Ok(text)
        } else {
            Err(format!("{status}: {text}"))
        }
    }
}

impl IssuerState {
    fn mint(&mut self, flavor: Flavor) -> (String, String) {
        self.next += 1;
        let n = self.next;
        let access = match flavor {
            Flavor::Codex => {
                let payload = json!({"https://api.openai.com/auth": {"chatgpt_account_id": self.account_id}, "n": n});
                format!(
                    "eyJhbGciOiJub25lIn0.{}.sig{n}",
                    b64(payload.to_string().as_bytes())
                )
            }
            Flavor::Anthropic => format!("sk-ant-oat01-fake{n}"),
            Flavor::Copilot => format!("tid={n};exp=9;proxy-ep=proxy.individual.githubcopilot.com"),
        };
        let refresh = match flavor {
            Flavor::Anthropic => format!("sk-ant-ort01-fake{n}"),
            _ => format!("refresh-fake{n}"),
        };
        self.access_tokens.insert(
            access.clone(),
            Instant::now() + Duration::from_secs(self.expires_in),
        );
        (access, refresh)
    }

    fn tokens(&mut self, flavor: Flavor) -> Reply {
        let (access, refresh) = self.mint(flavor);
        self.refresh_tokens.insert(refresh.clone());
        json_reply(
            200,
            json!({"access_token": access, "refresh_token": refresh, "expires_in": self.expires_in, "token_type": "Bearer"}),
        )
    }

    fn redirect_allowed(&self, uri: &str) -> bool {
        if self.fixed_redirects.iter().any(|r| r == uri) {
            return true;
        }
        let Some(rest) = uri.strip_prefix("http://localhost:") else {
            return false;
        };
        let Some((port, path)) = rest.split_once('/') else {
            return false;
        };
        let port_ok = match (port.parse::<u16>(), self.callback_port) {
            (Ok(p), Some(only)) => p == only,
            (Ok(_), None) => true,
            _ => false,
        };
        port_ok && format!("/{path}") == self.callback_path
    }

    fn answer(&mut self, flavor: Flavor, request: &Recorded) -> Result<Reply, String> {
        let (path, query) = request
            .path
            .split_once('?')
            .unwrap_or((request.path.as_str(), ""));
        let body = String::from_utf8_lossy(&request.body).into_owned();
        let json_body = || -> HashMap<String, String> {
            serde_json::from_str::<HashMap<String, Value>>(&body)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
                .collect()
        };
        let is_form = request.header("content-type") == Some("application/x-www-form-urlencoded");
        match (flavor, request.method.as_str(), path) {
            (Flavor::Anthropic | Flavor::Codex, "GET", "/oauth/authorize") => {
                self.authorize(flavor, &pairs(query))
            }
            (Flavor::Anthropic, "POST", "/v1/oauth/token") => {
                if request.header("content-type") != Some("application/json") {
                    return Err("not JSON".into());
                }
                self.token(flavor, &json_body())
            }
            (Flavor::Codex, "POST", "/oauth/token") if is_form => self.token(flavor, &pairs(&body)),
            (Flavor::Copilot, "POST", "/login/device/code") if is_form => {
                let form = pairs(&body);
                self.check(&form, "client_id", &self.client_id.clone())?;
                self.check(&form, "scope", &self.scope.clone())?;
                self.next += 1;
                let device = format!("device-{}", self.next);
                self.devices.insert(device.clone(), (0, false));
                Ok(json_reply(
                    200,
                    json!({"device_code": device, "user_code": "ABCD-1234", "verification_uri": "https://github.com/login/device", "interval": 1, "expires_in": 900}),
                ))
            }
            (Flavor::Copilot, "POST", "/login/oauth/access_token") if is_form => {
                let form = pairs(&body);
                self.check(&form, "client_id", &self.client_id.clone())?;
                self.check(
                    &form,
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:device_code",
                )?;
                let device = form.get("device_code").cloned().unwrap_or_default();
                let pending = self.pending_polls;
                let entry = self.devices.get_mut(&device).ok_or("unknown device code")?;
                if entry.1 {
                    return Err("device code already used".into());
                }
                entry.0 += 1;
                if entry.0 <= pending {
                    return Ok(json_reply(200, json!({"error": "authorization_pending"})));
                }
                entry.1 = true;
                self.next += 1;
                let github = format!("gho_fake{}", self.next);
                self.refresh_tokens.insert(github.clone());
                Ok(json_reply(
                    200,
                    json!({"access_token": github, "token_type": "bearer", "scope": "read:user"}),
                ))
            }
            (Flavor::Copilot, "GET", "/copilot_internal/v2/token") => {
                let bearer = request
                    .header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .unwrap_or_default();
                if !self.refresh_tokens.contains(bearer) {
                    return Err("unknown GitHub token".into());
                }
                if request.header("editor-version").is_none() {
                    return Err("no editor headers".into());
                }
                self.refreshes += 1;
                let (access, _) = self.mint(flavor);
                let expires_at = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
                    + self.expires_in;
                Ok(json_reply(
                    200,
                    json!({"token": access, "expires_at": expires_at}),
                ))
            }
            // Copilot's model list (pi reads it after a login): none enabled.
            (Flavor::Copilot, "GET", "/models") => Ok(json_reply(200, json!({"data": []}))),
            _ => Err(format!("no route {} {path}", request.method)),
        }
    }

    fn check(
        &self,
        fields: &HashMap<String, String>,
        name: &str,
        want: &str,
    ) -> Result<(), String> {
        match fields.get(name) {
            Some(value) if value == want => Ok(()),
            other => Err(format!("{name} is {other:?}, not {want:?}")),
        }
    }

    fn authorize(
        &mut self,
        flavor: Flavor,
        query: &HashMap<String, String>,
    ) -> Result<Reply, String> {
        self.check(query, "client_id", &self.client_id.clone())?;
        self.check(query, "response_type", "code")?;
        self.check(query, "scope", &self.scope.clone())?;
        self.check(query, "code_challenge_method", "S256")?;
        if flavor == Flavor::Anthropic {
            self.check(query, "code", "true")?;
        } else {
            self.check(query, "codex_cli_simplified_flow", "true")?;
        }
        let challenge = query.get("code_challenge").cloned().unwrap_or_default();
        let state = query.get("state").cloned().unwrap_or_default();
        let redirect_uri = query.get("redirect_uri").cloned().unwrap_or_default();
        if challenge.len() != 43 || state.is_empty() {
            return Err("a challenge and a state are required".into());
        }
        if !self.redirect_allowed(&redirect_uri) {
            return Err(format!("redirect_uri {redirect_uri} is not registered"));
        }
        self.next += 1;
        let code = format!("code-{}", self.next);
        self.codes.insert(
            code.clone(),
            Grant {
                challenge,
                redirect_uri: redirect_uri.clone(),
                state: state.clone(),
                used: false,
            },
        );
        if self.fixed_redirects.contains(&redirect_uri) {
            return Ok(Reply::Respond {
                status: 200,
                headers: vec![("content-type".into(), "text/plain".into())],
                body: vec![Part::Bytes(format!("{code}#{state}").into_bytes())],
            });
        }
        let location = format!(
            "{redirect_uri}?code={code}&state={}",
            state
                .replace('%', "%25")
                .replace('&', "%26")
                .replace('+', "%2B")
        );
        Ok(Reply::Respond {
            status: 302,
            headers: vec![("location".into(), location)],
            body: Vec::new(),
        })
    }

    fn token(&mut self, flavor: Flavor, fields: &HashMap<String, String>) -> Result<Reply, String> {
        self.check(fields, "client_id", &self.client_id.clone())?;
        match fields.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let code = fields.get("code").cloned().unwrap_or_default();
                let grant = self.codes.get_mut(&code).ok_or("unknown code")?;
                if grant.used {
                    return Err("code already used".into());
                }
                grant.used = true;
                let grant = grant.clone();
                if fields.get("redirect_uri") != Some(&grant.redirect_uri) {
                    return Err("redirect_uri differs from the authorization request's".into());
                }
                if flavor == Flavor::Anthropic && fields.get("state") != Some(&grant.state) {
                    return Err("state differs from the authorization request's".into());
                }
                let verifier = fields.get("code_verifier").cloned().unwrap_or_default();
                let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
                if b64(digest.as_ref()) != grant.challenge {
                    return Err("code_verifier does not match the challenge".into());
                }
                self.exchanges += 1;
                Ok(self.tokens(flavor))
            }
            Some("refresh_token") => {
                let token = fields.get("refresh_token").cloned().unwrap_or_default();
                if !self.refresh_tokens.remove(&token) {
                    return Err("refresh token unknown or already used".into());
                }
                self.refreshes += 1;
                let mut reply = self.tokens(flavor);
                if let (Some(pause), Reply::Respond { body, .. }) = (self.refresh_delay, &mut reply)
                {
                    body.insert(0, Part::Sleep(pause));
                }
                Ok(reply)
            }
            other => Err(format!("grant_type {other:?}")),
        }
    }
}
