//! Comparing one request of pi with oxpi's: method, path, query, headers (after the few
//! normalisations listed in docs/differences-from-pi.md) and a structural diff of the JSON body
//! that names each JSON path that differs.

use std::collections::BTreeMap;

use serde_json::Value;

use super::server::Recorded;

/// Headers left out of the comparison: they must differ between two HTTP stacks, or they are SDK
/// telemetry that says nothing about the request (see the docs' list).
const IGNORED_HEADERS: [&str; 10] = [
    "user-agent",
    "content-length",
    "host",
    "connection",
    "accept-encoding",
    "accept-language",
    "sec-fetch-mode",
    "amz-sdk-invocation-id",
    "amz-sdk-request",
    // The Google Gen AI SDK's name and version and Node's (`google-genai-sdk/… gl-node/…`).
    "x-goog-api-client",
];

/// Header name prefixes left out: SDK telemetry (`x-stainless-os`, `x-stainless-retry-count`, …).
const IGNORED_HEADER_PREFIXES: [&str; 2] = ["x-stainless-", "x-amz-user-agent"];

/// How a value differs at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// pi sends it, oxpi does not.
    MissingInOxpi,
    /// oxpi sends it, pi does not.
    ExtraInOxpi,
    /// Both send it with different values.
    Differs,
}

impl Kind {
    /// A short name for tables.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::MissingInOxpi => "missing in oxpi",
            Self::ExtraInOxpi => "extra in oxpi",
            Self::Differs => "differs",
        }
    }
}

/// One difference.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Difference {
    /// The concrete path: `body.messages[2].content`, `header.x-api-key`, `path`.
    pub(crate) path: String,
    /// The path with array indices as `[*]`: the difference's class.
    pub(crate) pattern: String,
    /// How it differs.
    pub(crate) kind: Kind,
    /// pi's value (`None` when pi has none).
    pub(crate) pi: Option<Value>,
    /// oxpi's value.
    pub(crate) oxpi: Option<Value>,
}

impl Difference {
    fn new(path: String, pi: Option<&Value>, oxpi: Option<&Value>) -> Self {
        let kind = match (pi, oxpi) {
            (Some(_), None) => Kind::MissingInOxpi,
            (None, Some(_)) => Kind::ExtraInOxpi,
            _ => Kind::Differs,
        };
        Self {
            pattern: pattern_of(&path),
            path,
            kind,
            pi: pi.cloned(),
            oxpi: oxpi.cloned(),
        }
    }

    /// One line: the path, then pi's and oxpi's values, each cut to a few dozen characters.
    pub(crate) fn sample(&self) -> String {
        let show = |v: &Option<Value>| match v {
            None => "(absent)".to_string(),
            Some(v) => cut(&v.to_string(), 80),
        };
        format!(
            "{}: pi {} / oxpi {}",
            self.path,
            show(&self.pi),
            show(&self.oxpi)
        )
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// `a[3].b[0]` → `a[*].b[*]`.
pub(crate) fn pattern_of(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[*]");
            }
            ']' if in_index => in_index = false,
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// True for a UUID (random request ids, which two runs never share).
fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// A header value as compared: UUIDs become `<uuid>`.
fn normalise_header_value(value: &str) -> String {
    if is_uuid(value) {
        "<uuid>".into()
    } else {
        value.to_string()
    }
}

/// True when `name` (lowercase) is left out of the comparison.
pub(crate) fn header_ignored(name: &str) -> bool {
    IGNORED_HEADERS.contains(&name) || IGNORED_HEADER_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The compared headers: lowercase names, ignored ones dropped, `accept: */*` (fetch's default)
/// dropped, repeated names joined with `, `.
pub(crate) fn normalise_headers(headers: &[(String, String)]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if header_ignored(&name) || (name == "accept" && value == "*/*") {
            continue;
        }
        let value = normalise_header_value(value);
        out.entry(name)
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

/// Every difference of `value` below `path`, appended to `out`. Numbers compare as numbers
/// (`1` equals `1.0`); strings that are both UUIDs compare equal.
pub(crate) fn diff_json(path: &str, pi: &Value, oxpi: &Value, out: &mut Vec<Difference>) {
    match (pi, oxpi) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, va) in a {
                let sub = format!("{path}.{key}");
                match b.get(key) {
                    Some(vb) => diff_json(&sub, va, vb, out),
                    None => out.push(Difference::new(sub, Some(va), None)),
                }
            }
            for (key, vb) in b {
                if !a.contains_key(key) {
                    out.push(Difference::new(format!("{path}.{key}"), None, Some(vb)));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, j) in align(a, b) {
                match (i.map(|i| &a[i]), j.map(|j| &b[j])) {
                    (Some(va), Some(vb)) => {
                        diff_json(&format!("{path}[{}]", i.unwrap_or(0)), va, vb, out)
                    }
                    (va, vb) => {
                        let index = i.or(j).unwrap_or(0);
                        out.push(Difference::new(format!("{path}[{index}]"), va, vb));
                    }
                }
            }
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => {}
        (Value::String(a), Value::String(b)) if is_uuid(a) && is_uuid(b) => {}
        (a, b) if a == b => {}
        (a, b) => out.push(Difference::new(path.to_string(), Some(a), Some(b))),
    }
}

/// What an array element is, for aligning two arrays: an object's `type` or `role`, else the
/// whole value.
fn align_key(value: &Value) -> String {
    match value {
        Value::Object(map) => map
            .get("type")
            .or_else(|| map.get("role"))
            .map(Value::to_string)
            .unwrap_or_else(|| "{}".into()),
        other => other.to_string(),
    }
}

/// Longest arrays aligned by [`align_key`]; longer ones are compared index by index.
const ALIGN_MAX: usize = 256;

/// Pairs of indices (pi's, oxpi's) to compare: equal lengths pair index by index; otherwise a
/// best alignment (equal elements first, then elements of the same kind) pairs them, so one
/// element more or less does not shift every later one. `None` on one side is an element only
/// the other has.
pub(crate) fn align(a: &[Value], b: &[Value]) -> Vec<(Option<usize>, Option<usize>)> {
    if a.len() == b.len() || a.len() > ALIGN_MAX || b.len() > ALIGN_MAX {
        return (0..a.len().max(b.len()))
            .map(|i| ((i < a.len()).then_some(i), (i < b.len()).then_some(i)))
            .collect();
    }
    let ka: Vec<String> = a.iter().map(align_key).collect();
    let kb: Vec<String> = b.iter().map(align_key).collect();
    // A pair scores 3 when the elements are equal, 1 when only their kinds are; `best[i][j]` is
    // the best total for a[i..] and b[j..].
    let weight = |i: usize, j: usize| match () {
        _ if a[i] == b[j] => 3,
        _ if ka[i] == kb[j] => 1,
        _ => 0,
    };
    let mut best = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            let w = weight(i, j);
            let pair = if w > 0 { best[i + 1][j + 1] + w } else { 0 };
            best[i][j] = pair.max(best[i + 1][j]).max(best[i][j + 1]);
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() {
            let w = weight(i, j);
            if w > 0 && best[i][j] == best[i + 1][j + 1] + w {
                out.push((Some(i), Some(j)));
                i += 1;
                j += 1;
                continue;
            }
        }
        if j < b.len() && (i == a.len() || best[i][j] == best[i][j + 1]) {
            out.push((None, Some(j)));
            j += 1;
        } else {
            out.push((Some(i), None));
            i += 1;
        }
    }
    out
}

/// The result of comparing one case's requests.
#[derive(Debug, Clone, Default)]
pub(crate) struct Comparison {
    /// Method, path and query equal.
    pub(crate) target_equal: bool,
    /// The compared headers equal.
    pub(crate) headers_equal: bool,
    /// The bodies equal as JSON.
    pub(crate) body_equal: bool,
    /// Every difference found.
    pub(crate) differences: Vec<Difference>,
}

fn body_json(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// Compares pi's request with oxpi's.
pub(crate) fn compare(pi: &Recorded, oxpi: &Recorded) -> Comparison {
    let mut differences = Vec::new();
    for (name, a, b) in [
        ("method", &pi.method, &oxpi.method),
        ("path", &pi.path, &oxpi.path),
        ("query", &pi.query, &oxpi.query),
    ] {
        if a != b {
            differences.push(Difference::new(
                name.to_string(),
                Some(&Value::String(a.clone())),
                Some(&Value::String(b.clone())),
            ));
        }
    }
    let target_equal = differences.is_empty();
    let to_json = |map: BTreeMap<String, String>| {
        Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        )
    };
    let headers_before = differences.len();
    diff_json(
        "header",
        &to_json(normalise_headers(&pi.headers)),
        &to_json(normalise_headers(&oxpi.headers)),
        &mut differences,
    );
    let headers_equal = differences.len() == headers_before;
    let body_before = differences.len();
    diff_json(
        "body",
        &body_json(&pi.body),
        &body_json(&oxpi.body),
        &mut differences,
    );
    let body_equal = differences.len() == body_before;
    Comparison {
        target_equal,
        headers_equal,
        body_equal,
        differences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn recorded(headers: &[(&str, &str)], body: Value) -> Recorded {
        Recorded {
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            query: String::new(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn names_each_differing_path_and_its_class() {
        let mut out = Vec::new();
        diff_json(
            "body",
            &json!({"messages": [{"role": "user"}, {"role": "assistant", "reasoning_content": "x"}], "n": 1}),
            &json!({"messages": [{"role": "user"}, {"role": "assistant"}], "n": 1.0, "store": false}),
            &mut out,
        );
        let paths: Vec<(&str, &str, Kind)> = out
            .iter()
            .map(|d| (d.path.as_str(), d.pattern.as_str(), d.kind))
            .collect();
        assert_eq!(
            paths,
            vec![
                (
                    "body.messages[1].reasoning_content",
                    "body.messages[*].reasoning_content",
                    Kind::MissingInOxpi
                ),
                ("body.store", "body.store", Kind::ExtraInOxpi),
            ]
        );
        assert_eq!(
            out[0].sample(),
            "body.messages[1].reasoning_content: pi \"x\" / oxpi (absent)"
        );
    }

    #[test]
    fn arrays_of_different_lengths_and_changed_values() {
        let mut out = Vec::new();
        diff_json("b", &json!([1, 2]), &json!([1, 3, 4]), &mut out);
        let got: Vec<(&str, Kind)> = out.iter().map(|d| (d.path.as_str(), d.kind)).collect();
        assert_eq!(
            got,
            vec![
                ("b[1]", Kind::ExtraInOxpi),
                ("b[2]", Kind::ExtraInOxpi),
                ("b[1]", Kind::MissingInOxpi)
            ]
        );
        out.clear();
        diff_json("b", &json!([1, 2]), &json!([1, 3]), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, Kind::Differs);
    }

    #[test]
    fn normalises_only_the_listed_headers() {
        let pi = recorded(
            &[
                ("User-Agent", "node"),
                ("content-length", "10"),
                ("x-stainless-os", "Linux"),
                (
                    "x-goog-api-client",
                    "google-genai-sdk/2.32.0 gl-node/v20.20.2",
                ),
                ("accept", "*/*"),
                ("sec-fetch-mode", "cors"),
                ("x-request-id", "0f8fad5b-d9cb-469f-a165-70867728950e"),
                ("authorization", "Bearer k"),
            ],
            json!({"a": 1}),
        );
        let oxpi = recorded(
            &[
                ("user-agent", "oxpi"),
                ("x-request-id", "7c9e6679-7425-40de-944b-e07fc1f90ae7"),
                ("authorization", "Bearer k"),
            ],
            json!({"a": 1}),
        );
        let same = compare(&pi, &oxpi);
        assert!(same.headers_equal && same.body_equal && same.target_equal);
        let oxpi = recorded(&[("x-api-key", "k")], json!({"a": 2}));
        let other = compare(&pi, &oxpi);
        assert!(!other.headers_equal && !other.body_equal);
        let paths: Vec<&str> = other.differences.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "header.authorization",
                "header.x-request-id",
                "header.x-api-key",
                "body.a"
            ]
        );
    }

    #[test]
    fn one_element_more_does_not_shift_the_rest() {
        let mut out = Vec::new();
        diff_json(
            "body.content",
            &json!([{"type": "text", "text": "a"}, {"type": "tool_use", "id": "1"}]),
            &json!([{"type": "text", "text": "t"}, {"type": "text", "text": "a"}, {"type": "tool_use", "id": "1"}]),
            &mut out,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].path, "body.content[0]");
        assert_eq!(out[0].kind, Kind::ExtraInOxpi);
    }

    #[test]
    fn patterns_drop_indices() {
        assert_eq!(pattern_of("body.a[12].b[0][3].c"), "body.a[*].b[*][*].c");
        assert_eq!(pattern_of("header.x"), "header.x");
    }
}
