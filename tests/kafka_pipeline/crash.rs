//! Crashes: kill -9 at random moments loses nothing accepted, a crash loop moves forward
//! (each start reads again only what was in flight at the kill), a restarted process resumes
//! within seconds (static membership), and a second process cannot take the same data dir.

#[allow(unused_imports, reason = "the parent's imports, taken whole")]
use super::*;

/// A client posting 5 events per request to the http source on `port` until stopped, at most
/// one request per `pace`; it keeps the ids of every event it heard 200 for (what is owed).
/// A request that fails (the process was killed, a 503) is not owed and is not retried.
struct Poster {
    acked: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Poster {
    fn start(port: u16, prefix: &'static str, pace: Duration) -> Self {
        let acked = Arc::new(Mutex::new(Vec::<String>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(10)))
                    .build()
                    .into();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    let (body, ids) = events(prefix, n, 5);
                    n += 5;
                    match agent
                        .post(&format!("http://127.0.0.1:{port}/log/ingest"))
                        .send(&body[..])
                    {
                        Ok(r) if r.status() == 200 => acked.lock().unwrap().extend(ids),
                        // Not accepted (503, or the process died mid-request): not owed.
                        _ => std::thread::sleep(Duration::from_millis(50)),
                    }
                    std::thread::sleep(pace.saturating_sub(started.elapsed()));
                }
            })
        };
        Self {
            acked,
            stop,
            thread,
        }
    }

    /// Stops posting; returns the ids of every accepted event.
    fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap();
        self.acked.lock().unwrap().clone()
    }
}

fn kill_9_at_random_moments_loses_no_accepted_event(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("crash"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 2);
    let mut s = Sluice::start(&pipeline(&setup));
    let poster = Poster::start(s.port, "crash", Duration::ZERO);
    // Pseudo-random moments, different each run.
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    let mut moments = Vec::new();
    for _ in 0..3 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let wait = Duration::from_millis(300 + (seed >> 33) % 2500);
        moments.push(wait);
        std::thread::sleep(wait);
        s.kill9();
        s.restart(&[]);
    }
    std::thread::sleep(Duration::from_millis(500));
    let acked = poster.stop();
    assert!(
        acked.len() >= 50,
        "only {} events accepted:\n{}",
        acked.len(),
        s.log()
    );

    let sink = vec![s.path("out/events.jsonl")];
    let (missing, duplicates) = wait_for_ids(&sink, &acked, Duration::from_secs(120));
    eprintln!(
        "kill -9 at {moments:?}: {} events accepted, {duplicates} duplicates, {} missing",
        acked.len(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "{} accepted events lost, e.g. {:?}:\n{}",
        missing.len(),
        &missing[..missing.len().min(5)],
        s.log()
    );
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// Static group membership: a process restarted right after kill -9 rejoins under the same
/// instance id and takes its partitions straight back, instead of waiting for the dead
/// process's session (45 s here, Kafka's default) to expire.
fn after_kill_9_a_restarted_process_resumes_consuming_within_seconds(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("static"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 2);
    let yaml = pipeline(&setup).replace("session_timeout: 6s", "session_timeout: 45s");
    assert!(yaml.contains("session_timeout: 45s"));
    let mut s = Sluice::start(&yaml);
    let sink = vec![s.path("out/events.jsonl")];
    let (body, before) = events("before", 0, 20);
    assert_eq!(s.post("/log/ingest", &body), 200);
    let (missing, _) = wait_for_ids(&sink, &before, Duration::from_secs(60));
    assert!(missing.is_empty(), "{}", s.log());
    // Past one commit interval (500ms), so the delivered offsets are committed.
    std::thread::sleep(Duration::from_millis(1500));

    s.kill9();
    let killed = Instant::now();
    s.restart(&[]);
    let ready = killed.elapsed();
    let restarted = Instant::now();
    let (body, after) = events("after", 0, 20);
    assert_eq!(s.post("/log/ingest", &body), 200);
    let (missing, duplicates) = wait_for_ids(&sink, &after, Duration::from_secs(90));
    let resumed = restarted.elapsed();
    eprintln!(
        "kill -9, restart: ready after {ready:?}, consuming again {resumed:?} after that \
         ({:?} after the kill), {duplicates} duplicates",
        killed.elapsed()
    );
    assert!(missing.is_empty(), "lost {missing:?}:\n{}", s.log());
    assert!(
        resumed < Duration::from_secs(5),
        "consumption resumed only {resumed:?} after the restart (session timeout 45s):\n{}",
        s.log()
    );
    // At most what was delivered in the last commit interval is read again: nothing here.
    assert_eq!(duplicates, 0, "{}", s.log());
    assert_eq!(s.terminate(), 0, "{}", s.log());
}

/// A second process on the same data dir would share its static group instance id (and its
/// dead-letter files): it refuses to start, naming the folder.
fn a_second_process_on_the_same_data_dir_refuses_to_start(via: Via) {
    let bootstrap = kafka_bootstrap();
    let (topic, group) = (unique("lock"), unique("g"));
    let setup = Setup::new(via, &bootstrap, &topic, &group, 1);
    let s = Sluice::start(&pipeline(&setup));
    let output = std::process::Command::new(sluice_tests::sluice_bin())
        .arg("run")
        .arg(s.path("pipelines.yaml"))
        .arg("--data-dir")
        .arg(s.path("data"))
        .arg("--metrics-addr")
        .arg(format!("127.0.0.1:{}", sluice_tests::free_port()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("is in use by another running sluice") && stderr.contains("--data-dir"),
        "{stderr}"
    );
}

both_buffers!(
    kill_9_at_random_moments_loses_no_accepted_event,
    after_kill_9_a_restarted_process_resumes_consuming_within_seconds,
    a_second_process_on_the_same_data_dir_refuses_to_start,
);

/// `dedup` in the path (its state in the host's memory, lost with the process): every event
/// the clients heard 200 for still arrives.
#[test]
fn kill_9_at_random_moments_with_dedup_in_the_path_loses_no_accepted_event() {
    kill_9_at_random_moments_loses_no_accepted_event(Via::Policy("dedup"));
}
