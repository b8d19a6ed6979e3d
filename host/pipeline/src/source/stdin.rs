//! The `stdin` source: each line of standard input becomes the record `{"message": "<line>"}`
//! (Data Prepper's event), written as lines arrive, until the end of the input or a line
//! `exit`. It waits for room in the buffer (the input waits with it), and its end ends the run
//! (`SourceConfig::ENDS`).
//!
//! A thread of its own reads the input (blocking reads cannot be cancelled, and would hold up
//! the runtime's shutdown): it hands lines over a bounded channel.

use std::io::BufRead;

use sluice_buffer::Record;
use sluice_config::source::stdin::StdinSettings;
use tokio::sync::{mpsc, watch};

use super::{Build, Source, SourceContext, SourceError, write_waiting};

/// Lines written to the buffer per write, at most.
const LINES_PER_WRITE: usize = 100;

/// The `stdin` source, ready to read.
pub struct StdinLines {
    settings: StdinSettings,
    cx: SourceContext,
}

impl Build for StdinSettings {
    async fn build(self, cx: SourceContext) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(StdinLines { settings: self, cx }))
    }
}

#[async_trait::async_trait]
impl Source for StdinLines {
    async fn run(self: Box<Self>, mut stop: watch::Receiver<bool>) {
        let SourceContext {
            pipeline,
            writer,
            counters,
            ..
        } = self.cx;
        let (lines_tx, mut lines) = mpsc::channel(LINES_PER_WRITE);
        let spawned = std::thread::Builder::new()
            .name("stdin".to_owned())
            .spawn(move || read(std::io::stdin().lock(), &lines_tx));
        if let Err(e) = spawned {
            tracing::error!(pipeline = %pipeline, error = %e, "stdin source: cannot start its reader");
            return;
        }
        let mut read_lines = 0u64;
        loop {
            let first = tokio::select! {
                line = lines.recv() => line,
                _ = stop.wait_for(|s| *s) => break,
            };
            let Some(first) = first else { break };
            // What else has arrived, up to a write's worth: one write per burst of lines.
            let mut batch = vec![first];
            while batch.len() < LINES_PER_WRITE {
                match lines.try_recv() {
                    Ok(line) => batch.push(line),
                    Err(_) => break,
                }
            }
            let records = batch
                .into_iter()
                .map(|line| {
                    read_lines += 1;
                    record(line, read_lines)
                })
                .collect();
            let written =
                write_waiting(&*writer, records, &counters, self.settings.write_timeout).await;
            if written.is_err() {
                break;
            }
        }
        tracing::info!(pipeline = %pipeline, lines = read_lines, "stdin source finished");
    }
}

/// Reads `input` line by line into `lines` until its end, a line `exit` (any case, as Data
/// Prepper), an error, or the source is gone.
fn read(mut input: impl BufRead, lines: &mpsc::Sender<String>) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "stdin source: reading standard input failed; it ends here");
                return;
            }
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let text = String::from_utf8_lossy(text).into_owned();
        if text.eq_ignore_ascii_case("exit") || lines.blocking_send(text).is_err() {
            return;
        }
    }
}

/// The record of line `n`: the event Data Prepper makes of it.
fn record(line: String, n: u64) -> Record {
    Record {
        payload: serde_json::json!({ "message": line }).to_string().into_bytes(),
        received_at_ms: super::now_ms(),
        origin: format!("stdin:{n}"),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn lines_are_read_to_the_end_or_to_exit_whatever_its_case() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(10);
        read(&b"a\r\n\nb \nExIt\nnot read\n"[..], &tx);
        drop(tx);
        let mut got = Vec::new();
        while let Ok(line) = rx.try_recv() {
            got.push(line);
        }
        assert_eq!(got, ["a", "", "b "]);

        let (tx, mut rx) = tokio::sync::mpsc::channel(10);
        read(&b"last line without newline"[..], &tx);
        assert_eq!(rx.try_recv().unwrap(), "last line without newline");
    }
}
