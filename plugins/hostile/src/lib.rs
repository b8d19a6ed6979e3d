//! `hostile`: a real Rust plugin that misbehaves on request, for the sandbox tests. Not an
//! example to copy. Each record's payload names what to do:
//!
//! | payload | what it does | what the host must do |
//! |---|---|---|
//! | `loop` | spins forever | stop it at the deadline |
//! | `alloc` | allocates 1 MiB blocks forever | stop it at the memory cap |
//! | `recurse` | recurses without end | stop it on stack overflow |
//! | `panic` | panics | contain the trap |
//! | `read-file PATH` | reads PATH | deny it (no preopened folders) |
//! | `connect ADDR` | opens a TCP connection to ADDR | deny it (no network) |
//! | `env` | reads the environment | show it nothing |
//! | `sleep SECS` | `std::thread::sleep` (a monotonic-clock pollable, blocked on) | end it at the deadline |
//! | `poll` | `wasi:io/poll.poll` on a clock pollable an hour away, again and again | end it at the deadline |
//! | `stdin` | reads standard input until it ends, then spins waiting for more | end it at the deadline |
//! | `exit N` | `wasi:cli/exit.exit-with-code(N)` | report `plugin called exit(N)` |
//! | anything else | one event `{"echo": payload}` | pass it through |
//!
//! A denied capability is reported as `malformed` with the error the plugin saw; anything that
//! got through is emitted as an event `{"leaked": ...}`, which the tests look for.

wit_bindgen::generate!({ world: "deserializer", path: "../../wit" });

use exports::sluice::plugin::raw_byte_handler::{Guest, Outcome, RawRecord};
use serde_json::json;

struct Hostile;

impl Guest for Hostile {
    fn deserialize_batch(batch: Vec<RawRecord>) -> Vec<Outcome> {
        batch
            .iter()
            .map(|record| act(&String::from_utf8_lossy(&record.payload)))
            .collect()
    }
}

export!(Hostile);

fn leaked(what: String) -> Outcome {
    Outcome::Events(vec![json!({ "leaked": what }).to_string()])
}

fn act(payload: &str) -> Outcome {
    let (verb, arg) = payload
        .trim()
        .split_once(' ')
        .unwrap_or((payload.trim(), ""));
    match verb {
        "loop" => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        "alloc" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        "recurse" => Outcome::Events(vec![format!("{{\"depth\":{}}}", recurse(0))]),
        "panic" => panic!("the hostile plugin panics on purpose"),
        "read-file" => match std::fs::read_to_string(arg) {
            Ok(text) => leaked(format!("{arg}: {text}")),
            Err(e) => Outcome::Malformed(format!("read-file {arg}: {e}")),
        },
        "connect" => match std::net::TcpStream::connect(arg) {
            Ok(_) => leaked(format!("connected to {arg}")),
            Err(e) => Outcome::Malformed(format!("connect {arg}: {e}")),
        },
        "env" => {
            let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
            if vars.is_empty() {
                Outcome::Malformed("env: no variables visible".to_owned())
            } else {
                leaked(vars.join(" "))
            }
        }
        "sleep" => {
            let secs = arg.parse().unwrap_or(30);
            std::thread::sleep(std::time::Duration::from_secs(secs));
            leaked(format!("slept {secs} s"))
        }
        "poll" => loop {
            let hour = wasip2::clocks::monotonic_clock::subscribe_duration(3_600_000_000_000);
            wasip2::io::poll::poll(&[&hour]);
        },
        "stdin" => {
            use std::io::Read as _;
            let mut stdin = std::io::stdin();
            let mut text = String::new();
            loop {
                match stdin.read_to_string(&mut text) {
                    Ok(_) if !text.is_empty() => return leaked(format!("stdin: {text}")),
                    // Closed or empty: keep asking, as a plugin waiting for input would.
                    _ => std::thread::yield_now(),
                }
            }
        }
        // Rust's `process::exit` on wasip2 still calls WASI 0.2.0's `exit(result)`, which
        // carries no code (every failure is 1); `exit-with-code` (WASI 0.2.12) carries it.
        "exit" => {
            wasip2::cli::exit::exit_with_code(arg.parse().unwrap_or(3));
            unreachable!("exit-with-code returned")
        }
        _ => Outcome::Events(vec![json!({ "echo": payload }).to_string()]),
    }
}

#[inline(never)]
#[allow(unconditional_recursion, reason = "it is meant to overflow the stack")]
fn recurse(depth: u64) -> u64 {
    let pad = std::hint::black_box([depth; 16]);
    recurse(depth + 1) + pad[3]
}
