//! `sluice tap` and `sluice top` driven as a person would: in a terminal (tmux), read with
//! `capture-pane`, with the credentials wrong and right.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_tests::{Sluice, sluice_bin, unique};

const PIPELINE: &str = r#"
ops:
  delay: 20ms
  source:
    http:
      port: {port}
  processor:
    - add_entries:
        entries:
          - key: tapped
            value: yes
  sink:
    - file:
        path: "{dir}/out/events.jsonl"
"#;

/// A tmux session running one command line; killed when dropped.
struct Terminal(String);

impl Terminal {
    fn run(line: &str) -> Self {
        let name = unique("sluice-term");
        let status = Command::new("tmux")
            .args(["new-session", "-d", "-x", "200", "-y", "50", "-s", &name])
            // The screen stays after the command ends.
            .arg(format!("{line}; sleep 600"))
            .status()
            .expect("tmux is required (apt install tmux)");
        assert!(status.success());
        Self(name)
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.0])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits for `check` to hold on the screen, doing `meanwhile` between looks.
    fn wait(
        &self,
        what: &str,
        mut meanwhile: impl FnMut(),
        check: impl Fn(&str) -> bool,
    ) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no {what} on the screen:\n{screen}"
            );
            meanwhile();
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

fn command(dir: &Path, args: &str, password: &str) -> String {
    format!(
        "{} {args} --data-dir {} --username op --password {password}",
        sluice_bin().display(),
        dir.join("data").display()
    )
}

fn start() -> Sluice {
    Sluice::start_with(
        PIPELINE,
        &[
            "--admin",
            "--metrics-username",
            "op",
            "--metrics-password",
            "s3cret",
        ],
    )
}

#[test]
fn tap_prints_events_as_a_processor_left_them_and_only_with_the_right_credentials() {
    let s = start();
    let args = "tap ops --stage processor add_entries --limit 3";
    let wrong = Terminal::run(&command(s.dir.path(), args, "wrong"));
    wrong.wait(
        "refusal",
        || {},
        |screen| screen.contains("refused the credentials (401"),
    );

    let tap = Terminal::run(&command(s.dir.path(), args, "s3cret"));
    let mut n = 0;
    let screen = tap.wait(
        "3 tapped events",
        || {
            n += 1;
            let body = format!(r#"[{{"n": {n}}}]"#);
            assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
        },
        |screen| screen.matches("\"tapped\":\"yes\"").count() >= 3,
    );
    let lines: Vec<serde_json::Value> = screen
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert_eq!(lines.len(), 3, "--limit 3:\n{screen}");
    for l in &lines {
        assert_eq!(l["stage"], "processor");
        assert_eq!(l["name"], "add_entries");
        assert_eq!(l["event"]["tapped"], "yes");
        assert!(l["event"]["n"].as_u64().is_some());
    }
    let nowhere = Command::new(sluice_bin())
        .args(["tap", "ops", "--stage", "nowhere"])
        .arg("--data-dir")
        .arg(s.path("data"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&nowhere.stderr);
    assert!(
        said.contains("give `deserializer`, `processor NAME` or `sink NAME`"),
        "{said}"
    );
    // A processor or sink the pipeline does not have: answered at once (not a tap that waits
    // for ever), with the points there are.
    for (stage, name, what) in [
        (
            "processor",
            "no_such_processor",
            "processor `no_such_processor`",
        ),
        ("sink", "s3", "sink `s3`"),
    ] {
        let mut tap = Command::new(sluice_bin())
            .args(["tap", "ops", "--stage", stage, name, "--username", "op"])
            .args(["--password", "s3cret", "--data-dir"])
            .arg(s.path("data"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let exited = loop {
            if let Some(status) = tap.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = tap.kill();
                panic!("`tap --stage {stage} {name}` still waits after 60 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let out = tap.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!exited.success(), "{said}");
        let sink = format!("sink `file:{}`", s.path("out/events.jsonl").display());
        for expected in [
            what,
            "deserializer",
            "processor `add_entries`",
            sink.as_str(),
        ] {
            assert!(said.contains(expected), "{expected:?} not in: {said}");
        }
    }
}

#[test]
fn top_shows_each_stage_refreshed_and_only_with_the_right_credentials() {
    let s = start();
    let wrong = Terminal::run(&command(s.dir.path(), "top", "wrong"));
    wrong.wait(
        "refusal",
        || {},
        |screen| screen.contains("refused the credentials (401"),
    );

    let top = Terminal::run(&command(s.dir.path(), "top", "s3cret"));
    let mut n = 0;
    let screen = top.wait(
        "the pipeline's rows with events flowing",
        || {
            for _ in 0..20 {
                n += 1;
                let body = format!(r#"[{{"n": {n}}}]"#);
                assert_eq!(s.post("/log/ingest", body.as_bytes()), 200);
            }
        },
        |screen| {
            let row = |start: &str| {
                screen
                    .lines()
                    .find(|l| l.trim_start().starts_with(start))
                    .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            };
            // `ops IN/s OUT/s ...`, both above zero; the deserializer and the sink rows.
            row("ops ").is_some_and(|r| {
                r[1].parse::<f64>().is_ok_and(|v| v > 0.0)
                    && r[2].parse::<f64>().is_ok_and(|v| v > 0.0)
            }) && row("deserializer json").is_some()
                && row("sink file:").is_some_and(|r| r[2].parse::<f64>().is_ok_and(|v| v > 0.0))
        },
    );
    assert!(screen.contains("PIPELINE / STAGE"), "{screen}");
}
