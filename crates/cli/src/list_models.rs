//! `--list-models [search]` as pi's: the models whose provider has a key (`auth.json`,
//! `models.json`, the environment), the built-in catalogue with `models.json` applied, filtered
//! by pi's fuzzy tokens (each word, split at spaces and `/`, a subsequence of
//! `provider id`), sorted by provider then id, in pi's columns.

use oxpi_ai::{InputKind, Model};

use crate::auth_file::AuthKeys;
use crate::config::models_json::CustomModels;

/// pi's `formatTokenCount`: 200000 → `200K`, 1000000 → `1M`, 1500 → `1.5K`.
fn tokens(count: u64) -> String {
    let scaled = |n: u64, unit: u64, suffix: &str| {
        if n % unit == 0 {
            format!("{}{suffix}", n / unit)
        } else {
            format!("{:.1}{suffix}", n as f64 / unit as f64)
        }
    };
    if count >= 1_000_000 {
        scaled(count, 1_000_000, "M")
    } else if count >= 1_000 {
        scaled(count, 1_000, "K")
    } else {
        count.to_string()
    }
}

/// Whether `query` is a subsequence of `text` (both lowercase).
fn subsequence(query: &str, text: &str) -> bool {
    let mut chars = text.chars();
    query.chars().all(|q| chars.any(|c| c == q))
}

/// pi's `fuzzyMatch` without the score: a subsequence, or with letters and digits swapped
/// (`gpt4` also matches `4gpt`).
fn fuzzy(token: &str, text: &str) -> bool {
    if subsequence(token, text) {
        return true;
    }
    let all = |s: &str, f: fn(&char) -> bool| !s.is_empty() && s.chars().all(|c| f(&c));
    let at = |i: usize| (&token[..i], &token[i..]);
    let swap = token
        .find(|c: char| c.is_ascii_digit())
        .filter(|&i| {
            let (a, b) = at(i);
            all(a, char::is_ascii_lowercase) && all(b, char::is_ascii_digit)
        })
        .or_else(|| {
            token.find(|c: char| c.is_ascii_lowercase()).filter(|&i| {
                let (a, b) = at(i);
                all(a, char::is_ascii_digit) && all(b, char::is_ascii_lowercase)
            })
        });
    swap.is_some_and(|i| subsequence(&format!("{}{}", &token[i..], &token[..i]), text))
}

/// The table (or pi's one-line answers) for `models` and `search`.
pub(crate) fn render(mut models: Vec<Model>, search: Option<&str>) -> String {
    if models.is_empty() {
        return "No models available: set a provider's API key (its environment variable, \
                ~/.pi/agent/auth.json, or models.json)\n"
            .to_string();
    }
    if let Some(query) = search.filter(|q| !q.trim().is_empty()) {
        let words: Vec<String> = query
            .split(|c: char| c.is_whitespace() || c == '/')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        models.retain(|m| {
            let text = format!("{} {}", m.provider, m.id).to_lowercase();
            words.iter().all(|w| fuzzy(w, &text))
        });
        if models.is_empty() {
            return format!("No models matching \"{query}\"\n");
        }
    }
    models.sort_by(|a, b| a.provider.cmp(&b.provider).then_with(|| a.id.cmp(&b.id)));
    let header = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ];
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
            [
                m.provider.clone(),
                m.id.clone(),
                tokens(m.context_window),
                tokens(m.max_tokens),
                yes(m.reasoning),
                yes(m.input.contains(&InputKind::Image)),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  "))
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// The models a run could use: `models.json`'s, then the catalogue's (changed by
/// `models.json`), those whose provider has a key.
pub(crate) fn available(
    custom: &CustomModels,
    auth: &AuthKeys,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<Model> {
    let has_key =
        |p: &str| crate::model_choice::has_credentials(p, auth, env) || custom.has_key(p, env);
    let mut out: Vec<Model> = custom
        .models
        .iter()
        .filter(|m| has_key(&m.provider))
        .cloned()
        .collect();
    for model in oxpi_ai::models::builtin_models() {
        if has_key(&model.provider) && custom.get(&model.provider, &model.id).is_none() {
            let mut model = model.clone();
            custom.adjust(&mut model);
            out.push(model);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(provider: &str, id: &str, window: u64, image: bool) -> Model {
        let mut m = Model::openai_compatible("http://h/v1", id);
        m.provider = provider.into();
        m.context_window = window;
        m.max_tokens = 16_384;
        m.input = if image {
            vec![InputKind::Text, InputKind::Image]
        } else {
            vec![InputKind::Text]
        };
        m
    }

    #[test]
    fn pi_s_table_filter_and_messages() {
        let models = vec![
            model("ollama", "qwen3", 128_000, false),
            model("anthropic", "claude-x", 1_500_000, true),
            model("ollama", "llama3.2", 999, false),
        ];
        assert_eq!(
            render(models.clone(), None),
            "provider   model     context  max-out  thinking  images\n\
             anthropic  claude-x  1.5M     16.4K    no        yes   \n\
             ollama     llama3.2  999      16.4K    no        no    \n\
             ollama     qwen3     128K     16.4K    no        no    \n"
        );
        let filtered = render(models.clone(), Some("oll/qw3"));
        assert_eq!(filtered.lines().count(), 2, "{filtered}");
        assert!(filtered
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("ollama    qwen3 "));
        assert_eq!(
            render(models.clone(), Some("3qwen")).lines().count(),
            2,
            "swapped"
        );
        assert_eq!(render(models, Some("zzz")), "No models matching \"zzz\"\n");
        assert!(render(Vec::new(), None).starts_with("No models available"));
    }
}
