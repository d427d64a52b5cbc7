//! The README's first Rust example is `examples/readme.rs` (which `cargo test` compiles):
//! this test fails when the two drift apart.

#![allow(clippy::unwrap_used)]

#[test]
fn the_readmes_first_rust_example_is_the_compiled_example() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let start = readme
        .find("```rust")
        .expect("the README has a Rust example");
    let body = &readme[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let block = &body[..body.find("```").unwrap()];
    let example = std::fs::read_to_string(format!("{root}/crates/ai/examples/readme.rs")).unwrap();
    // The example without its leading `//!` lines and the blank line after them.
    let code: String = example
        .lines()
        .skip_while(|line| line.starts_with("//!") || line.is_empty())
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(
        block, code,
        "README.md's first ```rust block must equal examples/readme.rs"
    );
    assert!(block.contains("Models::with_pi_auth()"));
}
