//! The buffer policy conformance suite (`buffer.json`). Each policy is driven directly through
//! the tiered buffer's `Policy` trait, as the host drives it, with tiers, a clock and a state the
//! case controls: the contract every buffer policy in plugins/ keeps (and the template that
//! `sluice plugins new --kind buffer` writes in Rust, Python and JavaScript, built with
//! `sluice plugins build` as an author would), then the behaviour of the template,
//! `priority_shed`, `dedup` and `tenant_quota`. A failure names the suite, the case, the
//! language and the step.
//!
//! [`suite`] reads `buffer.json`, [`expect`] says what a write expects and how a reply differs,
//! and [`runner`] drives a policy through the steps, the suites and the contract.

mod expect;
mod runner;
mod suite;

use runner::{check, keeps_the_contract, run_suites};
use suite::{Options, Subject, list, load, options};

#[test]
fn every_buffer_policy_in_plugins_and_the_templates_keep_the_contract() {
    let (contract, _) = load();
    let mut failures = Vec::new();
    for p in list(&contract["policies"]) {
        let subject = Subject::parse(p);
        match keeps_the_contract(&subject, &options(&p["options"]), &contract) {
            Ok(n) => eprintln!("buffer contract: {subject} keeps it ({n} calls checked)"),
            Err(why) => failures.push(why),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_buffer_template_in_rust_python_and_javascript_agrees_with_the_suite() {
    run_suites(&["template"]);
}

#[test]
fn priority_shed_agrees_with_the_suite() {
    run_suites(&["priority_shed"]);
}

#[test]
fn dedup_and_tenant_quota_agree_with_their_suites() {
    run_suites(&["dedup", "tenant_quota"]);
}

#[test]
fn a_buffer_policy_that_fails_a_suite_is_reported_with_the_suite_case_language_and_step() {
    // passthrough_buffer places every record in tier 0 and takes no options: priority_shed's
    // second case (two lanes) expects tier 1 for the low priorities at its first step.
    let (_, mut suites) = load();
    let mut suite = suites.swap_remove(
        suites
            .iter()
            .position(|s| s.name == "priority_shed")
            .unwrap(),
    );
    for case in &mut suite.cases {
        case.options.clear();
        case.headers = None;
    }
    suite.refused.clear();
    let subject = Subject::Plugin {
        name: "passthrough_buffer".into(),
        lang: "rust".into(),
    };
    let err = check(&suite, &subject).unwrap_err();
    assert!(
        err.starts_with(
            "suite `priority_shed`, case `two lanes: min_priority and above to tier 0, below to tier 1`, rust (plugin `passthrough_buffer`): step 1 "
        ),
        "{err}"
    );
    assert!(
        err.ends_with("expected [tier 0, tier 1, tier 0, tier 1, tier 1], got [tier 0, tier 0, tier 0, tier 0, tier 0]"),
        "{err}"
    );
}

#[test]
fn a_buffer_policy_that_breaks_the_contract_is_reported_with_its_tiers_and_the_write() {
    // hostile_buffer places a record asking for `nowhere` in tier 9, and accepts any option.
    let (mut contract, _) = load();
    contract["records"] = serde_json::json!([{ "headers": [["X-Hostile", "nowhere"]] }]);
    let subject = Subject::Plugin {
        name: "hostile_buffer".into(),
        lang: "rust".into(),
    };
    let err = keeps_the_contract(&subject, &Options::new(), &contract).unwrap_err();
    assert_eq!(
        err,
        "contract, rust (plugin `hostile_buffer`), tiers [\"kafka\"]: a write of 1: tier 9"
    );
    contract["records"] = serde_json::json!([{ "headers": [["X-Hostile", "no"]] }]);
    let err = keeps_the_contract(&subject, &Options::new(), &contract).unwrap_err();
    assert_eq!(
        err,
        "contract, rust (plugin `hostile_buffer`): the unknown option `no_such_option` was accepted"
    );
}
