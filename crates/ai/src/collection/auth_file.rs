//! [`AuthFile`]: a [`CredentialStore`] over pi's `auth.json` (`~/.pi/agent/auth.json`): an object
//! of provider id → credential. Entries oxpi does not change (OAuth tokens, providers it does not
//! know, fields it does not read) are written back byte for byte; a write goes to a temporary
//! file beside it and is renamed over it (never a half-written file), under the same lock pi
//! takes (a `auth.json.lock` directory, as `proper-lockfile` makes it), so oxpi and pi can share
//! the file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde_json::value::RawValue;

use super::credentials::{Credential, CredentialError, CredentialKind, CredentialStore};

/// How long a lock directory may stand before it counts as left behind by a dead process
/// (pi's `proper-lockfile` default for synchronous locks).
const STALE_LOCK: Duration = Duration::from_secs(10);
/// How long to wait for another holder of the lock.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// pi's `auth.json` as a credential store.
///
/// ```
/// use oxpi_ai::collection::{AuthFile, Credential, CredentialStore};
/// let dir = std::env::temp_dir().join(format!("oxpi-doc-auth-{}", std::process::id()));
/// let store = AuthFile::new(dir.join("auth.json"));
/// store.modify("groq", &mut |_| Some(Credential::api_key("gsk-1"))).unwrap();
/// assert_eq!(store.read("groq").unwrap(), Some(Credential::api_key("gsk-1")));
/// # std::fs::remove_dir_all(dir).unwrap();
/// ```
#[derive(Debug)]
pub struct AuthFile {
    path: PathBuf,
    /// Serializes this process's writers (the lock directory serializes processes).
    writing: Mutex<()>,
}

/// The file's entries in their order, each as the JSON text it had.
type Entries = Vec<(String, Box<RawValue>)>;

impl AuthFile {
    /// The store over the file at `path` (created on the first write).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            writing: Mutex::new(()),
        }
    }

    /// pi's default file: `$PI_CODING_AGENT_DIR/auth.json`, else `~/.pi/agent/auth.json`;
    /// `None` without a home directory.
    pub fn default_path(env: &super::Env) -> Option<PathBuf> {
        if let Some(dir) = env.get("PI_CODING_AGENT_DIR") {
            return Some(expand_home(&dir, env).join("auth.json"));
        }
        env.get("HOME")
            .map(|home| Path::new(&home).join(".pi/agent/auth.json"))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, what: &str, error: impl std::fmt::Display) -> CredentialError {
        CredentialError::Io {
            path: self.path.display().to_string(),
            reason: format!("{what}: {error}"),
        }
    }

    fn invalid(&self, reason: impl Into<String>) -> CredentialError {
        CredentialError::Invalid {
            path: self.path.display().to_string(),
            reason: reason.into(),
        }
    }

    /// The entries; none when the file does not exist.
    fn load(&self) -> Result<Entries, CredentialError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io("could not read it", e)),
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let object: Box<RawValue> =
            serde_json::from_str(text).map_err(|e| self.invalid(format!("not JSON ({e})")))?;
        let entries: EntryList = serde_json::from_str(object.get())
            .map_err(|e| self.invalid(format!("expected an object of credentials ({e})")))?;
        for (provider, raw) in &entries.0 {
            self.parse(provider, raw)?;
        }
        Ok(entries.0)
    }

    /// One entry as a credential, checked as pi checks it.
    fn parse(&self, provider: &str, raw: &RawValue) -> Result<Credential, CredentialError> {
        serde_json::from_str(raw.get()).map_err(|e| {
            self.invalid(format!(
                "the credential of provider \"{provider}\" is not an api_key or oauth entry ({e})"
            ))
        })
    }

    /// Runs `change` on the entries under both locks and writes what it returns.
    fn rewrite<T>(
        &self,
        change: impl FnOnce(&mut Entries) -> Result<(T, bool), CredentialError>,
    ) -> Result<T, CredentialError> {
        let _writing = self
            .writing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|e| self.io("could not create its directory", e))?;
        }
        let _lock = DirLock::acquire(&self.path).map_err(|e| self.io("could not lock it", e))?;
        let mut entries = self.load()?;
        let (result, changed) = change(&mut entries)?;
        if changed {
            self.write(&entries)?;
        }
        Ok(result)
    }

    /// Writes the entries as pi does (`JSON.stringify(data, null, 2)`): to a temporary file,
    /// flushed, then renamed over the file. A new file is private (0600); an existing file
    /// keeps its permissions.
    fn write(&self, entries: &Entries) -> Result<(), CredentialError> {
        let mut text = String::from("{");
        for (i, (provider, raw)) in entries.iter().enumerate() {
            text.push_str(if i == 0 { "\n  " } else { ",\n  " });
            text.push_str(
                &serde_json::to_string(provider).map_err(|e| self.invalid(e.to_string()))?,
            );
            text.push_str(": ");
            text.push_str(raw.get());
        }
        text.push_str(if entries.is_empty() { "}" } else { "\n}" });
        // A symlinked auth.json (a dotfiles checkout) stays a link: the file it points to is
        // the one replaced.
        let target = fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone());
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "auth.json".into());
        let temp = target.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let permissions = fs::metadata(&target).ok().map(|m| m.permissions());
        let result = (|| {
            let mut file = open_private(&temp)?;
            if let Some(permissions) = permissions {
                file.set_permissions(permissions)?;
            }
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            fs::rename(&temp, &target)
        })();
        if let Err(e) = result {
            let _ = fs::remove_file(&temp);
            return Err(self.io("could not write it", e));
        }
        Ok(())
    }
}

impl CredentialStore for AuthFile {
    fn read(&self, provider: &str) -> Result<Option<Credential>, CredentialError> {
        let entries = self.load()?;
        entries
            .iter()
            .find(|(id, _)| id == provider)
            .map(|(id, raw)| self.parse(id, raw))
            .transpose()
    }

    fn list(&self) -> Result<Vec<(String, CredentialKind)>, CredentialError> {
        self.load()?
            .iter()
            .map(|(id, raw)| Ok((id.clone(), self.parse(id, raw)?.kind())))
            .collect()
    }

    fn modify(
        &self,
        provider: &str,
        change: &mut dyn FnMut(Option<&Credential>) -> Option<Credential>,
    ) -> Result<Option<Credential>, CredentialError> {
        self.rewrite(|entries| {
            let index = entries.iter().position(|(id, _)| id == provider);
            let current = index
                .map(|i| self.parse(provider, &entries[i].1))
                .transpose()?;
            let Some(next) = change(current.as_ref()) else {
                return Ok((current, false));
            };
            let raw = pretty_entry(&next).map_err(|e| self.invalid(e))?;
            match index {
                Some(i) => entries[i].1 = raw,
                None => entries.push((provider.to_string(), raw)),
            }
            Ok((Some(next), true))
        })
    }

    fn delete(&self, provider: &str) -> Result<(), CredentialError> {
        self.rewrite(|entries| {
            let before = entries.len();
            entries.retain(|(id, _)| id != provider);
            Ok(((), entries.len() != before))
        })
    }
}

/// A credential as pi writes an entry: pretty-printed with two spaces, indented one level.
fn pretty_entry(credential: &Credential) -> Result<Box<RawValue>, String> {
    let text = serde_json::to_string_pretty(credential).map_err(|e| e.to_string())?;
    RawValue::from_string(text.replace('\n', "\n  ")).map_err(|e| e.to_string())
}

/// The entries of a JSON object, in order, each as its text.
struct EntryList(Entries);

impl<'de> serde::Deserialize<'de> for EntryList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = EntryList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<EntryList, A::Error> {
                let mut entries: Entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Box<RawValue>>()? {
                    // A repeated key: the last one wins, as in JavaScript.
                    entries.retain(|(id, _)| *id != key);
                    entries.push((key, value));
                }
                Ok(EntryList(entries))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

fn expand_home(dir: &str, env: &super::Env) -> PathBuf {
    match (dir.strip_prefix('~'), env.get("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest.trim_start_matches('/')),
        _ => PathBuf::from(dir),
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn open_private(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// pi's file lock: the directory `<file>.lock`, made atomically by `mkdir`, removed on release;
/// one older than [`STALE_LOCK`] was left by a process that died and is taken over.
struct DirLock(PathBuf);

impl DirLock {
    fn acquire(file: &Path) -> std::io::Result<Self> {
        let target = fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        let mut name = target.into_os_string();
        name.push(".lock");
        let lock = PathBuf::from(name);
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(10);
        loop {
            match fs::create_dir(&lock) {
                Ok(()) => return Ok(Self(lock)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE_LOCK);
                    if stale {
                        let _ = fs::remove_dir(&lock);
                        continue;
                    }
                    if Instant::now() >= deadline {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("{} is held by another process", lock.display()),
                        ));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}
