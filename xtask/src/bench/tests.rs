//! Tests of the bench's options, plan, budget and round order.

use super::*;

fn argv(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

#[test]
fn parses_options() {
    let o = Options::parse(argv("--quick --runs 3 --no-node --only=tool")).unwrap();
    assert!(o.quick && o.no_node);
    assert_eq!(o.runs, Some(3));
    assert_eq!(o.only.as_deref(), Some("tool"));
    assert!(Options::parse(argv("--runs 0")).is_err());
    assert!(Options::parse(argv("--frob")).is_err());
}

#[test]
fn plans_the_issue_workloads() {
    let root = Path::new("/r");
    let full = Plan::new(root, Path::new("/t"), &Options::default());
    let labels: Vec<String> = full.workloads.iter().map(Workload::label).collect();
    assert_eq!(
        labels,
        [
            "start-up (`--version`)",
            "one `-p` answer (2 KB reply)",
            "RPC: 1,000 get_state round trips, one CPU",
            "RPC: 1,000 get_state round trips, two CPUs",
            "1,000 agents, one answer each",
            "text 100 KB (OpenAI)",
            "tool call 10 KB (OpenAI)",
            "tool call 100 KB (OpenAI)",
            "tool call 300 KB (OpenAI)",
            "tool call 1 MB (OpenAI)",
            "tool call 10 KB (Anthropic)",
            "tool call 100 KB (Anthropic)",
            "tool call 300 KB (Anthropic)",
            "tool call 1 MB (Anthropic)",
            "agent loop, 500 turns",
            "read 2,000 lines of 1 GB",
            "grep literal, 20,000 files / 200 MB",
            "grep regex, 20,000 files / 200 MB",
            "find '**/*.rs', 20,000 files / 200 MB",
            "session open + context, 50,000 entries",
            "durable: 10 runs one at a time, 11 journaled steps each",
            "durable: 1,000 runs at once, 11 journaled steps each",
            "interactive: start to editor ready",
            "interactive: 100 KB reply streamed",
            "interactive: 100 KB reply after 5,000 lines",
        ]
    );
    assert_eq!(full.runs, 5);
    assert_eq!(full.out, Path::new("/r/BENCHMARKS.md"));
    let quick = Plan::new(
        root,
        Path::new("/t"),
        &Options {
            quick: true,
            ..Options::default()
        },
    );
    assert_eq!(quick.runs, 1);
    assert_eq!(quick.workloads.len(), 21);
    assert_eq!(
        quick.workloads.last().map(Workload::label).as_deref(),
        Some("interactive: 20 KB reply after 5,000 lines")
    );
    assert!(quick.out.ends_with("oxpi-bench/BENCHMARKS-quick.md"));
}

#[test]
fn node_rows_over_budget_are_skipped_with_an_estimate() {
    let plan = Plan {
        runs: 5,
        workloads: Vec::new(),
        node_budget_s: 150.0,
        out: PathBuf::new(),
    };
    let small = Workload::Stream {
        kind: "openai-tool",
        size: 100 * KIB,
    };
    let done = vec![Cell {
        workload: small,
        subject: Subject::PiAiTs,
        samples: vec![serde_json::json!({"wall_ms": 9000.0})],
        skipped: None,
        failed: None,
        runs: 5,
    }];
    let bigger = |size| Workload::Stream {
        kind: "openai-tool",
        size,
    };
    // 300 KB: 9 s × 9 = 81 s: one run fits.
    assert_eq!(
        node_budget(&done, &bigger(300 * KIB), &plan),
        Some((1, None))
    );
    // 1 MB: 9 s × 105 = 944 s: skipped.
    let (runs, why) = node_budget(&done, &bigger(1024 * KIB), &plan).unwrap();
    assert_eq!(runs, 0);
    assert!(why.unwrap().contains("quadratic: est. 944 s"));
    // The first size has nothing to go by.
    assert_eq!(node_budget(&done, &bigger(10 * KIB), &plan), None);
}

#[test]
fn each_round_orders_the_subjects_of_every_workload_anew() {
    let cell = |workload: &Workload, subject| Cell {
        workload: workload.clone(),
        subject,
        samples: Vec::new(),
        skipped: None,
        failed: None,
        runs: 5,
    };
    let stream = Workload::Stream {
        kind: "openai-tool",
        size: 10 * KIB,
    };
    let read = Workload::Read { bytes: 1 };
    let cells = vec![
        cell(&stream, Subject::Oxpi),
        cell(&stream, Subject::OxpiPartial),
        cell(&stream, Subject::StreamFloor),
        cell(&stream, Subject::PiAiRs),
        cell(&read, Subject::Oxpi),
    ];
    assert_eq!(round_order(&cells, 0), [0, 1, 3, 2, 4]);
    assert_eq!(round_order(&[], 1), Vec::<usize>::new());
    let mut before = std::collections::BTreeSet::new();
    for round in 1..=15 {
        let order = round_order(&cells, round);
        assert_eq!(order, round_order(&cells, round), "the same every time");
        // The stream's four subjects first, in some order, then the read's one.
        let mut block = order[..4].to_vec();
        block.sort_unstable();
        assert_eq!((block, order[4]), (vec![0, 1, 2, 3], 4), "round {round}");
        before.extend(order[..4].windows(2).map(|w| (w[0], w[1])));
    }
    // Within the 15 rounds of a short row, every subject ran right after every other one.
    assert_eq!(before.len(), 4 * 3, "{before:?}");
}

#[test]
fn the_shortest_runs_are_repeated_most() {
    let factors: Vec<usize> = [0.5, 9.99, 10.0, 49.9, 50.0, 900.0]
        .into_iter()
        .map(short_run_factor)
        .collect();
    assert_eq!(factors, [9, 9, 3, 3, 1, 1]);
}

#[test]
fn a_floor_and_oxpi_get_as_many_runs_as_oxpi_needs() {
    let stream = Workload::Stream {
        kind: "anthropic-tool",
        size: 300 * KIB,
    };
    let cell = |subject, ms: f64| Cell {
        workload: stream.clone(),
        subject,
        samples: vec![serde_json::json!({ "wall_ms": ms })],
        skipped: None,
        failed: None,
        runs: 5,
    };
    // The floor's first run was under 10 ms and oxpi's was not: both get oxpi's factor. The
    // port goes by its own time, and a Node subject keeps the runs its budget gave it.
    let mut cells = vec![
        cell(Subject::StreamFloor, 6.3),
        cell(Subject::Oxpi, 12.0),
        cell(Subject::OxpiPartial, 9.0),
        cell(Subject::PiAiRs, 440.0),
        cell(Subject::PiAiTs, 8.0),
    ];
    cells[4].runs = 2;
    settle_run_counts(&mut cells, 5);
    let runs: Vec<usize> = cells.iter().map(|c| c.runs).collect();
    assert_eq!(runs, [15, 15, 15, 5, 2]);
}

#[test]
fn williams_rows_balance_who_runs_right_before_whom() {
    for n in 1..=6 {
        let period = if n % 2 == 0 { n } else { 2 * n };
        let mut pairs = std::collections::BTreeMap::new();
        for round in 0..period {
            let row = williams_row(n, round);
            let mut sorted = row.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n {n} round {round}");
            for w in row.windows(2) {
                *pairs.entry((w[0], w[1])).or_insert(0) += 1;
            }
        }
        let each = if n % 2 == 0 { 1 } else { 2 };
        assert_eq!(pairs.len(), n * (n - 1), "n {n}: {pairs:?}");
        assert!(pairs.values().all(|&c| c == each), "n {n}: {pairs:?}");
    }
    assert_eq!(williams_row(0, 3), Vec::<usize>::new());
}
