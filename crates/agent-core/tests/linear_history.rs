//! The work of a turn does not grow with the history: a run of twice the turns makes about twice
//! the allocations (counted by this test binary's allocator, so the check does not depend on
//! timing). Appending a tool result while the hooks' context still shared the history once
//! copied all of it per result (`Arc::make_mut`), making a run quadratic.

mod common;

use std::alloc::System;

use common::{call, faux, options};
use oxpi_agent_core::oxpi_ai::faux::FauxReply;
use oxpi_agent_core::prelude::*;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "oxpi_agent_core::serde")]
#[schemars(crate = "oxpi_agent_core::schemars")]
struct Turn {
    /// The turn number.
    #[allow(dead_code)]
    turn: u64,
}

/// The allocations of one run of `turns` turns, each one tool call, then a text reply.
async fn allocations_of(turns: u64) -> usize {
    let faux = faux();
    for turn in 1..=turns {
        faux.push(call(
            &format!("call_{turn}"),
            "noop",
            serde_json::json!({ "turn": turn }),
        ));
    }
    faux.push(FauxReply::text("done"));
    let noop = AgentToolHandle::from_fn("noop", "Does nothing", |_: Turn| async move {
        Ok::<_, String>("ok")
    })
    .expect("schema");
    let agent = Agent::new(
        options(&faux)
            .with_tool(noop)
            .with_max_turns(usize::try_from(turns).expect("turns") + 10),
    );
    let region = Region::new(GLOBAL);
    agent.prompt("Go.").await.expect("the run");
    let made = region.change().allocations;
    assert_eq!(agent.messages().len() as u64, 2 * turns + 2);
    made
}

#[tokio::test(flavor = "current_thread")]
async fn twice_the_turns_make_about_twice_the_allocations() {
    let short = allocations_of(200).await;
    let long = allocations_of(400).await;
    let ratio = long as f64 / short as f64;
    // Linear: 2×; a copy of the history per turn: about 4× (3.67× before the fix).
    assert!(
        ratio < 2.5,
        "{short} allocations for 200 turns, {long} for 400: {ratio:.2}×"
    );
}
