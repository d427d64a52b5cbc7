//! `AuthFile`, pi's `auth.json` on a real file system: what pi writes is read; a write keeps
//! every other entry byte for byte (OAuth tokens included) and formats as pi does (checked
//! against Node's `JSON.stringify(…, null, 2)` when Node is installed); writes are atomic and
//! private; pi's lock directory is honoured; concurrent writers lose nothing; a broken file is
//! a clear error and is never overwritten.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use oxpi_ai::collection::{
    ApiKeyCredential, AuthFile, CredentialError, CredentialKind, Env, Models,
};
use oxpi_ai::{Credential, CredentialStore};

/// A file as pi's coding agent writes it (`JSON.stringify(data, null, 2)`), with an OAuth
/// entry holding fields oxpi does not know.
const PI_FILE: &str = r#"{
  "anthropic": {
    "type": "oauth",
    "refresh": "sk-ant-ort01-r",
    "access": "sk-ant-oat01-a",
    "expires": 1767225600000,
    "scopes": [
      "user:inference"
    ]
  },
  "openai": {
    "type": "api_key",
    "key": "sk-openai"
  },
  "amazon-bedrock": {
    "type": "api_key",
    "env": {
      "AWS_PROFILE": "work"
    }
  }
}"#;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("oxpi-auth-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join("agent").join("auth.json")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn reads_what_pi_writes() {
    let dir = TempDir::new("read");
    write(&dir.file(), PI_FILE);
    let store = AuthFile::new(dir.file());
    assert_eq!(
        store.read("openai").unwrap(),
        Some(Credential::api_key("sk-openai"))
    );
    assert_eq!(
        store.read("amazon-bedrock").unwrap(),
        Some(Credential::ApiKey(
            ApiKeyCredential::new().with_env("AWS_PROFILE", "work")
        ))
    );
    let Some(Credential::OAuth(oauth)) = store.read("anthropic").unwrap() else {
        panic!("anthropic is an OAuth entry");
    };
    assert_eq!(
        (oauth.access.as_str(), oauth.expires),
        ("sk-ant-oat01-a", 1_767_225_600_000.0)
    );
    assert_eq!(oauth.extra["scopes"][0], "user:inference");
    assert_eq!(store.read("groq").unwrap(), None);
    assert_eq!(
        store.list().unwrap(),
        [
            ("anthropic".to_string(), CredentialKind::OAuth),
            ("openai".to_string(), CredentialKind::ApiKey),
            ("amazon-bedrock".to_string(), CredentialKind::ApiKey),
        ]
    );
    // A missing file is an empty store, not an error.
    assert_eq!(
        AuthFile::new(dir.0.join("none.json"))
            .read("openai")
            .unwrap(),
        None
    );

    // The collection reads keys from it; the stored AWS profile configures Bedrock.
    let models = Models::builder()
        .credentials(AuthFile::new(dir.file()))
        .env(Env::from_pairs([("OPENAI_API_KEY", "sk-env")]))
        .build();
    assert_eq!(
        models.check_auth("openai").unwrap().unwrap().source,
        "stored credential"
    );
    assert_eq!(
        models.check_auth("amazon-bedrock").unwrap().unwrap().source,
        "AWS_PROFILE"
    );
}

/// What Node makes of `PI_FILE` with `groq` set and `openai` deleted, as pi's AuthStorage
/// writes it; `None` without Node.
fn node_rewrite() -> Option<String> {
    let script = format!(
        "const d = JSON.parse({PI_FILE:?}); d.groq = {{type: 'api_key', key: 'gsk-new'}}; delete d.openai; process.stdout.write(JSON.stringify(d, null, 2));"
    );
    let output = Command::new("node").arg("-e").arg(script).output().ok()?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(String::from_utf8(output.stdout).unwrap())
}

#[test]
fn writes_keep_other_entries_byte_for_byte_and_match_pis_format() {
    let dir = TempDir::new("write");
    write(&dir.file(), PI_FILE);
    let store = AuthFile::new(dir.file());
    let stored = store
        .modify("groq", &mut |current| {
            assert_eq!(current, None);
            Some(Credential::api_key("gsk-new"))
        })
        .unwrap();
    assert_eq!(stored, Some(Credential::api_key("gsk-new")));
    store.delete("openai").unwrap();
    let text = std::fs::read_to_string(dir.file()).unwrap();
    let expected = PI_FILE
        .replace(
            "  \"openai\": {\n    \"type\": \"api_key\",\n    \"key\": \"sk-openai\"\n  },\n",
            "",
        )
        .replace(
            "\n}",
            ",\n  \"groq\": {\n    \"type\": \"api_key\",\n    \"key\": \"gsk-new\"\n  }\n}",
        );
    let expected = expected.replace("}\n  }\n},\n  \"groq\"", "}\n  },\n  \"groq\"");
    match node_rewrite() {
        Some(node) => assert_eq!(text, node, "byte for byte what pi writes"),
        None => {
            eprintln!("node not found: compared with the expected text only");
            assert_eq!(text, expected);
        }
    }
    // A change that returns nothing writes nothing.
    let before = std::fs::metadata(dir.file()).unwrap().modified().unwrap();
    let current = store.modify("groq", &mut |_| None).unwrap();
    assert_eq!(current, Some(Credential::api_key("gsk-new")));
    assert_eq!(
        std::fs::metadata(dir.file()).unwrap().modified().unwrap(),
        before
    );
}

#[cfg(unix)]
#[test]
fn a_new_file_is_private_an_existing_one_keeps_its_mode_and_no_temporary_file_stays() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("mode");
    let store = AuthFile::new(dir.file());
    store
        .modify("groq", &mut |_| Some(Credential::api_key("gsk")))
        .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.file()), 0o600);
    assert_eq!(mode(dir.file().parent().unwrap()), 0o700);
    std::fs::set_permissions(dir.file(), std::fs::Permissions::from_mode(0o640)).unwrap();
    store
        .modify("xai", &mut |_| Some(Credential::api_key("xai")))
        .unwrap();
    assert_eq!(mode(&dir.file()), 0o640);
    let names: Vec<String> = std::fs::read_dir(dir.file().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["auth.json"], "no temporary file or lock is left");
}

#[cfg(unix)]
#[test]
fn a_symlinked_file_stays_a_link() {
    let dir = TempDir::new("link");
    let real = dir.0.join("dotfiles").join("auth.json");
    write(&real, PI_FILE);
    std::fs::create_dir_all(dir.file().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, dir.file()).unwrap();
    AuthFile::new(dir.file())
        .modify("groq", &mut |_| Some(Credential::api_key("gsk")))
        .unwrap();
    let link = std::fs::symlink_metadata(dir.file()).unwrap();
    assert!(link.file_type().is_symlink(), "still a link");
    let written = AuthFile::new(&real);
    assert_eq!(
        written.read("groq").unwrap(),
        Some(Credential::api_key("gsk"))
    );
    assert_eq!(written.list().unwrap().len(), 4);
}

#[test]
fn a_broken_file_is_a_clear_error_and_is_never_overwritten() {
    let dir = TempDir::new("broken");
    for (text, needle) in [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object of credentials"),
        (
            r#"{"groq": {"type": "api_key", "key": 5}}"#,
            "provider \"groq\"",
        ),
        (
            r#"{"x": {"type": "oauth", "access": "a"}}"#,
            "provider \"x\"",
        ),
        (r#"{"y": {"type": "magic"}}"#, "provider \"y\""),
    ] {
        write(&dir.file(), text);
        let store = AuthFile::new(dir.file());
        let error = store.read("groq").unwrap_err();
        assert!(
            matches!(error, CredentialError::Invalid { .. }),
            "{error:?}"
        );
        let shown = error.to_string();
        assert!(shown.contains(needle), "{shown}");
        assert!(shown.contains("auth.json"), "{shown}");
        assert!(store
            .modify("groq", &mut |_| Some(Credential::api_key("k")))
            .is_err());
        assert_eq!(
            std::fs::read_to_string(dir.file()).unwrap(),
            text,
            "left as it was"
        );
    }
}

#[test]
fn a_lock_held_by_another_process_is_waited_for_and_a_stale_one_taken_over() {
    let dir = TempDir::new("lock");
    write(&dir.file(), "{}");
    let lock = dir.file().with_file_name("auth.json.lock");
    std::fs::create_dir(&lock).unwrap();
    let holder = {
        let lock = lock.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            std::fs::remove_dir(lock).unwrap();
        })
    };
    let started = Instant::now();
    AuthFile::new(dir.file())
        .modify("groq", &mut |_| Some(Credential::api_key("gsk")))
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "it waited for the holder"
    );
    holder.join().unwrap();

    // A lock directory a dead process left a minute ago is taken over.
    std::fs::create_dir(&lock).unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    std::fs::File::open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    AuthFile::new(dir.file())
        .modify("xai", &mut |_| Some(Credential::api_key("xai")))
        .unwrap();
    assert!(!lock.exists());
    assert_eq!(AuthFile::new(dir.file()).list().unwrap().len(), 2);
}

#[test]
fn concurrent_writers_lose_nothing() {
    let dir = TempDir::new("concurrent");
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let path = dir.file();
            std::thread::spawn(move || {
                // A store per thread, as separate processes would have.
                let store = AuthFile::new(path);
                for j in 0..5 {
                    store
                        .modify(&format!("p{i}-{j}"), &mut |_| {
                            Some(Credential::api_key(format!("k{i}{j}")))
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let store = AuthFile::new(dir.file());
    assert_eq!(store.list().unwrap().len(), 40);
    assert_eq!(
        store.read("p7-4").unwrap(),
        Some(Credential::api_key("k74"))
    );
}

#[test]
fn the_default_path_is_pis() {
    let env = Env::from_pairs([("HOME", "/home/ada")]);
    assert_eq!(
        AuthFile::default_path(&env),
        Some(PathBuf::from("/home/ada/.pi/agent/auth.json"))
    );
    let env = Env::from_pairs([
        ("HOME", "/home/ada"),
        ("PI_CODING_AGENT_DIR", "~/agents/pi"),
    ]);
    assert_eq!(
        AuthFile::default_path(&env),
        Some(PathBuf::from("/home/ada/agents/pi/auth.json"))
    );
    assert_eq!(
        AuthFile::default_path(&Env::from_pairs::<&str, &str>([])),
        None
    );
}
