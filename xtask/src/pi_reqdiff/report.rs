//! The results of `pi-reqdiff`: per case, per API and provider, the difference classes, the
//! printed tables and the JSON report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::cases::Case;
use super::diff::{Comparison, Difference, Kind};
use super::explained::{self, Rule, Status};

/// What one case gave.
#[derive(Debug, Clone)]
pub(crate) struct CaseResult {
    pub(crate) id: String,
    pub(crate) provider: String,
    pub(crate) api: String,
    pub(crate) model: String,
    pub(crate) label: String,
    pub(crate) pi_requests: usize,
    pub(crate) oxpi_requests: usize,
    pub(crate) pi_error: Option<String>,
    pub(crate) oxpi_error: Option<String>,
    pub(crate) comparison: Comparison,
    /// Each difference with the rule that explains it, if one does.
    pub(crate) explained: Vec<Option<(Status, String)>>,
}

impl CaseResult {
    /// A result from the two sides' requests (`comparison` empty when one side sent none).
    pub(crate) fn new(
        case: &Case,
        pi_requests: usize,
        oxpi_requests: usize,
        pi_error: Option<String>,
        oxpi_error: Option<String>,
        comparison: Option<Comparison>,
        rules: &[Rule],
    ) -> Self {
        let mut comparison = comparison.unwrap_or_default();
        if pi_requests != 1 || oxpi_requests != 1 {
            let text = |n: usize, error: &Option<String>| {
                Value::String(format!(
                    "{n} requests{}",
                    error
                        .as_ref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ))
            };
            let kind = match (pi_requests, oxpi_requests) {
                (_, 0) => Kind::MissingInOxpi,
                (0, _) => Kind::ExtraInOxpi,
                _ => Kind::Differs,
            };
            comparison.differences.insert(
                0,
                Difference {
                    path: "request".into(),
                    pattern: "request".into(),
                    kind,
                    pi: Some(text(pi_requests, &pi_error)),
                    oxpi: Some(text(oxpi_requests, &oxpi_error)),
                },
            );
        }
        let api = case.model.api.as_str().to_string();
        let explained = comparison
            .differences
            .iter()
            .map(|d| {
                explained::find(
                    rules,
                    &case.model.provider,
                    &api,
                    &case.model.id,
                    &d.pattern,
                )
                .map(|r| (r.status, r.reason.clone()))
            })
            .collect();
        Self {
            id: case.id.clone(),
            provider: case.model.provider.clone(),
            api,
            model: case.model.id.clone(),
            label: case.label(),
            pi_requests,
            oxpi_requests,
            pi_error,
            oxpi_error,
            comparison,
            explained,
        }
    }

    fn compared(&self) -> bool {
        self.pi_requests == 1 && self.oxpi_requests == 1
    }

    fn body_equal(&self) -> bool {
        self.compared() && self.comparison.body_equal
    }

    fn headers_equal(&self) -> bool {
        self.compared() && self.comparison.headers_equal && self.comparison.target_equal
    }

    fn unexplained(&self) -> usize {
        self.explained.iter().filter(|e| e.is_none()).count()
    }
}

#[derive(Debug, Default, Clone)]
struct Row {
    cases: usize,
    compared: usize,
    bodies_equal: usize,
    headers_equal: usize,
    unexplained_cases: usize,
}

impl Row {
    fn add(&mut self, r: &CaseResult) {
        self.cases += 1;
        self.compared += usize::from(r.compared());
        self.bodies_equal += usize::from(r.body_equal());
        self.headers_equal += usize::from(r.headers_equal());
        self.unexplained_cases += usize::from(r.unexplained() > 0);
    }

    fn to_json(&self) -> Value {
        json!({"cases": self.cases, "compared": self.compared, "bodiesEqual": self.bodies_equal,
               "headersEqual": self.headers_equal, "casesWithUnexplained": self.unexplained_cases})
    }
}

/// A difference class: a path pattern and a kind, over all cases.
#[derive(Debug, Clone)]
struct Class {
    pattern: String,
    kind: Kind,
    cases: usize,
    apis: BTreeSet<String>,
    providers: BTreeSet<String>,
    statuses: BTreeSet<Status>,
    unexplained: usize,
    sample: String,
}

/// The segments that start a tool's JSON Schema: every difference inside one schema is one class.
const SCHEMA_KEYS: [&str; 4] = [
    ".parameters",
    ".input_schema",
    ".inputSchema",
    ".parametersJsonSchema",
];

/// A difference's class path: its pattern, cut after a tool schema's root.
pub(crate) fn class_path(pattern: &str) -> &str {
    SCHEMA_KEYS
        .iter()
        .filter_map(|key| {
            pattern
                .find(key)
                .map(|at| at + key.len())
                .filter(|end| pattern[*end..].is_empty() || pattern[*end..].starts_with(['.', '[']))
        })
        .min()
        .map_or(pattern, |end| &pattern[..end])
}

impl Class {
    /// `UNEXPLAINED` when some case of the class is not covered, else its rows' statuses
    /// (`open`, `deliberate`, `deliberate+open`).
    fn status(&self) -> String {
        if self.unexplained > 0 {
            return "UNEXPLAINED".into();
        }
        self.statuses
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// Everything a run found.
pub(crate) struct Report {
    pub(crate) results: Vec<CaseResult>,
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Report {
    fn rows(&self, key: impl Fn(&CaseResult) -> &str) -> BTreeMap<String, Row> {
        let mut rows: BTreeMap<String, Row> = BTreeMap::new();
        for r in &self.results {
            rows.entry(key(r).to_string()).or_default().add(r);
        }
        rows
    }

    fn total(&self) -> Row {
        let mut row = Row::default();
        self.results.iter().for_each(|r| row.add(r));
        row
    }

    fn classes(&self) -> Vec<Class> {
        let mut classes: BTreeMap<(String, Kind), Class> = BTreeMap::new();
        for r in &self.results {
            let mut seen = BTreeSet::new();
            for (d, explained) in r.comparison.differences.iter().zip(&r.explained) {
                let path = class_path(&d.pattern).to_string();
                let key = (path.clone(), d.kind);
                let class = classes.entry(key.clone()).or_insert_with(|| Class {
                    pattern: path,
                    kind: d.kind,
                    cases: 0,
                    apis: BTreeSet::new(),
                    providers: BTreeSet::new(),
                    statuses: BTreeSet::new(),
                    unexplained: 0,
                    sample: format!("{} — {}", r.label, d.sample()),
                });
                if seen.insert(key) {
                    class.cases += 1;
                    class.unexplained += usize::from(explained.is_none());
                }
                class.apis.insert(r.api.clone());
                class.providers.insert(r.provider.clone());
                if let Some((status, _)) = explained {
                    class.statuses.insert(*status);
                }
            }
        }
        let mut list: Vec<Class> = classes.into_values().collect();
        list.sort_by(|a, b| b.cases.cmp(&a.cases).then(a.pattern.cmp(&b.pattern)));
        list
    }

    /// The rules of `rules` that cover no difference of this run (fixed, or a typo in a row),
    /// among those whose scope takes a case both sides sent a request for (a Bedrock row is not
    /// reported by a build without Bedrock).
    pub(crate) fn unused<'a>(&self, rules: &'a [Rule]) -> Vec<&'a Rule> {
        let seen: BTreeSet<(&str, &str, &str, &str)> = self
            .results
            .iter()
            .flat_map(|r| {
                r.comparison.differences.iter().map(move |d| {
                    (
                        r.provider.as_str(),
                        r.api.as_str(),
                        r.model.as_str(),
                        d.pattern.as_str(),
                    )
                })
            })
            .collect();
        let compared: BTreeSet<(&str, &str, &str)> = self
            .results
            .iter()
            .filter(|r| r.compared())
            .map(|r| (r.provider.as_str(), r.api.as_str(), r.model.as_str()))
            .collect();
        rules
            .iter()
            // A `request` row is about the build (Bedrock without its feature), not a fix: a
            // build that sends those requests must not call it unused.
            .filter(|rule| rule.path != "request")
            .filter(|rule| compared.iter().any(|(p, a, m)| rule.in_scope(p, a, m)))
            .filter(|rule| {
                !seen
                    .iter()
                    .any(|(p, a, m, path)| rule.covers(p, a, m, path))
            })
            .collect()
    }

    /// Cases with a difference no rule explains.
    pub(crate) fn unexplained_cases(&self) -> usize {
        self.results.iter().filter(|r| r.unexplained() > 0).count()
    }

    /// The printed tables: per API, per provider, the overall line and the top classes.
    /// Percentages are of the cases both sides sent a request for ("compared"): a case only
    /// pi sends (a ChatGPT login oxpi does not have, Bedrock in a build without it) has no oxpi
    /// body to compare; the case count keeps them visible.
    pub(crate) fn text(&self, top: usize) -> String {
        let mut out = String::new();
        let table = |out: &mut String, title: &str, rows: &BTreeMap<String, Row>| {
            let _ = writeln!(
                out,
                "| {title} | cases | compared | bodies equal | headers equal | unexplained |"
            );
            let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
            for (name, row) in rows {
                let _ = writeln!(
                    out,
                    "| {name} | {} | {} | {} ({:.0}%) | {} ({:.0}%) | {} |",
                    row.cases,
                    row.compared,
                    row.bodies_equal,
                    percent(row.bodies_equal, row.compared),
                    row.headers_equal,
                    percent(row.headers_equal, row.compared),
                    row.unexplained_cases
                );
            }
            out.push('\n');
        };
        table(&mut out, "API", &self.rows(|r| &r.api));
        table(&mut out, "provider", &self.rows(|r| &r.provider));
        let total = self.total();
        let _ = writeln!(
            out,
            "{} cases, {} compared request for request ({} sent by one side only): {} bodies equal ({:.1}% of the compared, {:.1}% of all cases), {} headers equal ({:.1}% of the compared), {} cases with a difference docs/differences-from-pi.md does not explain.\n",
            total.cases,
            total.compared,
            total.cases - total.compared,
            total.bodies_equal,
            percent(total.bodies_equal, total.compared),
            percent(total.bodies_equal, total.cases),
            total.headers_equal,
            percent(total.headers_equal, total.compared),
            total.unexplained_cases
        );
        let classes = self.classes();
        let _ = writeln!(out, "Top difference classes ({} in all):\n", classes.len());
        let _ = writeln!(out, "| cases | path | kind | status | APIs | sample |");
        let _ = writeln!(out, "|---:|---|---|---|---|---|");
        for class in classes.iter().take(top) {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} |",
                class.cases,
                class.pattern,
                class.kind.as_str(),
                class.status(),
                class.apis.iter().cloned().collect::<Vec<_>>().join(", "),
                class.sample.replace('|', "\\|")
            );
        }
        out
    }

    /// The JSON report: totals, rows, every class and every case with its differences.
    pub(crate) fn json(&self) -> Value {
        let total = self.total();
        let rows = |rows: BTreeMap<String, Row>| {
            Value::Object(rows.into_iter().map(|(k, v)| (k, v.to_json())).collect())
        };
        let short = |v: &Option<Value>| match v {
            None => Value::Null,
            Some(v) => {
                let text = v.to_string();
                if text.len() > 400 {
                    Value::String(format!("{}…", text.chars().take(400).collect::<String>()))
                } else {
                    v.clone()
                }
            }
        };
        json!({
            "pi": "@earendil-works/pi-ai 1.6.0 (compat streamSimple)",
            "total": total.to_json(),
            // Of the cases both sides sent a request for; of all cases in the second.
            "bodiesEqualPercent": percent(total.bodies_equal, total.compared),
            "bodiesEqualPercentOfAllCases": percent(total.bodies_equal, total.cases),
            "byApi": rows(self.rows(|r| &r.api)),
            "byProvider": rows(self.rows(|r| &r.provider)),
            "classes": self.classes().iter().map(|c| json!({
                "path": c.pattern, "kind": c.kind.as_str(), "cases": c.cases,
                "unexplainedCases": c.unexplained,
                "status": c.status(),
                "apis": c.apis, "providers": c.providers, "sample": c.sample,
            })).collect::<Vec<_>>(),
            "cases": self.results.iter().map(|r| json!({
                "id": r.id, "provider": r.provider, "api": r.api, "model": r.model, "case": r.label,
                "piRequests": r.pi_requests, "oxpiRequests": r.oxpi_requests,
                "piError": r.pi_error, "oxpiError": r.oxpi_error,
                "bodyEqual": r.body_equal(), "headersEqual": r.headers_equal(),
                "differences": r.comparison.differences.iter().zip(&r.explained).map(|(d, e)| json!({
                    "path": d.path, "kind": d.kind.as_str(), "pi": short(&d.pi), "oxpi": short(&d.oxpi),
                    "status": e.as_ref().map_or("unexplained", |e| e.0.as_str()),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pi_reqdiff::{cases, diff, explained, server::Recorded};

    fn recorded(body: Value) -> Recorded {
        Recorded {
            method: "POST".into(),
            path: "/chat/completions".into(),
            query: String::new(),
            headers: vec![("authorization".into(), "Bearer k".into())],
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn a_schema_is_one_class() {
        assert_eq!(
            class_path("body.tools[*].parameters.properties.a.type"),
            "body.tools[*].parameters"
        );
        assert_eq!(
            class_path("body.tools[*].input_schema"),
            "body.tools[*].input_schema"
        );
        assert_eq!(
            class_path("body.tools[*].parametersX"),
            "body.tools[*].parametersX"
        );
        assert_eq!(class_path("body.max_tokens"), "body.max_tokens");
    }

    #[test]
    fn a_difference_no_row_explains_fails_the_gate() {
        let model = oxpi_ai::models::get_model("deepseek", "deepseek-v4-flash")
            .or_else(|| oxpi_ai::models::models("deepseek").into_iter().next())
            .unwrap();
        let case = cases::build(&[model]).remove(0);
        let comparison = diff::compare(
            &recorded(json!({"messages": [{"role": "assistant", "reasoning_content": "r"}]})),
            &recorded(json!({"messages": [{"role": "assistant"}]})),
        );
        let open = explained::parse(
            "<!-- pi-reqdiff:open:start -->\n| `deepseek/*` | `body.messages[*].reasoning_content` | not yet |\n<!-- pi-reqdiff:open:end -->",
        )
        .unwrap();
        let bare = CaseResult::new(&case, 1, 1, None, None, Some(comparison.clone()), &[]);
        let covered = CaseResult::new(&case, 1, 1, None, None, Some(comparison), &open);
        let missing = CaseResult::new(&case, 1, 0, None, Some("no provider".into()), None, &open);
        let report = Report {
            results: vec![bare, covered, missing],
        };
        assert_eq!(report.unexplained_cases(), 2);
        let text = report.text(10);
        assert!(
            text.contains("| deepseek | 3 | 2 | 0 (0%) | 2 (100%) | 2 |"),
            "{text}"
        );
        assert!(
            text.contains("3 cases, 2 compared request for request (1 sent by one side only)"),
            "{text}"
        );
        assert!(
            text.contains("`body.messages[*].reasoning_content` | missing in oxpi | UNEXPLAINED"),
            "{text}"
        );
        assert!(
            text.contains("`request` | missing in oxpi | UNEXPLAINED"),
            "{text}"
        );
        let rows = explained::parse(
            "<!-- pi-reqdiff:open:start -->\n| `deepseek/*` | `body.messages[*].reasoning_content` | a |\n| `deepseek/*` | `body.store` | b |\n| `mistral/*` | `body.store` | c |\n| `deepseek/*` | `request` | d |\n<!-- pi-reqdiff:open:end -->",
        )
        .unwrap();
        let unused: Vec<&str> = report
            .unused(&rows)
            .iter()
            .map(|r| r.reason.as_str())
            .collect();
        assert_eq!(unused, vec!["b"]);
        // Every case compared (a build that sends them): the `request` row is still not unused.
        let compared_only = Report {
            results: vec![report.results[1].clone()],
        };
        let unused: Vec<&str> = compared_only
            .unused(&rows)
            .iter()
            .map(|r| r.reason.as_str())
            .collect();
        assert_eq!(unused, vec!["b"]);
        let json = report.json();
        assert_eq!(json["total"]["cases"], 3);
        assert_eq!(json["cases"][1]["differences"][0]["status"], "open");
    }
}
