//! `sluice-bench s3-source`: the `s3` source against aws-sdk-s3 reading the same objects.
//! Objects of text lines (half of them gzip) are put once into a real S3 store (SeaweedFS);
//! then, in turn,
//! 1. raw: aws-sdk-s3 `GetObject` streams, gunzipped, cut into lines, each written as the
//!    event sluice writes (`{"message": line, "s3": {"bucket", "key"}}`) to a file, one object
//!    after another (as one queue reader reads them);
//! 2. sluice: the objects announced on an SQS queue (moto), `s3` source (`newline`,
//!    `compression: automatic`, one worker) → the file sink, timed from the first
//!    notification until the file holds every line.
//!
//! Then one large object (`--large-mb`, 500 by default) through sluice alone, for its peak
//! resident memory (target under 200 MiB: the object is streamed, never held). Not a test:
//! compare figures only within one run.

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sluice_tests::sqs::{create_queue, object_created, send};
use sluice_tests::{S3Store, Sluice, unique};

use crate::measure;

#[derive(clap::Args, Clone)]
pub(crate) struct Args {
    /// Objects read by both sides (every other one gzip).
    #[arg(long, default_value_t = 20)]
    objects: usize,
    /// Lines per object.
    #[arg(long, default_value_t = 100_000)]
    lines: usize,
    /// Bytes per line.
    #[arg(long, default_value_t = 150)]
    line_bytes: usize,
    /// MiB of the large object read for peak memory (0: none).
    #[arg(long, default_value_t = 500)]
    large_mb: usize,
    /// Times each side runs (in turn); the best of each is reported.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Extra lines for sluice's pipeline (e.g. `workers: 2`), for experiments; the defaults
    /// are what is reported.
    #[arg(long, default_value = "")]
    pipeline_yaml: String,
}

const BUCKET: &str = "bench-s3-source";

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    let store = S3Store::start();
    let keys: Vec<String> = (0..args.objects)
        .map(|i| {
            if i % 2 == 0 {
                format!("logs/{i:04}.log")
            } else {
                format!("logs/{i:04}.log.gz")
            }
        })
        .collect();
    runtime.block_on(async {
        store.create_bucket(BUCKET).await;
        let client = store.client(sluice_tests::s3::S3_SECRET_KEY).await;
        for (i, key) in keys.iter().enumerate() {
            let mut text = lines(args, i, args.lines);
            if key.ends_with(".gz") {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(&text)?;
                text = e.finish()?;
            }
            client
                .put_object()
                .bucket(BUCKET)
                .key(key)
                .body(text.into())
                .send()
                .await
                .with_context(|| format!("putting {key}"))?;
        }
        anyhow::Ok(())
    })?;
    let total = args.objects * args.lines;
    let (mut raw, mut sluice) = (Duration::MAX, Duration::MAX);
    for _ in 0..args.rounds {
        raw = raw.min(runtime.block_on(raw_read(&store, &keys, total))?);
        sluice = sluice.min(sluice_read(&runtime, &store, &keys, total, args)?.0);
    }
    let rate = |took: Duration| total as f64 / took.as_secs_f64();
    println!(
        "s3 source: {} objects of {} lines of {} bytes (half gzip), one reader, best of {}",
        args.objects, args.lines, args.line_bytes, args.rounds
    );
    println!(
        "  raw aws-sdk-s3 to a file:       {:>9.0} lines/s",
        rate(raw)
    );
    println!(
        "  sluice s3 → newline → file:     {:>9.0} lines/s",
        rate(sluice)
    );
    println!(
        "  ratio sluice / raw: {:.2} (target ≥ 0.8)",
        raw.as_secs_f64() / sluice.as_secs_f64()
    );
    if args.large_mb > 0 {
        let lines_large = args.large_mb * (1 << 20) / (args.line_bytes + 1);
        runtime.block_on(put_large(&store, "large/one.log", args, lines_large))?;
        // The same text gzipped (its lines compress well: a small object that inflates to
        // the large one), made without holding the text.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let per = (8 << 20) / (args.line_bytes + 1);
        let mut made = 0;
        while made < lines_large {
            let n = per.min(lines_large - made);
            gz.write_all(&lines(args, 9999, n))?;
            made += n;
        }
        let gz = gz.finish()?;
        runtime.block_on(async {
            let client = store.client(sluice_tests::s3::S3_SECRET_KEY).await;
            client
                .put_object()
                .bucket(BUCKET)
                .key("large/one.log.gz")
                .body(gz.into())
                .send()
                .await
                .context("putting the gzip object")
        })?;
        for (key, what) in [("large/one.log", "plain"), ("large/one.log.gz", "gzip")] {
            let (took, peak) = sluice_read(&runtime, &store, &[key.to_owned()], lines_large, args)?;
            println!(
                "  one {} MiB object, {what} ({lines_large} lines): {:.1} s, {:.0} lines/s; sluice's peak RSS {:.0} MiB (target < 200)",
                args.large_mb,
                took.as_secs_f64(),
                lines_large as f64 / took.as_secs_f64(),
                peak as f64 / f64::from(1 << 20)
            );
        }
    }
    Ok(())
}

/// `n` lines of object `object`, `line_bytes` each with its newline.
fn lines(args: &Args, object: usize, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * (args.line_bytes + 1));
    for i in 0..n {
        let head = format!("{object:04}-{i:09} GET /index.html 200 ");
        out.extend_from_slice(head.as_bytes());
        out.extend(std::iter::repeat_n(
            b'x',
            args.line_bytes.saturating_sub(head.len()),
        ));
        out.push(b'\n');
    }
    out
}

/// Puts a large object in 8 MiB parts as they are made (the bench holds one part at a time).
async fn put_large(store: &S3Store, key: &str, args: &Args, n: usize) -> anyhow::Result<()> {
    let client = store.client(sluice_tests::s3::S3_SECRET_KEY).await;
    let upload = client
        .create_multipart_upload()
        .bucket(BUCKET)
        .key(key)
        .send()
        .await?;
    let id = upload.upload_id().context("an upload id")?.to_owned();
    let per_part = (8 << 20) / (args.line_bytes + 1);
    let mut parts = Vec::new();
    let mut made = 0;
    while made < n {
        let count = per_part.min(n - made);
        let body = lines(args, 9999, count);
        made += count;
        let number = parts.len() as i32 + 1;
        let part = client
            .upload_part()
            .bucket(BUCKET)
            .key(key)
            .upload_id(&id)
            .part_number(number)
            .body(body.into())
            .send()
            .await?;
        parts.push(
            aws_sdk_s3::types::CompletedPart::builder()
                .part_number(number)
                .set_e_tag(part.e_tag().map(str::to_owned))
                .build(),
        );
    }
    client
        .complete_multipart_upload()
        .bucket(BUCKET)
        .key(key)
        .upload_id(&id)
        .multipart_upload(
            aws_sdk_s3::types::CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await?;
    Ok(())
}

/// aws-sdk-s3 reading `keys` one after another into a file, as sluice's events.
async fn raw_read(store: &S3Store, keys: &[String], want: usize) -> anyhow::Result<Duration> {
    let client = store.client(sluice_tests::s3::S3_SECRET_KEY).await;
    let dir = tempfile::tempdir()?;
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.path().join("raw.jsonl"))?);
    let started = Instant::now();
    let mut written = 0;
    for key in keys {
        let mut body = client
            .get_object()
            .bucket(BUCKET)
            .key(key)
            .send()
            .await
            .with_context(|| format!("getting {key}"))?
            .body;
        let mut gunzip = key
            .ends_with(".gz")
            .then(|| flate2::write::MultiGzDecoder::new(Vec::new()));
        let mut partial = Vec::new();
        let mut emit =
            |text: &[u8], out: &mut std::io::BufWriter<std::fs::File>| -> anyhow::Result<()> {
                partial.extend_from_slice(text);
                let mut start = 0;
                for end in memchr::memchr_iter(b'\n', &partial) {
                    let line = String::from_utf8_lossy(&partial[start..end]);
                    serde_json::to_writer(
                        &mut *out,
                        &serde_json::json!({"message": line, "s3": {"bucket": BUCKET, "key": key}}),
                    )?;
                    out.write_all(b"\n")?;
                    written += 1;
                    start = end + 1;
                }
                partial.drain(..start);
                Ok(())
            };
        while let Some(chunk) = body.next().await {
            let chunk = chunk?;
            match gunzip.as_mut() {
                Some(d) => {
                    d.write_all(&chunk)?;
                    let text = std::mem::take(d.get_mut());
                    emit(&text, &mut out)?;
                }
                None => emit(&chunk, &mut out)?,
            }
        }
        if let Some(d) = gunzip.as_mut() {
            d.try_finish()?;
            let text = std::mem::take(d.get_mut());
            emit(&text, &mut out)?;
        }
    }
    out.flush()?;
    anyhow::ensure!(written == want, "raw read {written} of {want} lines");
    Ok(started.elapsed())
}

/// sluice reading `keys`, announced on a fresh queue, into its file sink: the time from the
/// first notification to the last line, and sluice's peak RSS.
fn sluice_read(
    runtime: &tokio::runtime::Runtime,
    store: &S3Store,
    keys: &[String],
    want: usize,
    args: &Args,
) -> anyhow::Result<(Duration, u64)> {
    let queue = runtime.block_on(create_queue(&unique("bench-s3")));
    let yaml = format!(
        r#"
bench-s3:
{extra}  source:
    s3:
      notification_type: sqs
      compression: automatic
      codec:
        newline:
      sqs:
        queue_url: "{queue}"
        wait_time: 1s
        visibility_timeout: 60s
        visibility_duplication_protection: true
      aws:
        region: us-east-1
        endpoint: {endpoint}
  sink:
    - file:
        path: "{{dir}}/events.jsonl"
"#,
        endpoint = store.endpoint(),
        extra = args
            .pipeline_yaml
            .lines()
            .map(|l| format!("  {l}\n"))
            .collect::<String>(),
    );
    let plugins = tempfile::tempdir()?;
    let cache = sluice_tests::plugin_cache().display().to_string();
    let plugin_dir = plugins.path().display().to_string();
    let env = store.env();
    let sluice = Sluice::start_without_listener_env_and_args(
        &yaml,
        &env,
        &["--plugins", &plugin_dir, "--plugin-cache", &cache],
    );
    let started = Instant::now();
    runtime.block_on(async {
        for key in keys {
            send(&queue, &object_created(BUCKET, key, args.line_bytes)).await;
        }
    });
    let timeout = Duration::from_secs(1800);
    measure::wait_for_lines(&sluice.path("events.jsonl"), want, timeout)?;
    let took = started.elapsed();
    let peak = measure::peak_rss(sluice.child.id());
    let mut sluice = sluice;
    anyhow::ensure!(sluice.terminate() == 0, "sluice failed:\n{}", sluice.log());
    Ok((took, peak))
}
